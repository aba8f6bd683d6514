"""Reading what a hit points to: file line ranges from disk, whole files with their
metadata, chunks with their neighbours; and an index from the previous version."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from rifflux import InvalidArgumentError, Rifflux, RiffluxError, SchemaVersionError, Settings
from rifflux.answers.budget import answer_text
from rifflux.mcp.answers import file_answer

from .helpers import CountingEmbedder, Location, indexed_then_downgraded, jobs_settled, write

pytestmark = pytest.mark.anyio

GUIDE = "---\ntitle: The Guide\ntags: [howto/setup]\n---\n# Guide\n\n" + "".join(
    f"## Step {i}\n\nDo thing number {i} carefully.\n\n" for i in range(1, 8))


@pytest.fixture
async def indexed(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    write(root, "guide.md", GUIDE)
    write(root, "sub/other.md", "# Other\n\nNothing to see.\n")
    return root


async def test_a_line_range_is_read_from_disk_and_clamped(db: Location, indexed: Path) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(indexed)
        hit = (await rf.search("thing number 3", mode="lexical", top_k=1))[0]
        lines = await rf.get_file(hit["path"], start_line=hit["line_start"],
                                  end_line=hit["line_end"])
        assert lines is not None and "text" in lines
        assert "Do thing number 3 carefully." in lines["text"]
        assert lines["total_lines"] == len(GUIDE.splitlines())
        past = await rf.get_file("guide.md", start_line=30, end_line=999)
        assert past is not None and "text" in past
        assert (past["start_line"], past["end_line"]) == (30, past["total_lines"])
        assert past["text"] == "\n".join(GUIDE.splitlines()[29:])
        top = await rf.get_file("guide.md", start_line=-4, end_line=2)  # line_start - 5
        assert top is not None and "text" in top
        assert (top["start_line"], top["end_line"]) == (1, 2)
        assert top["text"] == "\n".join(GUIDE.splitlines()[:2])
        one = await rf.get_file(str(indexed / "guide.md"), start_line=5, end_line=5)
        assert one is not None and "text" in one and one["text"] == "# Guide"
        with pytest.raises(InvalidArgumentError, match="past the end of guide.md"):
            await rf.get_file("guide.md", start_line=500)
        with pytest.raises(InvalidArgumentError, match="not a range"):
            await rf.get_file("guide.md", start_line=9, end_line=3)
        assert "changed_since_indexed" not in lines


async def test_lines_of_a_file_edited_since_it_was_indexed_say_so(
    db: Location, indexed: Path,
) -> None:
    # A hit's line numbers are those of the text indexed; with lines inserted above it
    # (no watcher, no reindex yet) they point at other text, and the answer says so.
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(indexed)
        hit = (await rf.search("thing number 3", mode="lexical", top_k=1))[0]
        write(indexed, "guide.md", "Three new lines\nat the top\nof the guide\n" + GUIDE)
        lines = await rf.get_file(hit["path"], start_line=hit["line_start"],
                                  end_line=hit["line_end"])
        assert lines is not None and "text" in lines
        assert "thing number 3" not in lines["text"] and lines["changed_since_indexed"]
        answer = file_answer(lines, 40_000)
        assert "changed since it was indexed" in answer["hint"] and "truncated" not in answer
        await rf.reindex(indexed)
        hit = (await rf.search("thing number 3", mode="lexical", top_k=1))[0]
        again = await rf.get_file(hit["path"], start_line=hit["line_start"],
                                  end_line=hit["line_end"])
        assert again is not None and "text" in again
        assert "thing number 3" in again["text"] and "changed_since_indexed" not in again


async def test_only_indexed_files_can_be_read_by_their_indexed_path(
    db: Location, tmp_path: Path, indexed: Path
) -> None:
    write(tmp_path, "secret.md", "# Secret\n\nnot indexed\n")
    write(indexed, "notes.csv", "not matched by the globs\n")
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(indexed)
        with pytest.raises(InvalidArgumentError, match="leaves its indexed folder"):
            await rf.get_file("../secret.md", start_line=1)
        with pytest.raises(InvalidArgumentError, match="leaves its indexed folder"):
            await rf.get_file("sub/../../secret.md")
        with pytest.raises(InvalidArgumentError, match="outside every indexed folder"):
            await rf.get_file(str(tmp_path / "secret.md"), start_line=1)
        assert await rf.get_file("notes.csv", start_line=1) is None  # not in the index
        assert await rf.get_file("missing.md") is None
        (indexed / "sub" / "other.md").unlink()  # gone from disk, still in the index
        with pytest.raises(RiffluxError, match="no longer on disk; reindex"):
            await rf.get_file("sub/other.md", start_line=1)


async def test_a_whole_file_comes_with_its_metadata(db: Location, indexed: Path) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(indexed)
        found = await rf.get_file("guide.md")
    assert found is not None and "chunks" in found
    # tags as search hits and filters give them: nested levels included
    assert (found["title"], found["tags"]) == ("The Guide", ["howto", "howto/setup"])
    assert found["frontmatter"] == {"title": "The Guide", "tags": ["howto/setup"]}
    assert found["total_lines"] == len(GUIDE.splitlines())
    assert [c["chunk_index"] for c in found["chunks"]] == list(range(len(found["chunks"])))


async def test_the_same_path_in_two_roots_names_the_root_used_and_the_others(
    db: Location, tmp_path: Path,
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, "readme.md", "# A\n\nfrom a\n")
    write(b, "readme.md", "# B\n\nfrom b\n")
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(paths=[a, b])
        first = await rf.get_file("readme.md", start_line=1)
        assert first is not None and first["root"] == str(a.resolve())
        assert first.get("other_roots") == [str(b.resolve())]
        chosen = await rf.get_file("readme.md", root="b", start_line=3)
        assert chosen is not None and "text" in chosen and chosen["text"] == "from b"
        assert "other_roots" not in chosen


async def test_a_chunk_knows_its_neighbours(db: Location, indexed: Path) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(indexed)
        found = await rf.get_file("guide.md")
        assert found is not None and "chunks" in found and len(found["chunks"]) >= 3
        ids = [c["chunk_id"] for c in found["chunks"]]
        first, middle, last = (await rf.get_chunk(ids[0]), await rf.get_chunk(ids[1]),
                               await rf.get_chunk(ids[-1]))
    assert first is not None and middle is not None and last is not None
    assert (first["prev_chunk_id"], first["next_chunk_id"]) == (None, ids[1])
    assert (middle["prev_chunk_id"], middle["next_chunk_id"]) == (ids[0], ids[2])
    assert last["next_chunk_id"] is None
    assert middle["title"] == "The Guide" and middle["line_start"] > first["line_end"]


async def test_an_index_of_the_previous_version_is_upgraded_in_place(
    tmp_path: Path, indexed: Path
) -> None:
    db = tmp_path / "i.db"
    # what version 2 wrote: no lines, no front matter
    embedder, embedded = await indexed_then_downgraded(db, indexed, 2)
    with pytest.raises(SchemaVersionError, match="open it once without read_only"):
        async with Rifflux(settings=Settings(db_path=db, read_only=True),
                           embedder=CountingEmbedder()):
            pass
    async with Rifflux(db, embedder=embedder) as rf:
        await jobs_settled(rf)  # the files are read again in the background
        hit = (await rf.search("thing number 4", mode="lexical", top_k=1))[0]
        found = await rf.get_file("guide.md")
    assert hit["line_start"] > 0 and found is not None and found["total_lines"] > 0
    assert len(embedder.embedded) == embedded  # the vectors were kept


async def read_page(rf: Rifflux, path: str, max_chars: int, *, start_line: int | None = None,
                    end_line: int | None = None) -> dict[str, Any]:
    """A page of ``path`` as the MCP get_file answer gives it, in ``max_chars``."""
    found = await rf.get_file(path, start_line=start_line, end_line=end_line)
    assert found is not None, path
    return file_answer(found, max_chars)


async def test_pages_of_a_file_with_long_lines_lose_no_text(db: Location, tmp_path: Path) -> None:
    # Paragraphs of one 2,500-character line each: the chunker splits each line over
    # chunks, so a page of chunks can end inside a line. Read as an agent does (the
    # first page, then line ranges from next_start_line), every word is found.
    words = [f"P{i}W{j}" for i in range(30) for j in range(250)]
    lines = [" ".join(words[i * 250 : (i + 1) * 250]) for i in range(30)]
    root = tmp_path / "docs"
    write(root, "long.md", "# Long\n\n" + "\n\n".join(lines) + "\n")
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        for budget in (3_000, 4_000, 5_000):  # (pages that end inside a line, or not)
            first = await read_page(rf, "long.md", budget)
            seen = " ".join(c["content"] for c in first["chunks"])
            assert first["truncated"] is True and seen.split()[-1] != words[-1]
            start = first["next_start_line"]
            while True:
                page = await read_page(rf, "long.md", budget, start_line=start)
                seen += " " + page["text"]
                if not page.get("truncated"):
                    break
                assert page["next_start_line"] > start
                assert f"start_line={page['next_start_line']}" in page["hint"]
                start = page["next_start_line"]
            assert set(words) <= set(seen.split()), budget
        # line 3, the first paragraph, is longer than the budget: cut with a marker, and
        # the hint says how to read it whole
        cut = await read_page(rf, "long.md", 1000, start_line=3)
        assert cut["text"].endswith(" chars]") and cut["next_start_line"] == 4
        assert f"line 3 has {len(lines[0])} characters" in cut["hint"]
        assert "start_line=4 to read on" in cut["hint"]
        alone = await read_page(rf, "long.md", 1000, start_line=3, end_line=3)
        assert "next_start_line" not in alone and "read on" not in alone["hint"]
        needed = re.search(r"end_line=3, max_chars=(\d+)", alone["hint"])
        assert needed is not None  # what the whole answer with that line takes
        whole = await read_page(rf, "long.md", int(needed[1]), start_line=3, end_line=3)
        assert whole["text"] == lines[0] and "truncated" not in whole
        assert len(answer_text(whole)) == int(needed[1])
        last = await read_page(rf, "long.md", 1000, start_line=61)
        assert last["total_lines"] == 61 and "next_start_line" not in last
        assert "read it whole" in last["hint"] and "read on" not in last["hint"]
        ranged = await read_page(rf, "long.md", 2100, start_line=1, end_line=9)
        assert ranged["next_start_line"] == 5 and "start_line=5, end_line=9" in ranged["hint"]


async def test_files_lists_every_indexed_file_with_its_chunks(
    tmp_path: Path, tagged_vault: Path
) -> None:
    elsewhere = write(tmp_path / "elsewhere", "far.md", "# Far\n\n" + "".join(
        f"## Part {i}\n\n" + "A long paragraph about otters. " * 30 + "\n\n"
        for i in range(3))).parent
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(paths=[tagged_vault, elsewhere])
        every = await rf.files()
        far = await rf.files("elsewhere")
        vault = await rf.files(tagged_vault)
        alpha = await rf.get_file("projects/alpha.md")
        far_file = await rf.get_file("far.md")
        with pytest.raises(InvalidArgumentError, match="'attic' is not an indexed folder"):
            await rf.files("attic")
    assert [(f["root"], f["path"]) for f in every] == [  # by folder, then path
        *[(str(tagged_vault), p) for p in ("journal/2026-11-01.md", "journal/2026-11-02.md",
                                           "projects/alpha.md", "projects/beta.md")],
        (str(elsewhere.resolve()), "far.md")]
    assert far_file is not None and len(far_file["chunks"]) > 1
    assert far == [{"path": "far.md", "root": str(elsewhere.resolve()), "title": "Far",
                    "modified": far_file["modified"], "chunks": len(far_file["chunks"]),
                    "kind": "markdown"}]
    assert vault == every[:4] and alpha is not None
    first = next(f for f in every if f["path"] == "projects/alpha.md")
    assert (first["chunks"], first["title"], first["modified"]) == (
        len(alpha["chunks"]), alpha["title"], alpha["modified"])
