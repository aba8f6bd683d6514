"""A phrase from page N of a PDF, searched lexically: is the top hit that file's page N?

The phrases are drawn, with the run's seed, from ``pdftotext``'s text, not from
Rifflux's: a page of a kept PDF at random, a line of it with four words or more, then 4
to 6 consecutive words of that line. A phrase counts when its words are Latin script
(CJK text is searched by its bigrams: another question), at least two of them have three
letters or more, and it occurs once in all the kept PDFs' text (as case-folded words): a
phrase that is also on another page has no one right answer. It is searched as a quoted
phrase (``"four to six words"``: ``core.fts_query`` keeps a well-formed quoted phrase a
phrase), ``mode="lexical"``, ``kinds=["pdf"]``, ``top_k=10``, on an index of the kept
PDFs (hash vectors: the lexical branch does not read them). A hit: the first result is
that file (its path in the indexed folder) with ``page == N``.
"""

from __future__ import annotations

import random
import shutil
import time
from dataclasses import asdict, dataclass
from typing import Any

from rifflux import Rifflux, Settings
from rifflux.core.cjk import OTHER_WORD

from ._context import Config
from ._formats_pdf import Reference

_QUOTES = "\"“”„«»"


@dataclass(frozen=True, slots=True)
class Phrase:
    path: str  # relative to the indexed folder
    page: int
    words: str

    @property
    def query(self) -> str:
        return f'"{self.words}"'


def _key(words: list[str]) -> str:
    """The phrase as its case-folded words, spaces around (to count whole words)."""
    return " " + " ".join(OTHER_WORD.findall(" ".join(words).casefold())) + " "


def _eligible(words: list[str]) -> bool:
    return (all(w.isascii() and any(c.isalnum() for c in w) for w in words)
            and sum(sum(c.isalpha() for c in w) >= 3 for w in words) >= 2)


def sample(refs: list[Reference], n: int, seed: int) -> list[Phrase]:
    """Up to ``n`` distinct phrases, each found once in all the references' text."""
    streams = [_key(page.split()) for ref in refs for page in ref.pages]
    pages = [(ref, number) for ref in refs for number, page in enumerate(ref.pages, start=1)
             if len(page.split()) >= 4]
    rng = random.Random(seed)
    out: list[Phrase] = []
    seen: set[str] = set()
    for _ in range(n * 200):
        if len(out) >= n or not pages:
            break
        ref, number = rng.choice(pages)
        lines = [line.split() for line in ref.pages[number - 1].splitlines()]
        lines = [line for line in lines if len(line) >= 4]
        if not lines:
            continue
        line = [w.strip(_QUOTES) for w in rng.choice(lines)]
        size = min(rng.randint(4, 6), len(line))
        start = rng.randrange(0, len(line) - size + 1)
        words = [w for w in line[start : start + size] if w]
        key = _key(words)
        if len(words) < 4 or not _eligible(words) or key in seen:
            continue
        if sum(stream.count(key) for stream in streams) != 1:
            continue
        seen.add(key)
        out.append(Phrase(ref.rel, number, " ".join(words)))
    return out


async def found_on_their_pages(cfg: Config, refs: list[Reference],
                               phrases: list[Phrase]) -> dict[str, Any]:
    """Index the kept PDFs, search each phrase: how many come first on their page."""
    folder = cfg.work / "formats" / "pdfs"
    for ref in refs:
        (folder / ref.rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ref.path, folder / ref.rel)
    settings = Settings(db_path=cfg.work / "formats" / "pdfs.db", embedding_backend="hash",
                        kinds=("pdf",), model_warmup=False)
    misses: list[dict[str, Any]] = []
    first = in_top10 = 0
    async with Rifflux(settings=settings) as rf:
        started = time.perf_counter()
        await rf.reindex(folder)
        index_s = time.perf_counter() - started
        status = await rf.status()
        for phrase in phrases:
            hits = await rf.search(phrase.query, mode="lexical", top_k=10, kinds=["pdf"])
            places = [(h["path"], h.get("page")) for h in hits]
            right = (phrase.path, phrase.page)
            first += bool(places) and places[0] == right
            in_top10 += right in places
            if not places or places[0] != right:
                misses.append({**asdict(phrase), "top": places[:3]})
    result: dict[str, Any] = {
        "files": status["files"], "chunks": status["chunks"], "index_s": round(index_s, 2),
        "phrases": len(phrases), "first": first, "in_top10": in_top10,
        "share_first": round(first / len(phrases), 4) if phrases else None,
        "misses": misses[:20], "examples": [p.query for p in phrases[:5]],
    }
    if status["files"] < len(refs):
        result["error"] = (f"the index holds {status['files']} of the {len(refs)} PDFs: "
                           "not measured")
    elif not phrases:
        result["error"] = "not measured: no phrase could be drawn from pdftotext's text"
    return result
