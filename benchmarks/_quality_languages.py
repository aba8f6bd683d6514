"""The quality section's multilingual set: one documentation project's pages in several
languages, and questions in each language whose own language's page is the one relevant
(issue 36: a question in one language should rank its own language's page first).

The pages: those of the Obsidian help vault (``--obsidian-help PATH``,
github.com/obsidianmd/obsidian-help) that it holds in each of ``LANGUAGES`` (a page is
known across languages by its front matter's ``permalink``), copied into one folder
(``LANG/path``) and indexed together. The questions, per page and language:

- ``sentences``: the page's first sentence of prose (at most 12 words, links and
  markup taken out): a reader's words for what the page is about;
- ``titles``: the page's title (its file name): short, so that its language often
  cannot be told (then nothing is preferred);
- ``links``: a sentence of another page that links to the page (``[[name]]``, resolved
  by file name in the same language), the link's text in it: words about the page that
  are not its own, as a question is (at most ``_LINKS`` per language, seeded). The page
  the sentence was taken from holds it word for word: it is the lexical branch's first
  hit for almost every one of them (339 of 360), never the relevant page, so that this
  set ranks a rule lower the better it keeps a clear lexical winner (issue 36's item 3
  asks for the opposite). ``links, own page left out`` scores the same rankings without
  that page (the question asked as a user asks it: where is this described, elsewhere).

The same rules as every collection (``_quality.rules``), the language preference among
them, are scored on both sets.
"""

from __future__ import annotations

import random
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from ._common import Incomplete
from ._context import State
from ._quality import Chunks, judged_sets, measure, spoken, stored_vectors

#: The vault's languages whose pages are measured (those it translates most pages into).
LANGUAGES = ("en", "de", "es", "it", "fr", "pt")
_PERMALINK = re.compile(r"^permalink:\s*(\S+)\s*$", re.MULTILINE)
_FRONT = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)
_WIKI = re.compile(r"!?\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MARKS = re.compile(r"[*_`~=]+|<[^>]+>")
_SENTENCE = re.compile(r"(?<=[.!?。])\s")
_WORDS = 12
_LINKS = 60


def pages(vault: Path) -> dict[str, dict[str, Path]]:
    """permalink -> {language: the page's path under the vault}, for the pages every
    language of ``LANGUAGES`` holds."""
    found: dict[str, dict[str, Path]] = {}
    for lang in LANGUAGES:
        for path in sorted((vault / lang).rglob("*.md")):
            link = _PERMALINK.search(path.read_text("utf-8", errors="replace")[:2000])
            if link is not None:
                found.setdefault(link.group(1), {})[lang] = path.relative_to(vault)
    return {link: by for link, by in sorted(found.items()) if len(by) == len(LANGUAGES)}


def first_sentence(text: str) -> str | None:
    """The first sentence of prose of a page (its first ``_WORDS`` words), or None."""
    body = _FRONT.sub("", text)
    for para in re.split(r"\n\s*\n", body):
        lines = [line for line in para.splitlines()
                 if line.strip() and not line.lstrip().startswith(("#", ">", "|", "```", "!"))]
        prose = " ".join(lines)
        prose = _WIKI.sub(lambda m: m.group(2) or m.group(1), prose)
        prose = _MARKS.sub("", _LINK.sub(r"\1", prose))
        prose = re.sub(r"^\s*(?:[-+]|\d+\.)\s+", "", prose)
        words = _SENTENCE.split(prose.strip(), maxsplit=1)[0].split()
        if len(words) >= 5:
            return " ".join(words[:_WORDS])
    return None


def _plain(prose: str) -> str:
    prose = _WIKI.sub(lambda m: m.group(2) or m.group(1), prose)
    return " ".join(_MARKS.sub("", _LINK.sub(r"\1", prose)).split())


def linking(vault: Path, found: dict[str, dict[str, Path]], seed: int,
            ) -> list[tuple[str, str, str]]:
    """(a sentence linking to a page, that page, the page the sentence is on), in every
    language: the sentences of the measured pages that link to another of them by name
    (``_LINKS`` per language)."""
    rng = random.Random(seed)
    out: list[tuple[str, str, str]] = []
    for lang in LANGUAGES:
        by_name = {by[lang].stem.lower(): by[lang] for by in found.values()}
        taken: list[tuple[str, str, str]] = []
        for by in found.values():
            body = _FRONT.sub("", (vault / by[lang]).read_text("utf-8", errors="replace"))
            for line in body.splitlines():
                if line.lstrip().startswith(("#", "|", "!", "```")):
                    continue
                for sentence in _SENTENCE.split(line):
                    for link in _WIKI.finditer(sentence):
                        target = by_name.get(link.group(1).strip().lower())
                        words = _plain(sentence.lstrip("-*> ")).split()
                        if (target is not None and target != by[lang] and 5 <= len(words)
                                and not link.group(0).startswith("!")):
                            taken.append((" ".join(words[:20]), target.as_posix(),
                                          by[lang].as_posix()))
        rng.shuffle(taken)
        out += list(dict.fromkeys(taken))[:_LINKS]
    return out


async def translated(state: State, vault: Path) -> dict[str, Any]:
    cfg = state.config
    found = pages(vault)
    if len(found) < 10:
        raise Incomplete(f"{vault} holds {len(found)} pages in every one of "
                         f"{', '.join(LANGUAGES)}: pass a copy of the Obsidian help vault")
    folder = (cfg.out if cfg.reuse_db else cfg.work) / "obsidian-help-translated"
    sets: dict[str, list[tuple[str, str]]] = {"sentences": [], "titles": []}
    for by in found.values():
        for rel in by.values():
            target = folder / rel
            if not target.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(vault / rel, target)
            note = rel.as_posix()
            sentence = first_sentence((vault / rel).read_text("utf-8", errors="replace"))
            if sentence is not None:
                sets["sentences"].append((sentence, note))
            sets["titles"].append((rel.stem, note))
    links = linking(vault, found, cfg.seed)
    sets["links"] = [(question, note) for question, note, _ in links]
    db = folder.with_suffix(".db")
    chunks = Chunks({}, {})
    judged, status = await judged_sets(folder, db, sets, chunks, quick=cfg.quick)
    judged["links, own page left out"] = [
        (replace(lists, left_out=frozenset({own})), relevant)
        for (lists, relevant), (_, _, own) in zip(judged["links"], links, strict=True)]
    vectors = stored_vectors(db)
    return {"pages": len(found), "languages": list(LANGUAGES), "chunks": status["chunks"],
            "model": status["embedding_model"],
            **spoken([q for qs in judged.values() for q in qs], chunks),
            "sets": {name: measure(q, chunks, vectors) for name, q in judged.items()}}
