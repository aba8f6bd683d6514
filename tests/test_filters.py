"""Filters through the library: applied inside both branches before top-k, each alone and
combined, with clear errors for what cannot be used."""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypedDict, Unpack

import pytest

from rifflux import InvalidArgumentError, Rifflux

from .helpers import CountingEmbedder, Location, fused, write_note

pytestmark = pytest.mark.anyio
MODES = ("lexical", "semantic", "hybrid")


async def test_a_filter_finds_a_small_folder_that_unfiltered_results_never_reach(
    db: Location, tmp_path: Path,
) -> None:
    root = tmp_path / "docs"
    for i in range(300):  # decoys: more about the query than the files we want
        write_note(root, f"decoys/d{i}.md", "garden compost garden compost garden compost " * 5
             + f"decoy number {i}.")
    for i in range(5):
        write_note(root, f"small/s{i}.md", f"A short remark on garden compost, item {i}.")
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        for mode in MODES:
            unfiltered = await rf.search("garden compost", top_k=5, mode=mode)
            assert not any(r["path"].startswith("small/") for r in unfiltered), mode
            hits = await rf.search("garden compost", top_k=5, mode=mode, paths=["small/**"])
            assert sorted(r["path"] for r in hits) == [f"small/s{i}.md" for i in range(5)], mode
        hybrid = await rf.search("garden compost", top_k=5, paths=["small/**"])
        # RRF of the two filtered lists: both ranks are known for every hit
        assert all(fused(r)["lexical_rank"] is not None
                   for r in hybrid)


class Filters(TypedDict, total=False):
    """The filters ``search_paths`` passes on (a misspelt one is a type error)."""

    paths: list[str]
    root: str
    tags: list[str]
    frontmatter: dict[str, str | float]
    modified_after: str
    modified_before: str


async def search_paths(rf: Rifflux, **filters: Unpack[Filters]) -> list[str]:
    """The files a search for otters finds under ``filters``. Every note of the vault
    mentions otters in its one chunk, so each mode must find the same files."""
    found: dict[str, list[str]] = {}
    for mode in MODES:
        hits = await rf.search("otters", top_k=10, mode=mode, **filters)
        found[mode] = sorted(r["path"] for r in hits)
    assert len({tuple(paths) for paths in found.values()}) == 1, found
    return found["hybrid"]


async def test_each_filter_alone_and_combined(
    db: Location, tmp_path: Path, tagged_vault: Path,
) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(tagged_vault)
        assert len(await search_paths(rf)) == 4
        assert await search_paths(rf, paths=["journal/**"]) == [
            "journal/2026-11-01.md", "journal/2026-11-02.md"]
        assert await search_paths(rf, paths=["**/alpha.md", "journal/2026-11-0*"]) == [
            "journal/2026-11-01.md", "journal/2026-11-02.md", "projects/alpha.md"]
        assert await search_paths(rf, tags=["project"]) == [
            "projects/alpha.md", "projects/beta.md"]
        assert await search_paths(rf, tags=["PROJECT", "active"]) == ["projects/alpha.md"]
        assert await search_paths(rf, tags=["idea"]) == ["projects/alpha.md"]  # inline
        assert await search_paths(rf, tags=["area"]) == [  # nested: a/b counts as a
            "journal/2026-11-01.md", "projects/alpha.md"]
        assert await search_paths(rf, tags=["area/river/north"]) == ["projects/alpha.md"]
        assert await search_paths(rf, frontmatter={"status": "draft"}) == ["projects/alpha.md"]
        assert await search_paths(rf, frontmatter={"owners": "bo"}) == ["projects/alpha.md"]
        assert await search_paths(rf, frontmatter={"draft": "true"}) == ["projects/beta.md"]
        assert await search_paths(rf, frontmatter={"priority": 2.0}) == ["projects/alpha.md"]
        assert await search_paths(rf, modified_after="7d") == [
            "journal/2026-11-02.md", "projects/alpha.md"]
        assert await search_paths(rf, modified_after="-7d") == [  # (7 days before now too)
            "journal/2026-11-02.md", "projects/alpha.md"]
        assert await search_paths(rf, modified_before="2w") == [
            "journal/2026-11-01.md", "projects/beta.md"]
        a_month_ago = (datetime.now() - timedelta(days=30)).date().isoformat()
        assert await search_paths(rf, modified_after=a_month_ago, modified_before="2d") == [
            "journal/2026-11-02.md"]
        assert await search_paths(rf, modified_after="1y") == [
            "journal/2026-11-02.md", "projects/alpha.md", "projects/beta.md"]
        assert await search_paths(rf, tags=["project"], modified_after="1w",
                                  paths=["projects/*"]) == ["projects/alpha.md"]
        assert await search_paths(rf, tags=["nosuchtag"]) == []
        in_vault = await search_paths(rf)
        elsewhere = tmp_path / "elsewhere"  # a second root: root has something to leave out
        write_note(elsewhere, "far.md", "Otters far from the vault.")
        await rf.reindex(elsewhere)
        assert await search_paths(rf) == sorted([*in_vault, "far.md"])
        assert await search_paths(rf, root="vault") == in_vault
        assert await search_paths(rf, root=str(tagged_vault)) == in_vault
        assert await search_paths(rf, root="elsewhere") == ["far.md"]


async def test_results_say_where_they_are_and_what_note_they_belong_to(
    db: Location, tagged_vault: Path
) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(tagged_vault)
        hit = (await rf.search("dams", mode="lexical", paths=["projects/alpha.md"]))[0]
    lines = (tagged_vault / "projects" / "alpha.md").read_text().splitlines()
    assert hit["root"] == str(tagged_vault) and hit["title"] == "alpha"
    assert hit["tags"] == ["active", "area", "area/river", "area/river/north", "idea",
                           "project"]
    assert "dams" in lines[hit["line_end"] - 1] and lines[hit["line_start"] - 1] == "# alpha"
    assert datetime.fromisoformat(hit["modified"]).timestamp() == pytest.approx(
        (tagged_vault / "projects" / "alpha.md").stat().st_mtime, abs=1)


async def test_roots_are_named_by_path_or_unique_name_and_errors_list_them(
    db: Location, tmp_path: Path,
) -> None:
    a, b = tmp_path / "one" / "notes", tmp_path / "two" / "notes"
    write_note(a, "x.md", "otters of one")
    write_note(b, "y.md", "otters of two")
    write_note(tmp_path / "three", "z.md", "otters of three")
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(paths=[a, b, tmp_path / "three"])
        assert [r["path"] for r in await rf.search("otters", root="three")] == ["z.md"]
        assert [r["path"] for r in await rf.search("otters", root=str(a))] == ["x.md"]
        with pytest.raises(InvalidArgumentError, match="names 2 indexed folders.*one/notes"):
            await rf.search("otters", root="notes")
        with pytest.raises(InvalidArgumentError, match="not an indexed folder.*three"):
            await rf.search("otters", root="elsewhere")


@pytest.mark.parametrize(("filters", "message"), [
    ({"modified_after": "last tuesday"}, "cannot read 'last tuesday' as a date"),
    ({"modified_before": "12q"}, "cannot read '12q'"),
    ({"modified_after": "99999y"}, "'99999y' reaches back before the year 1"),
    ({"modified_before": "0001-01-01"}, "'0001-01-01' is outside the dates"),
    ({"frontmatter": {"status": {"nested": 1}}}, "not a string, number or boolean"),
    ({"frontmatter": {"status": [None]}}, "not a string, number or boolean"),
    ({"tags": [3]}, "list of strings"),
    ({"paths": "docs/**"}, None),  # one glob as a string is fine
    ({"paths": ["docs/**", "notes/[a"]}, r"'notes/\[a' is not a glob \(an unclosed"),
    ({"paths": "#journal"}, "a comment in .gitignore syntax"),
    ({"paths": [r"notes/\[a", r"\#x"]}, None),  # escaped, they are names
    ({"paths": ["docs/**", "/"]}, "names no file"),
    ({"paths": []}, None),  # no globs: no filter
    ({"paths": [f"{Path(__file__).resolve().parent}/**"]}, r"is a place on disk.*'sub/\*\*'"),
    ({"paths": "~/notes/**"}, "is a place on disk"),
    ({"paths": "/docs/**"}, None),  # anchored at the root, as in .gitignore
    ({"frontmatter": {"status": ""}}, "frontmatter\\['status'\\]: '' is blank"),
    ({"frontmatter": {"status": ["draft", " "]}}, "' ' is blank"),
    ({"paths": ["docs/**", " "]}, "holds a blank value; leave paths out"),
    ({"tags": ""}, "holds a blank value; leave tags out"),
    ({"tags": ["project", ""]}, "holds a blank value"),
    ({"modified_after": "  "}, "modified_after is blank"),
])
async def test_malformed_filters_are_clear_errors(
    db: Location, filters: dict[str, Any], message: str | None
) -> None:
    # (Any: the point is to pass what the signature does not allow, as an untyped caller can)
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        if message is None:
            assert await rf.search("anything", **filters) == []
            return
        with pytest.raises(InvalidArgumentError, match=message):
            await rf.search("anything", **filters)


async def test_date_filters_follow_a_file_touched_without_a_change(
    db: Location, tagged_vault: Path,
) -> None:
    # Same bytes, new mtime (a `touch`, a checkout): nothing to reindex but the date.
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(tagged_vault)
        assert await search_paths(rf, modified_before="2w") == [
            "journal/2026-11-01.md", "projects/beta.md"]
        long_ago = time.time() - 800 * 86400
        os.utime(tagged_vault / "projects" / "alpha.md", (long_ago, long_ago))
        now = time.time()
        os.utime(tagged_vault / "journal" / "2026-11-01.md", (now, now))
        await rf.reindex(tagged_vault)
        assert await search_paths(rf, modified_before="2w") == [
            "projects/alpha.md", "projects/beta.md"]
        assert await search_paths(rf, modified_after="2y") == [
            "journal/2026-11-01.md", "journal/2026-11-02.md", "projects/beta.md"]
        hit = (await rf.search("otters", paths=["projects/alpha.md"]))[0]
        assert hit["modified"].startswith(
            datetime.fromtimestamp(long_ago).astimezone().strftime("%Y"))


async def test_filters_follow_edits_and_deletes(db: Location, tagged_vault: Path) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(tagged_vault)
        assert await search_paths(rf, tags=["project"]) == [
            "projects/alpha.md", "projects/beta.md"]
        write_note(tagged_vault, "projects/beta.md", "Otters, retagged.", tags="archive")
        (tagged_vault / "projects" / "alpha.md").unlink()
        await rf.reindex(tagged_vault)
        assert await search_paths(rf, tags=["project"]) == []
        assert await search_paths(rf, tags=["archive"]) == ["projects/beta.md"]
        assert {t["tag"]: t["files"] for t in await rf.list_tags()} == {
            "archive": 1, "area": 1, "area/river": 1}
