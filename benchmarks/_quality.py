"""Section ``quality``: nDCG@10 and recall@100 per mode and per ranking rule, on every
judged collection at hand, and how many places of a served top ten repeat a text on the
corpus (issue 36: rankings a user can trust); on Cranfield also a hypothesis's upper
bound and the rerank path's added latency (issue 35: ``_quality_models``).

The rules are computed here from what the two branches answer alone (``search`` in
lexical and in semantic mode, 200 deep, every copy: the contract's hybrid is a pure
function of them), so that today's rule and the ones measured against it run on the
same lists:

- ``rrf, 2 x top_k``: Reciprocal Rank Fusion (k=60) of each branch read 2 x top_k deep,
  every copy (the ranking before issue 36);
- ``rrf, pool``: the same, each branch read max(POOL, 2 x top_k) deep;
- ``rrf, pool, exact copies once``: then each text once (the same heading breadcrumb and
  text: its best-ranked chunk);
- ``rrf, pool, near copies once (cosine >= t)``: then also each chunk whose vector is
  that close to a chunk kept above it (the vectors read from the SQLite index file: the
  only figure that reads past the public API);
- ``fused, pool``: the score fusion (``core.fusion.combine``), every copy;
- ``fused, pool, exact copies once``: the default before the language preference;
- ``..., question's language preferred (x f)``: then, where the index holds chunks in
  the question's language (when it can be told: ``core.language.query_language``) and
  in others, each chunk in another language at ``f`` of its score (``core.fusion.prefer``;
  the chunks' languages as hits give them, the index's read from its SQLite file);
- ``..., question's language preferred (default)``: the default now, at
  ``core.fusion.OTHER_LANGUAGE``. The library's own hybrid answers are checked against it
  (``default_agrees``: the share of queries whose served top ten and top hundred are the
  same, in order).

Lexical and semantic are what those modes answer (each text once, as by default).
Results map to documents by file name (Cranfield: one file per document), each
document at its best chunk's rank; nDCG@10 on ``top_k=10`` (what a user is served),
recall@100 on ``top_k=100``.

Collections: Cranfield (``shared/eval/cranfield``); and, given ``--obsidian-help
PATH`` (a copy of the Obsidian help vault, github.com/obsidianmd/obsidian-help: its
en, ja and zh folders are indexed), 28 Chinese and Japanese questions typed as
sentences with the note that answers each, and known-item queries (a run of a random
chunk's text, the note it came from relevant; 60 per language, seeded); and the same
vault's pages translated into six languages (``_quality_languages``: the same pages in
English, German, Spanish, Italian, French and Portuguese, each question's own language's
page the one relevant). No other
public test collection can be had from a package registry on this machine (BEIR and
ir_datasets download their data at run time), so without the vault only Cranfield runs.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import sqlite3
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from rifflux import Rifflux
from rifflux.core.chunker import embed_text
from rifflux.core.fusion import OTHER_LANGUAGE, combine, prefer, rrf
from rifflux.core.language import preferred_language
from rifflux.query.ranking import POOL
from rifflux.types import SearchResult

from ._common import ENOUGH, Incomplete
from ._context import State
from ._corpus import chunk_texts
from ._cranfield import load_docs, load_qrels, load_queries, write_docs
from ._metrics import dedupe_docs, ndcg_at, recall_at
from ._quality_models import hypothesis_figures, rerank_figures

#: How deep the branches are read for the rules: as deep as a hybrid search of top_k 100
#: reads them (a single mode reads top_k deep).
_DEEP = 200
_NEAR = (0.98, 0.95)
#: The shares of its score a chunk in another language keeps, measured beside the default.
_OTHER = (0.75, 0.25)
#: The rule the library follows.
DEFAULT = "fused, pool, exact copies once, question's language preferred (default)"
#: (question, the note that answers it), in the Obsidian help vault's ja and zh folders.
QUESTIONS = json.loads((Path(__file__).parent / "quality_questions.json").read_text("utf-8"))

Ranked = list[tuple[str, float]]  # (chunk id, raw score) best first


@dataclass(frozen=True, slots=True)
class Lists:
    """What the branches answered for one query, and what each chunk is."""

    lexical: Ranked
    semantic: Ranked
    served: dict[int, list[str]]  # the library's hybrid chunk ids, by top_k
    modes: dict[str, dict[int, list[str]]]  # lexical and semantic as served, by top_k
    prefer: str | None = None  # the question's language, where the index mixes languages
    #: documents never counted (the page a question was taken from, word for word)
    left_out: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Chunks:
    doc: dict[str, str]  # chunk id -> document
    text: dict[str, str]  # chunk id -> text key (content_hash)
    lang: dict[str, str] = field(default_factory=dict)  # chunk id -> its language, if known


Rule = Callable[[Lists, int], list[str]]


def _key(hit: SearchResult) -> str:
    return hashlib.sha256(embed_text(hit["heading_path"], hit.get("content", ""))
                          .encode("utf-8")).hexdigest()


def languages(db: Path) -> frozenset[str]:
    """The languages of an index's chunks (read from its SQLite file)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return frozenset(str(r[0]) for r in conn.execute(
            "SELECT DISTINCT lang FROM chunks WHERE lang IS NOT NULL"))


def _preferred(query: str, langs: frozenset[str]) -> str | None:
    """The question's language where the library prefers it (``query.ranking``)."""
    return preferred_language(query, langs)


async def lists_of(rf: Rifflux, query: str, chunks: Chunks,
                   doc_of: Callable[[SearchResult], str], langs: frozenset[str]) -> Lists:
    lexical = await rf.search(query, top_k=_DEEP, mode="lexical", duplicates="all")
    semantic = await rf.search(query, top_k=_DEEP, mode="semantic", duplicates="all")
    served = {k: await rf.search(query, top_k=k) for k in (10, 100)}
    modes = {m: {k: await rf.search(query, top_k=k, mode=m) for k in (10, 100)}
             for m in ("lexical", "semantic")}
    for hit in [*lexical, *semantic, *served[10], *served[100]]:
        chunks.doc[hit["chunk_id"]] = doc_of(hit)
        chunks.text[hit["chunk_id"]] = _key(hit)
        if "lang" in hit:
            chunks.lang[hit["chunk_id"]] = hit["lang"]
    scores = [h["score_breakdown"] for h in lexical], [h["score_breakdown"] for h in semantic]
    return Lists(
        [(h["chunk_id"], float(s["bm25"])) for h, s in zip(lexical, scores[0], strict=True)
         if "bm25" in s],
        [(h["chunk_id"], float(s["cosine"])) for h, s in zip(semantic, scores[1], strict=True)
         if "cosine" in s],
        {k: [h["chunk_id"] for h in hits] for k, hits in served.items()},
        {m: {k: [h["chunk_id"] for h in hits] for k, hits in by.items()}
         for m, by in modes.items()}, _preferred(query, langs))


def _rrf(lists: Lists, depth: int) -> list[str]:
    return [f.key for f in rrf([[c for c, _ in lists.lexical[:depth]],
                                [c for c, _ in lists.semantic[:depth]]])]


def _fused(lists: Lists, depth: int) -> list[str]:
    return [c.key for c in combine(lists.lexical[:depth], lists.semantic[:depth], depth=depth)]


def _preferring(chunks: Chunks, factor: float, *, by_ranks: bool = False,
                ) -> Callable[[Lists, int], list[str]]:
    """The score fusion (``by_ranks``: Reciprocal Rank Fusion, its scores as the fused
    ones), then the question's language preferred (each chunk in another at ``factor`` of
    its score), as the library ranks a hybrid search."""
    def fused(lists: Lists, depth: int) -> list[str]:
        ranked = combine(lists.lexical[:depth], lists.semantic[:depth], depth=depth)
        if by_ranks:
            ranked = sorted((replace(c, score=c.rrf) for c in ranked),
                            key=lambda c: (-c.score, min(r for r in c.ranks if r is not None)))
        if lists.prefer is not None:
            ranked = prefer(ranked, chunks.lang, lists.prefer, factor=factor)
        return [c.key for c in ranked]
    return fused


def _exact(chunks: Chunks) -> Callable[[list[str]], list[str]]:
    def once(ranked: list[str]) -> list[str]:
        seen: set[str] = set()
        out = []
        for cid in ranked:
            if chunks.text[cid] not in seen:
                seen.add(chunks.text[cid])
                out.append(cid)
        return out
    return once


def _near(chunks: Chunks, vectors: dict[str, np.ndarray], at: float,
          ) -> Callable[[list[str]], list[str]]:
    exact = _exact(chunks)

    def once(ranked: list[str]) -> list[str]:
        kept: list[np.ndarray] = []
        out = []
        for cid in exact(ranked):
            v = vectors.get(chunks.text[cid])
            if v is not None and kept and max(float(v @ u) for u in kept) >= at:
                continue
            if v is not None:
                kept.append(v)
            out.append(cid)
        return out
    return once


def rules(chunks: Chunks, vectors: dict[str, np.ndarray] | None) -> dict[str, Rule]:
    """The hybrid rules measured, by name (``Lists``, top_k -> chunk ids best first)."""
    exact = _exact(chunks)

    def pool(k: int) -> int:
        return max(POOL, 2 * k)

    out: dict[str, Rule] = {
        "rrf, 2 x top_k (before)": lambda lists, k: _rrf(lists, 2 * k)[:k],
        "rrf, pool": lambda lists, k: _rrf(lists, pool(k))[:k],
        "rrf, pool, exact copies once": lambda lists, k: exact(_rrf(lists, pool(k)))[:k],
    }
    for at in _NEAR if vectors is not None else ():
        out[f"rrf, pool, near copies once (cosine >= {at})"] = _near_rule(
            _near(chunks, vectors or {}, at), pool)
    out["fused, pool"] = lambda lists, k: _fused(lists, pool(k))[:k]
    out["fused, pool, exact copies once"] = lambda lists, k: exact(_fused(lists, pool(k)))[:k]
    out["rrf, pool, exact copies once, question's language preferred"] = _copies_once(
        exact, _preferring(chunks, OTHER_LANGUAGE, by_ranks=True), pool)
    for factor in (*_OTHER, OTHER_LANGUAGE):
        name = (DEFAULT if factor == OTHER_LANGUAGE else
                f"fused, pool, exact copies once, question's language preferred (x {factor})")
        out[name] = _copies_once(exact, _preferring(chunks, factor), pool)
    return out


def _copies_once(exact: Callable[[list[str]], list[str]],
                 fused: Callable[[Lists, int], list[str]],
                 pool: Callable[[int], int]) -> Rule:
    def rank(lists: Lists, k: int) -> list[str]:
        return exact(fused(lists, pool(k)))[:k]
    return rank


def _near_rule(near: Callable[[list[str]], list[str]], pool: Callable[[int], int]) -> Rule:
    def rank(lists: Lists, k: int) -> list[str]:
        return near(_rrf(lists, pool(k)))[:k]
    return rank


def _served(mode: str) -> Rule:
    def rank(lists: Lists, k: int) -> list[str]:  # (served at top_k 10 and 100)
        return lists.modes[mode][min((n for n in (10, 100) if n >= k), default=100)][:k]
    return rank


def stored_vectors(db: Path) -> dict[str, np.ndarray]:
    """Every stored vector by text key, normalised (read from the SQLite index file)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT content_hash, vector FROM embeddings").fetchall()
    out = {}
    for key, blob in rows:
        v = np.frombuffer(blob, dtype=np.float32)
        out[str(key)] = v / max(float(np.linalg.norm(v)), 1e-12)
    return out


def _score(queries: Sequence[tuple[Lists, dict[str, int]]], chunks: Chunks,
           rank: Callable[[Lists, int], list[str]]) -> dict[str, float]:
    ndcg, recall = [], []
    for lists, judged in queries:
        more = 2 if lists.left_out else 1  # (read further: what is left out leaves room)
        ndcg.append(ndcg_at(_counted(lists, chunks, rank(lists, 10 * more))[:10], judged, 10))
        recall.append(recall_at(_counted(lists, chunks, rank(lists, 100 * more))[:100],
                                judged, 100))
    return {"ndcg@10": round(statistics.fmean(ndcg), 4),
            "recall@100": round(statistics.fmean(recall), 4), "queries": len(queries)}


def _counted(lists: Lists, chunks: Chunks, ranked: list[str]) -> list[str]:
    """The documents of ``ranked`` chunks, each once, without those left out."""
    return [d for d in dedupe_docs([chunks.doc[c] for c in ranked]) if d not in lists.left_out]


def spoken(queries: Sequence[tuple[Lists, Any]], chunks: Chunks) -> dict[str, Any]:
    """The languages of the chunks the searches met (by how many), and how many questions
    had their language preferred, by language."""
    return {"chunk_languages": dict(Counter(chunks.lang.values()).most_common()),
            "preferred": dict(Counter(lists.prefer for lists, _ in queries
                                      if lists.prefer is not None).most_common())}


def measure(queries: Sequence[tuple[Lists, dict[str, int]]], chunks: Chunks,
            vectors: dict[str, np.ndarray] | None) -> dict[str, Any]:
    """Each mode's and each rule's figures on one set of judged queries."""
    table: dict[str, dict[str, float]] = {
        mode: _score(queries, chunks, _served(mode)) for mode in ("lexical", "semantic")}
    default = rules(chunks, vectors)[DEFAULT]
    for name, rule in rules(chunks, vectors).items():
        table[f"hybrid: {name}"] = _score(queries, chunks, rule)
    agree = [all(default(lists, k) == lists.served[k] for k in (10, 100))
             for lists, _ in queries]
    return {"table": table, "default_agrees": round(statistics.fmean(agree), 4)}


async def _cranfield(state: State) -> dict[str, Any]:
    cfg = state.config
    if not (cfg.cranfield / "cran.all.1400.xml").is_file():
        raise Incomplete(f"the Cranfield collection is missing ({cfg.cranfield}): pass "
                         "--cranfield")
    docs = load_docs(cfg.cranfield)[: cfg.cranfield_docs]
    ids = {d[0] for d in docs}
    qrels = {q: {d: g for d, g in judged.items() if d in ids}
             for q, judged in load_qrels(cfg.cranfield).items()}
    queries = [(n, text) for n, text in enumerate(load_queries(cfg.cranfield), start=1)
               if any(g > 0 for g in qrels.get(n, {}).values())][: cfg.cranfield_queries]
    base = cfg.out / "cranfield" if cfg.reuse_db else cfg.work / "cranfield"
    folder, db = base / "docs", base / "index.db"  # (the cranfield section's, when it ran)
    if not folder.is_dir():
        write_docs(docs, folder)
    chunks = Chunks({}, {})
    judged: list[tuple[Lists, dict[str, int]]] = []
    async with Rifflux(db, embedding_backend="hash" if cfg.quick else "onnx") as rf:
        await rf.reindex(folder)
        status = await rf.status()
        if int(status["files"]) < ENOUGH * len(docs) or not queries:
            raise Incomplete(f"the Cranfield index holds {status['files']} of {len(docs)} "
                             "documents: its figures would measure work not done")
        langs = languages(db)
        for n, text in queries:
            lists = await lists_of(rf, text, chunks, lambda hit: Path(hit["path"]).stem, langs)
            judged.append((lists, qrels[n]))
        guessed = await hypothesis_figures(rf, queries, qrels,
                                           {docno: title for docno, title, _ in docs})
    reranked = await rerank_figures(db, queries, "hash" if cfg.quick else "onnx")
    return {"docs": len(docs), "chunks": status["chunks"], "model": status["embedding_model"],
            **spoken(judged, chunks), **measure(judged, chunks, stored_vectors(db)),
            "hypothesis": guessed, "rerank": reranked}


def _known_items(folder: Path, seed: int) -> list[tuple[str, str, str]]:
    """(query, note, language): a run of a random chunk's text, 60 per language."""
    rng = random.Random(seed)
    out = []
    for lang in ("ja", "zh", "en"):
        chunks = chunk_texts(folder / lang)
        rng.shuffle(chunks)
        taken = 0
        for chunk in chunks:
            body = "\n".join(line for line in chunk.content.splitlines()
                             if line and not line.startswith(("#", "!", "|", "-", ">", "`")))
            if lang == "en":
                words = re.findall(r"[A-Za-z]+", body)
                if len(words) < 8:
                    continue
                at = rng.randrange(0, len(words) - 6)
                query = " ".join(words[at:at + rng.randrange(3, 6)])
            else:
                runs = [s.strip() for s in re.split(r"[。！？\n]", body)
                        if 12 <= len(s.strip()) <= 60 and re.search(r"[\u3040-\u9fff]", s)]
                if not runs:
                    continue
                run = rng.choice(runs)
                at = rng.randrange(0, max(1, len(run) - 14))
                query = run[at:at + rng.randrange(8, 15)]
            out.append((query, f"{lang}/{chunk.path}", lang))
            taken += 1
            if taken == 60:
                break
    return out


async def _obsidian(state: State, vault: Path) -> dict[str, Any]:
    cfg = state.config
    folder = (cfg.out if cfg.reuse_db else cfg.work) / "obsidian-help"
    for lang in ("en", "ja", "zh"):
        if not (vault / lang).is_dir():
            raise Incomplete(f"{vault} has no {lang}/ folder: pass a copy of the Obsidian "
                             "help vault (github.com/obsidianmd/obsidian-help)")
        if not (folder / lang).is_dir():
            shutil.copytree(vault / lang, folder / lang,
                            ignore=lambda _, names: [n for n in names if not n.endswith(".md")
                                                     and "." in n])
    db = folder.with_suffix(".db")
    asked = [(q, note) for q, note in QUESTIONS if (folder / note).is_file()]
    if len(asked) < ENOUGH * len(QUESTIONS):  # (a copy that lost its non-ASCII names)
        raise Incomplete(f"{len(QUESTIONS) - len(asked)} of the {len(QUESTIONS)} notes the "
                         f"Chinese and Japanese questions answer are not in {vault}: pass a "
                         "whole copy of the Obsidian help vault (`git clone`, or `git "
                         "archive`: a copy made from quoted path names loses the CJK ones)")
    sets: dict[str, list[tuple[str, str]]] = {"questions (ja, zh)": asked}
    for query, note, lang in _known_items(folder, cfg.seed):
        sets.setdefault(f"known items ({lang})", []).append((query, note))
    chunks = Chunks({}, {})
    judged, status = await judged_sets(folder, db, sets, chunks, quick=cfg.quick)
    vectors = stored_vectors(db)
    return {"chunks": status["chunks"], "model": status["embedding_model"],
            **spoken([q for qs in judged.values() for q in qs], chunks),
            "sets": {name: measure(q, chunks, vectors) for name, q in judged.items()}}


async def _copies_served(state: State) -> dict[str, Any]:
    """On the corpus: how many places of a served top ten repeat a text already above."""
    db = await state.ensure_corpus_db()
    queries = state.queries.take(200)
    chunks = Chunks({}, {})
    listed = []
    langs = languages(db)
    async with Rifflux(db, embedding_backend=state.config.backend) as rf:
        for query in queries:
            listed.append(await lists_of(rf, query, chunks, lambda hit: hit["path"], langs))
    vectors = stored_vectors(db)
    out = {}
    for name, rule in rules(chunks, vectors).items():
        tops = [rule(lists, 10) for lists in listed]
        repeats = [len(top) - len({chunks.text[c] for c in top}) for top in tops]
        out[name] = {"repeated_places": sum(repeats),
                     "queries_with_repeats": sum(1 for r in repeats if r)}
    return {"queries": len(queries), "rules": out}


async def quality(state: State) -> dict[str, Any]:
    cfg = state.config
    collections: dict[str, Any] = {"cranfield": await _cranfield(state)}
    if cfg.obsidian_help is not None:
        collections["obsidian-help"] = await _obsidian(state, cfg.obsidian_help)
        from ._quality_languages import translated  # (it builds on this module)

        collections["obsidian-help, translated"] = await translated(state, cfg.obsidian_help)
    else:
        collections["obsidian-help"] = {"not_run": "pass --obsidian-help PATH (a copy of the "
                                                   "Obsidian help vault) to measure it"}
    return {"pool": POOL, "collections": collections, "corpus": await _copies_served(state)}


async def judged_sets(folder: Path, db: Path, sets: dict[str, list[tuple[str, str]]],
                      chunks: Chunks, *, quick: bool,
                      ) -> tuple[dict[str, list[tuple[Lists, dict[str, int]]]], Any]:
    """``folder`` indexed into ``db`` and each set's questions asked of it, each judged
    by the one note it should find; and the index's status."""
    judged: dict[str, list[tuple[Lists, dict[str, int]]]] = {}
    async with Rifflux(db, embedding_backend="hash" if quick else "onnx") as rf:
        await rf.reindex(folder)
        status = await rf.status()
        langs = languages(db)
        for name, queries in sets.items():
            judged[name] = [(await lists_of(rf, query, chunks, lambda hit: hit["path"], langs),
                             {note: 1}) for query, note in queries]
    return judged, status
