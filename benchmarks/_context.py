"""What every section gets: the run's settings and the state sections share."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rifflux import Rifflux

from ._common import Incomplete, expect_chunks
from ._corpus import ChunkText, chunk_texts
from ._queries import QueryPool


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    corpus: Path
    cranfield: Path
    backend: str  # for the awesome-copilot sections: "onnx" | "hash" | "auto"
    scale_backend: str
    out: Path
    work: Path  # a temporary folder, removed at the end of the run
    quick: bool
    reuse_db: bool
    seed: int = 1234
    section_timeout: float = 7200.0
    corpus_label: str = ""  # how the report names the corpus (the subset in --quick)
    latency_queries: int = 60  # per mode, per surface
    noop_repeats: int = 7
    edit_repeats: int = 5
    reference_sample: int = 512
    scale_sizes: tuple[int, ...] = (100_000,)  # the curve: chunks aimed for, smallest first
    scale_corpora: Path | None = None  # where grown corpora are kept and reused (else work)
    #: Serve the scale section from the indexes kept here (a run's ``--keep-work``
    #: folder) instead of indexing anew: no indexing figure is measured (``_scale``).
    scale_index: Path | None = None
    vectors_rows: int = 1_000_000  # the vectors section's synthetic index
    cranfield_docs: int | None = None  # None: all 1,400
    cranfield_queries: int | None = None  # None: all 225
    argv: tuple[str, ...] = ()  # the options the run was given, for the report
    postgres_url: str | None = None  # the postgres section's server (None: one started here)
    obsidian_help: Path | None = None  # the quality section's vault (None: Cranfield alone)
    # the formats section (``_formats``)
    pdf_dir: str | None = None  # real PDFs (None: fetched, ``_formats_inputs``)
    code_dir: str | None = None  # a repository's source (None: fetched)
    pdf_libs: str | None = None  # where pypdf and pdfplumber are installed (--target)
    formats_base: str | None = None  # the commit markdown is compared with (None: found)
    formats_pages: int = 1000  # pages of the PDF whose extraction's peak RSS is measured
    formats_phrases: int = 200
    formats_functions: int = 200
    formats_queries: int = 200  # lexical queries per markdown run
    formats_rounds: int = 3  # rounds of each PDF reader over the files
    markdown_rounds: int = 5  # runs of each checkout on the markdown, taking turns
    #: The history section waits at most this long for the commits' vectors.
    history_embed_seconds: float = 1800.0

    @property
    def scale_chunks(self) -> int:
        """The largest size of the scale curve: the postgres section's grown corpus."""
        return max(self.scale_sizes)


@dataclass(slots=True)
class State:
    """Built lazily and shared: the corpus chunks, the query pool, an indexed db."""

    config: Config
    _chunks: list[ChunkText] | None = None
    _pool: QueryPool | None = None
    corpus_db: Path | None = None
    #: the in-process latency section's timed queries per mode (ripgrep reuses them)
    timed_queries: dict[str, list[str]] | None = None
    #: results of the sections run so far, by section name
    results: dict[str, Any] = field(default_factory=dict)

    @property
    def chunks(self) -> list[ChunkText]:
        """The corpus's chunks as rifflux's chunker cuts them; a missing or empty corpus
        fails the section that needs it (``Incomplete``)."""
        if self._chunks is None:
            corpus = self.config.corpus
            if not corpus.is_dir():
                raise Incomplete(f"the corpus {corpus} is missing: pass --corpus, or put "
                                 "shared/corpora/awesome-copilot beside the repository")
            self._chunks = chunk_texts(corpus)
            if not self._chunks:
                raise Incomplete(f"the corpus {corpus} holds no markdown chunks")
        return self._chunks

    @property
    def queries(self) -> QueryPool:
        if self._pool is None:
            self._pool = QueryPool(self.chunks, seed=self.config.seed)
        return self._pool

    async def ensure_corpus_db(self) -> Path:
        """The corpus indexed and embedded (by the cold-index section, or now)."""
        if self.corpus_db is None:
            cfg = self.config
            # --reuse-db keeps it in OUT (per backend); reindexing an unchanged corpus is a no-op
            base = cfg.out / "corpus" if cfg.reuse_db and not cfg.quick else cfg.work / "corpus"
            # one file per corpus folder and backend, so that runs on other corpora never mix
            tag = hashlib.sha256(str(cfg.corpus.resolve()).encode()).hexdigest()[:12]
            db = base / f"index-{cfg.backend}-{tag}.db"
            aimed = len(self.chunks)  # (a missing corpus fails here)
            async with Rifflux(db, embedding_backend=cfg.backend) as rf:
                await rf.reindex(cfg.corpus)
                chunks = int((await rf.status())["chunks"])
            expect_chunks(chunks, aimed, f"the index of {cfg.corpus}")
            self.corpus_db = db
        return self.corpus_db
