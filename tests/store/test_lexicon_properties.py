"""The lexicon's ranking against the plain reference (FTS5's bm25 over every match,
equal scores by path) on generated corpora: common and rare words, phrases, prefixes,
CJK words and sentences, queries mixing CJK and other words, copies of files (equal
scores), filters, and files written, rewritten and deleted after the lexicon was built."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rifflux.core.catalog import Allowed
from rifflux.core.fts_query import build_every, build_match

from .lexicon_corpus import ALWAYS, VOCAB, Chunks, assert_same_ranking, open_index

# Zipf-like: a draw takes one of the first 3 words, one of the first 10, or any word,
# each about a quarter of the time, so the first words are in most chunks and the last
# in few; or a CJK word (the rest), so that chunks hold both scripts.
cjk = st.sampled_from([w for w in VOCAB if not w.isascii()])
word = st.one_of(st.sampled_from(VOCAB[:3]), st.sampled_from(VOCAB[:10]),
                 st.sampled_from(VOCAB), cjk)
text = st.lists(word, max_size=24).map(" ".join)
heading = st.lists(word, max_size=4).map(" > ".join)
a_file = st.lists(st.tuples(heading, text), min_size=1, max_size=6)
query_part = st.one_of(
    word,
    cjk,  # (a query with other words too ranks the chunks holding every word first)
    st.lists(cjk, min_size=2, max_size=3).map("".join),  # a CJK sentence: any bigram
    st.tuples(word, word).map(lambda p: f'"{p[0]} {p[1]}"'),  # a phrase
    word.map(lambda w: w[:3] + "*"),  # a prefix
)
query = st.lists(query_part, min_size=1, max_size=5).map(" ".join)


@dataclass(frozen=True)
class Edit:
    """A file written (new or again) or deleted; ``newest``: the file holding the
    highest chunk ids, whose ids SQLite hands out again once they are gone."""

    kind: str  # "write" or "delete"
    file: int | None  # None: the newest file
    chunks: Chunks = ()


a_target = st.one_of(st.none(), st.integers(0, 9))
edit = st.one_of(
    st.builds(Edit, kind=st.just("write"), file=a_target, chunks=a_file),
    st.builds(Edit, kind=st.just("delete"), file=a_target),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.lists(a_file, min_size=1, max_size=8), edits=st.lists(edit, max_size=6),
       build_again=st.booleans(), queries=st.lists(query, min_size=1, max_size=4),
       limit=st.integers(1, 30), filtered=st.lists(st.integers(0, 9), max_size=5),
       copies=st.lists(st.integers(0, 7), max_size=4), late_copies=st.booleans())
def test_the_lexicon_ranks_as_fts5_does_over_every_match(
    files: list[Chunks], edits: list[Edit], build_again: bool, queries: list[str],
    limit: int, filtered: list[int], copies: list[int], late_copies: bool,
) -> None:
    async def check(folder: Path) -> None:
        index = await open_index(folder)
        try:
            await index.write({f"f{i}.md": chunks for i, chunks in enumerate(files)})
            # copies score alike, and sort before their originals by path, not by row id
            copied = {f"c{i}.md": files[i % len(files)] for i in copies}
            if not late_copies:
                await index.write(copied)
            assert await index.build()
            if late_copies:  # ranked by FTS5 above the watermark, ties with the lexicon's
                await index.write(copied)
            for version, change in enumerate(edits, 1):
                name = index.newest() if change.file is None else f"f{change.file}.md"
                if name is not None and change.kind == "write":
                    await index.write({name: change.chunks}, version)
                elif name is not None:
                    await index.delete([name])
            if build_again:
                await index.build(ALWAYS)
            ids = index.file_ids()
            allowed = (Allowed.of(ids[f"f{i}.md"] for i in filtered if f"f{i}.md" in ids)
                       if filtered else None)
            for q in queries:
                match, every = build_match(q), build_every(q)
                if match is None:
                    continue
                for only in (None, allowed):
                    if only is not None and not only.ids:
                        continue
                    ranked, rows = await index.reader.lexical(match, limit, only, every)
                    assert_same_ranking(ranked, index.db, match, limit, only, every)
                    assert set(rows) == {cid for cid, _ in ranked}
        finally:
            await index.close()

    with tempfile.TemporaryDirectory(prefix="rifflux-lexicon-") as folder:
        anyio.run(check, Path(folder))
