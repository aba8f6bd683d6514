"""One ``Settings`` dataclass: defaults < environment < explicit arguments."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from .errors import InvalidArgumentError
from .kinds import DEFAULT_GLOBS, kind_globs
from .limits import RERANK_DEPTH
from .location import IndexLocation, index_location
from .model_servers import RERANK_APIS as RERANK_APIS
from .model_servers import RerankApi, check_model_servers, checked_embed_url

Backend = Literal["auto", "onnx", "hash"]
BACKENDS: tuple[Backend, ...] = ("auto", "onnx", "hash")

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
#: What a folder's notes are: markdown, plain text, PDF, PowerPoint and Word files
#: (``rifflux.kinds``); source code only when asked (``kinds``, ``--include``).
DEFAULT_INCLUDE: tuple[str, ...] = DEFAULT_GLOBS
#: Directory names skipped at any depth, plus editor/temporary files.
DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".cache",
    "site-packages",
    ".*.swp",
    "*~",
    ".#*",
)
#: Never indexed, whatever the globs say: deleted notes (``.rifflux-trash/`` inside a
#: writable folder) and the temporary files a note is written to before its rename.
TRASH_DIR = ".rifflux-trash"
TEMP_SUFFIX = ".rifflux-tmp"
NEVER_INDEXED: tuple[str, ...] = (TRASH_DIR, f"*{TEMP_SUFFIX}")


def default_db_path() -> Path:
    """``$RIFFLUX_DB_PATH`` aside, the index lives in the user's data directory.

    A fixed per-user location (not the working directory) works when an MCP
    client launches the server from an arbitrary folder.
    """
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "rifflux" / "index.db"


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    #: The index: an SQLite file, or a PostgreSQL database (``postgresql://...``).
    db_path: IndexLocation = field(default_factory=default_db_path)
    embedding_backend: Backend = "auto"
    #: A directory holding ``model.onnx``, ``tokenizer.json`` and optionally
    #: ``rifflux-model.json`` (how to run it); None = the bundled model.
    model_dir: Path | None = None
    #: An OpenAI-compatible embedding server (``http://localhost:11434/v1``: Ollama,
    #: llama.cpp's ``llama-server --embedding``, ...) that makes the vectors instead of
    #: the local model; None = the local model. The index's model is then the server's
    #: model name and dimension (``server:NAME:DIM``): another one re-embeds the index.
    embed_url: str | None = None
    #: The model the server is asked for (``"model"`` of each request); None: the one
    #: model its ``/v1/models`` lists.
    embed_model: str | None = None
    #: Put before every query / chunk sent to the server (models such as
    #: nomic-embed-text want ``"search_query: "`` / ``"search_document: "``, e5 models
    #: ``"query: "`` / ``"passage: "``); part of the index's model identity.
    embed_query_prefix: str = ""
    embed_document_prefix: str = ""
    #: Sent as ``Authorization: Bearer KEY`` (never shown in status or logs).
    embed_key: str | None = field(default=None, repr=False)
    #: Seconds a request to the server may take (a query's at most 5 of them).
    embed_timeout: float = 30.0
    #: Texts per request at first (fewer once the server says a request is too large) ...
    embed_server_batch: int = 64
    #: ... and requests in flight at once.
    embed_concurrency: int = 4
    #: The constant of each hybrid hit's Reciprocal Rank Fusion score (``rrf``, reported
    #: beside the fused score that orders the hits).
    rrf_k: int = 60
    #: Where the index mixes languages, the share of its hybrid score a chunk in another
    #: language than the question's keeps (``core.fusion.prefer``); 1 turns it off.
    other_language_share: float = 0.5  # (core.fusion.OTHER_LANGUAGE)
    include: tuple[str, ...] = DEFAULT_INCLUDE
    #: Kinds of file to index, by name (``markdown``, ``text``, ``pdf``, ``pptx``,
    #: ``docx``, ``code``, an installed extractor's; ``default``: the first five): their
    #: globs replace the default ``include`` (globs given as well are kept). Empty:
    #: ``include`` alone says.
    kinds: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    watch_paths: tuple[Path, ...] = ()
    #: Folders agents may write notes in (``write_note`` ...); each is indexed and watched.
    writable: tuple[Path, ...] = ()
    #: Obey .gitignore, .ignore and .riffluxignore files (on top of include/exclude).
    use_ignore_files: bool = True
    log_level: str = "WARNING"
    # chunking
    chunk_max_chars: int = 1000
    chunk_min_chars: int = 200
    code_max_chars: int = 3000
    #: Files larger than this are not read (skipped with a warning): 20 MiB.
    max_file_bytes: int = 20 * 1024 * 1024
    #: Reading one PDF, deck or Word file stops after this many seconds (what was read is
    #: indexed, and the file said to be cut) ...
    extract_seconds: float = 60.0
    #: ... and takes at most this many characters of text from it.
    max_text_chars: int = 8_000_000
    #: A working directory (a reindex given no path) not yet indexed with more candidate
    #: files than this is refused unless the reindex says so (force / --yes): nearly
    #: always a desktop client's cwd. A folder named explicitly is indexed whatever its size.
    max_root_files: int = 50_000
    #: Semantic pseudo-relevance feedback: move the query vector towards the mean of its
    #: best N chunks and rescore the first pass's best 200 (0 turns it off).
    semantic_feedback: int = 3
    semantic_feedback_weight: float = 1.0
    # reranking (opt-in: ``rerank``, or ``search(..., rerank=True)``), by a rerank server
    # (``rerank_url``) or an ONNX cross-encoder in a directory (``rerank_model``)
    #: Rerank every hybrid, lexical or semantic search's first ``rerank_depth`` hits.
    rerank: bool = False
    #: A rerank server's endpoint: ``http://127.0.0.1:8012/v1/rerank`` (llama.cpp's
    #: ``llama-server --reranking``, Jina, Cohere) or ``http://127.0.0.1:8080/rerank``
    #: (text-embeddings-inference); a URL without a path gets ``/v1/rerank``.
    rerank_url: str | None = None
    #: A directory holding an ONNX cross-encoder: ``model.onnx``, ``tokenizer.json`` and
    #: optionally ``rifflux-model.json`` (``name``, ``max_tokens``, ``input_names``,
    #: ``output_name``).
    rerank_model: Path | None = None
    #: The model name sent to the server (``"model"``: Jina and Cohere need one).
    rerank_name: str | None = None
    #: Sent as ``Authorization: Bearer KEY`` (a hosted API); None: no header.
    rerank_key: str | None = None
    rerank_api: RerankApi = "auto"
    rerank_depth: int = RERANK_DEPTH[1]
    #: A reranker that has not answered after this many seconds is given up on for that
    #: search: its hits keep their fused order (and the answer says why).
    rerank_timeout: float = 2.0
    # pipeline
    debounce_seconds: float = 0.05
    embed_batch_size: int = 32
    #: At most this many characters per batch, each text counted up to 1,024 (about the
    #: model's 256-token cut): the model's activations grow with batch x length, and
    #: long texts embed as fast 8 at a time as 32 at a time, at 0.5 GB less peak memory.
    embed_batch_chars: int = 8192
    busy_timeout_ms: int = 5000
    #: How often other processes' commits are looked for, in seconds (SQLite: its data
    #: version; PostgreSQL: a notification, or on a read replica, which hears none, the
    #: change log's last number, one index lookup a look).
    follow_seconds: float = 0.2
    retry_delays: tuple[float, ...] = (1.0, 2.0, 4.0)
    job_history: int = 100
    max_queued_jobs: int = 1000
    shutdown_grace_seconds: float = 3.0
    watcher_max_backoff: float = 30.0
    #: Open an existing index only to search it: no indexing, no embedding, and vectors
    #: of another model are left alone (searching someone else's index file).
    read_only: bool = False
    #: A process whose embedding model is not the one that made the index's vectors
    #: re-embeds the index with its own (those vectors dropped); False: it leaves them
    #: as they are and its semantic search is off, saying why (the one-shot reading
    #: commands: a search must never cost an index its vectors). A model used in place
    #: of the one asked for (``auto``'s fallback) never re-embeds an index either.
    switch_model: bool = True
    #: A read-only open of an index that can be read only as it is now (a WAL index closed
    #: cleanly in a folder this process cannot write: SQLite cannot make the ``-shm``
    #: file that following other processes' writes needs) reads it so, as a snapshot (the
    #: one-shot reading commands); False: refuses it, saying why (a long-lived process
    #: would never see the writes that come later).
    read_snapshot: bool = False
    #: MCP only: reindex the configured roots in the background on search (throttled).
    auto_reindex_on_search: bool = False
    auto_reindex_min_interval: float = 30.0
    #: Load the embedding model in the background as soon as the index opens (a
    #: long-lived process: the library, ``rifflux mcp``, ``rifflux serve``); False:
    #: only when a semantic or hybrid search or an embedding job first needs it (the
    #: one-shot commands). Lexical searches never wait for it either way.
    model_warmup: bool = True
    #: Index and search the git history of the repositories holding the indexed folders
    #: (``--no-history``, ``RIFFLUX_HISTORY=0`` turn it off).
    history: bool = True
    #: A commit's change is kept (and searched) up to this many characters: its files'
    #: hunk headers and the lines added and removed, each line cut at 240.
    history_diff_chars: int = 4_000
    #: Read what is new in the history unasked: at start and after every reindex (a
    #: long-lived process); False: only when asked (``wait_for_history``: a one-shot
    #: command, which would end before a large history's first read does).
    history_unasked: bool = True

    def __post_init__(self) -> None:
        # Accept str paths from callers building Settings directly.
        object.__setattr__(self, "db_path", index_location(self.db_path))
        if self.model_dir is not None:
            object.__setattr__(self, "model_dir", Path(self.model_dir).expanduser())
        if self.rerank_model is not None:
            object.__setattr__(self, "rerank_model", Path(self.rerank_model).expanduser())
        object.__setattr__(self, "watch_paths", tuple(Path(p) for p in self.watch_paths))
        object.__setattr__(self, "writable", tuple(Path(p) for p in self.writable))
        object.__setattr__(self, "include", tuple(self.include))
        if self.kinds:
            object.__setattr__(self, "kinds", tuple(self.kinds))
            extra = () if self.include == DEFAULT_INCLUDE else self.include
            object.__setattr__(self, "include",
                               tuple(dict.fromkeys((*kind_globs(self.kinds), *extra))))
        object.__setattr__(self, "exclude", tuple(self.exclude))
        if self.embedding_backend not in BACKENDS:
            raise InvalidArgumentError(
                f"embedding_backend must be one of {', '.join(BACKENDS)}, "
                f"not {self.embedding_backend!r}"
            )
        if self.embed_url is not None:
            object.__setattr__(self, "embed_url", checked_embed_url(self.embed_url))
        check_model_servers(self)
        if self.rrf_k < 1:
            raise InvalidArgumentError(f"rrf_k must be a positive integer, not {self.rrf_k}")
        if not 0 < self.other_language_share <= 1:
            raise InvalidArgumentError(
                f"other_language_share must be above 0 and at most 1 (1: no preference "
                f"for the question's language), not {self.other_language_share!r}")
        if self.log_level.upper() not in LOG_LEVELS:
            raise InvalidArgumentError(
                f"log_level must be one of {', '.join(LOG_LEVELS)}, not {self.log_level!r}")
        if not 0 < self.extract_seconds < math.inf:
            raise InvalidArgumentError(f"extract_seconds must be a number of seconds above 0, "
                                       f"not {self.extract_seconds!r}")
        if not 0.01 <= self.follow_seconds <= 60:
            raise InvalidArgumentError(f"follow_seconds must be from 0.01 to 60, not "
                                       f"{self.follow_seconds!r}")
        for name, least in (("max_file_bytes", 1), ("max_root_files", 1),
                            ("semantic_feedback", 0), ("max_text_chars", 1),
                            ("embed_server_batch", 1), ("embed_concurrency", 1),
                            ("history_diff_chars", 0)):
            if getattr(self, name) < least:
                raise InvalidArgumentError(f"{name} must be a whole number of at least {least}, "
                                           f"not {getattr(self, name)}")
        if not self.include:
            raise InvalidArgumentError(
                "include names no glob, so nothing would be indexed (and what is would be "
                f"removed): give at least one, e.g. {','.join(DEFAULT_INCLUDE)} (--include, "
                "RIFFLUX_INCLUDE)")
        if not 0 <= self.auto_reindex_min_interval < math.inf:
            raise InvalidArgumentError(
                "auto_reindex_min_interval must be a number of seconds of at least 0, not "
                f"{self.auto_reindex_min_interval} (--auto-reindex-interval)")
        if self.chunk_min_chars >= self.chunk_max_chars:
            raise InvalidArgumentError("chunk_min_chars must be smaller than chunk_max_chars")
        if self.code_max_chars < self.chunk_max_chars:
            raise InvalidArgumentError("code_max_chars must be at least chunk_max_chars")

    def with_overrides(self, **overrides: Any) -> Settings:
        """A copy where every override that is not None replaces the field."""
        given = {k: v for k, v in overrides.items() if v is not None}
        return replace(self, **_coerce(given))


_ENV_FIELDS: dict[str, str] = {
    "RIFFLUX_DB_PATH": "db_path",
    "RIFFLUX_EMBEDDING_BACKEND": "embedding_backend",
    "RIFFLUX_MODEL_DIR": "model_dir",
    "RIFFLUX_EMBED_URL": "embed_url",
    "RIFFLUX_EMBED_MODEL": "embed_model",
    "RIFFLUX_EMBED_KEY": "embed_key",
    "RIFFLUX_EMBED_QUERY_PREFIX": "embed_query_prefix",
    "RIFFLUX_EMBED_DOCUMENT_PREFIX": "embed_document_prefix",
    "RIFFLUX_EMBED_TIMEOUT": "embed_timeout",
    "RIFFLUX_EMBED_SERVER_BATCH": "embed_server_batch",
    "RIFFLUX_EMBED_CONCURRENCY": "embed_concurrency",
    "RIFFLUX_RRF_K": "rrf_k",
    "RIFFLUX_OTHER_LANGUAGE_SHARE": "other_language_share",
    "RIFFLUX_INCLUDE": "include",
    "RIFFLUX_KINDS": "kinds",
    "RIFFLUX_EXCLUDE": "exclude",
    "RIFFLUX_WATCH_PATHS": "watch_paths",
    "RIFFLUX_WRITABLE": "writable",
    "RIFFLUX_LOG_LEVEL": "log_level",
    "RIFFLUX_AUTO_REINDEX": "auto_reindex_on_search",
    "RIFFLUX_SEMANTIC_FEEDBACK": "semantic_feedback",
    "RIFFLUX_MAX_FILE_BYTES": "max_file_bytes",
    "RIFFLUX_USE_IGNORE_FILES": "use_ignore_files",
    "RIFFLUX_MAX_ROOT_FILES": "max_root_files",
    "RIFFLUX_FOLLOW_SECONDS": "follow_seconds",
    "RIFFLUX_EXTRACT_SECONDS": "extract_seconds",
    "RIFFLUX_MAX_TEXT_CHARS": "max_text_chars",
    "RIFFLUX_RERANK": "rerank",
    "RIFFLUX_RERANK_URL": "rerank_url",
    "RIFFLUX_RERANK_MODEL": "rerank_model",
    "RIFFLUX_RERANK_NAME": "rerank_name",
    "RIFFLUX_RERANK_KEY": "rerank_key",
    "RIFFLUX_RERANK_API": "rerank_api",
    "RIFFLUX_RERANK_DEPTH": "rerank_depth",
    "RIFFLUX_RERANK_TIMEOUT": "rerank_timeout",
    "RIFFLUX_HISTORY": "history",
    "RIFFLUX_HISTORY_DIFF_CHARS": "history_diff_chars",
}


def settings_from_env(environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Defaults, then ``RIFFLUX_*`` environment variables, then non-None ``overrides``."""
    env = os.environ if environ is None else environ
    from_env: dict[str, Any] = {}
    for var, name in _ENV_FIELDS.items():
        raw = env.get(var)
        if raw is None or raw.strip() == "":
            continue
        from_env[name] = raw
    # one step, so that a flag replaces a bad environment value before it is checked
    given = {k: v for k, v in overrides.items() if v is not None}
    return Settings().with_overrides(**{**from_env, **given})


_YES, _NO = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _flag(value: str) -> bool:
    word = value.strip().lower()
    if word in _YES or word in _NO:
        return word in _YES
    raise ValueError(f"say {'/'.join(_YES)} or {'/'.join(_NO)}")


def _split_list(value: str | Sequence[Any], sep: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(p.strip() for p in value.split(sep) if p.strip())
    return tuple(str(v) for v in value)


def _coerce(values: dict[str, Any]) -> dict[str, Any]:
    types = {f.name: f.type for f in fields(Settings)}
    out: dict[str, Any] = {}
    for name, value in values.items():
        if name not in types:
            raise InvalidArgumentError(f"unknown setting {name!r}")
        try:
            if name == "db_path":
                value = index_location(value)
            elif name in ("model_dir", "rerank_model"):
                value = Path(value).expanduser()
            elif name in ("watch_paths", "writable"):
                parts = _split_list(value, os.pathsep) if isinstance(value, str) else value
                value = tuple(Path(p).expanduser() for p in parts)
            elif name in ("include", "exclude", "kinds"):
                value = _split_list(value, ",")
            elif name == "retry_delays":
                value = tuple(float(v) for v in value)
            elif (name in ("auto_reindex_on_search", "use_ignore_files", "model_warmup",
                           "rerank", "history")
                  and isinstance(value, str)):
                value = _flag(value)
            elif name in ("rrf_k",) or (
                types[name] == "int" and isinstance(value, str)
            ):
                value = int(value)
            elif types[name] == "float" and isinstance(value, str):
                value = float(value)
            elif name in ("embedding_backend", "rerank_api"):
                value = str(value).strip().lower()
            elif name == "rerank_url":
                value = str(value).strip()
        except InvalidArgumentError as exc:  # (worded already; a URL's password kept out)
            raise InvalidArgumentError(f"setting {name}: {exc}") from exc
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"setting {name}: cannot use {value!r} ({exc})") from exc
        out[name] = value
    return out
