"""Links between notes through the library: every link form in a vault written here,
backlinks and neighbours, search near a note, and links that follow renames and deletes
through the real watcher without reading the linking notes again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from rifflux import InvalidArgumentError, Rifflux, Settings
from rifflux.core.fusion import combine
from rifflux.location import index_location
from rifflux.store.sqlite.schema import SCHEMA_VERSION

from .helpers import (
    HOME_LINKS,
    VAULT,
    CountingEmbedder,
    Location,
    bm25,
    cosine,
    eventually,
    indexed_then_downgraded,
    jobs_settled,
    watcher_started,
    watching,
    write,
    write_vault,
)

pytestmark = pytest.mark.anyio


async def outgoing(rf: Rifflux, path: str) -> list[tuple[str, str | None]]:
    return [(link["target"], link["path"]) for link in (await rf.links(path))["outgoing"]]


async def backlinks(rf: Rifflux, path: str) -> list[str]:
    return [link["path"] for link in (await rf.links(path))["backlinks"]]


async def neighbours(rf: Rifflux, path: str, depth: int = 1) -> dict[str, int]:
    return {n["path"]: n["distance"] for n in await rf.neighbors(path, depth=depth)}


async def test_every_link_form_resolves_as_obsidian_does(db: Location, linked_vault: Path) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(linked_vault)
        found = await rf.links("Home.md")
        assert (found["path"], found["root"]) == ("Home.md", str(linked_vault))
        out = found["outgoing"]
        assert [(o["target"], o["path"], o["line"]) for o in out] == HOME_LINKS
        by_target = {o["target"]: o for o in out}
        assert by_target["Beta"]["text"] == "the beta note"
        assert by_target["Delta"]["embed"] is True and by_target["Beta"]["embed"] is False
        assert by_target["notes/Delta%20Two.md#intro"]["kind"] == "markdown"
        assert by_target["notes/Delta%20Two.md#intro"]["anchor"] == "intro"
        assert by_target["Gamma#^key-point"]["anchor"] == "^key-point"
        assert by_target["Missing Note"]["context"] == "[[Missing Note]] is not written yet."
        assert [o["heading"] for o in out[:3]] == ["Home"] * 3
        assert {o["heading"] for o in out[3:]} == {"Home > Reading"}
        # headings and blocks resolve to the chunk they name
        for target, heading in (("Gamma#Setup", "Gamma > Setup"),
                                ("Gamma#^key-point", "Gamma > Notes"),
                                ("notes/Delta%20Two.md#intro", "Delta Two > Intro")):
            chunk = await rf.get_chunk(str(by_target[target]["target_chunk_id"]))
            assert chunk is not None and chunk["heading_path"] == heading, target
        source = await rf.get_chunk(str(by_target["Delta"]["chunk_id"]))
        assert source is not None and source["path"] == "Home.md"
        assert [(u["target"], u["line"]) for u in found["unresolved"]] == [("Missing Note", 12)]
        # the other way: who links here, and where
        home_back = (await rf.links("Home.md"))["backlinks"]
        assert [(b["path"], b["line"], b["kind"]) for b in home_back] == [
            ("Projects/Alpha.md", 3, "markdown"), ("b/deeper/Note.md", 3, "wikilink")]
        assert home_back[0]["target"] == "../Home.md" and home_back[0]["heading"] == "Alpha"
        assert await backlinks(rf, "Beta.md") == ["Home.md", "Home.md"]
        assert await backlinks(rf, "a/Note.md") == ["Home.md", "Projects/Alpha.md"]
        assert await backlinks(rf, "b/deeper/Note.md") == []
        status = await rf.status()
        assert (status["links"], status["unresolved_links"]) == (14, 1)


async def test_neighbours_are_nearest_first_either_way_without_the_note_itself(
    db: Location, linked_vault: Path
) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(linked_vault)
        near = await rf.neighbors("notes/far/Epsilon.md", depth=2)
        root = str(await anyio.Path(linked_vault).resolve())
        assert near == [{"path": "notes/Delta.md", "title": "Delta", "distance": 1, "root": root},
                        {"path": "Home.md", "title": "Home page", "distance": 2, "root": root}]
        assert await neighbours(rf, "notes/far/Epsilon.md", 3) == {
            "notes/Delta.md": 1, "Home.md": 2, "Projects/Alpha.md": 3, "Beta.md": 3,
            "notes/Gamma.md": 3, "My Space Note.md": 3, "notes/Delta Two.md": 3,
            "a/Note.md": 3, "b/deeper/Note.md": 3}
        home = await neighbours(rf, "Home.md")
        assert "Home.md" not in home and home["b/deeper/Note.md"] == 1  # it links to Home
        assert "notes/far/Epsilon.md" not in home
        assert (await neighbours(rf, "Home.md", 2))["notes/far/Epsilon.md"] == 2
        assert await rf.neighbors(str(linked_vault / "My Space Note.md")) == [
            {"path": "Home.md", "title": "Home page", "distance": 1, "root": root}]


async def test_bad_paths_and_depths_are_errors_that_say_what_to_give(
    db: Location, linked_vault: Path
) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(linked_vault)
        for call in (rf.links("Nope.md"), rf.neighbors("Nope.md")):
            with pytest.raises(InvalidArgumentError, match="not an indexed note.*search results"):
                await call
        with pytest.raises(InvalidArgumentError, match="leaves its indexed folder"):
            await rf.links("../outside.md")
        for depth in (0, -1, 11, 10**9):
            with pytest.raises(InvalidArgumentError, match="depth must be a whole number from 1"):
                await rf.neighbors("Home.md", depth=depth)
        with pytest.raises(InvalidArgumentError, match="depth goes with near"):
            await rf.search("garden", depth=2)
        with pytest.raises(InvalidArgumentError, match="not an indexed note"):
            await rf.search("garden", near="Nope.md")
        with pytest.raises(InvalidArgumentError, match="depth must be"):
            await rf.search("garden", near="Home.md", depth=0)
        assert (await rf.status())["files"] == len(VAULT)  # and the service goes on


async def test_search_near_a_note_filters_both_branches_before_ranking(
    db: Location, linked_vault: Path
) -> None:
    for i in range(40):  # decoys about the garden, linked to nothing
        write(linked_vault, f"decoys/d{i}.md", f"# Decoy {i}\n\n" + "garden path note " * 20)
    # (the question's language preferred would reorder the fused lists once the catalog
    # has loaded: this test compares hybrid with their fusion, so it asks for none)
    settings = Settings(db_path=index_location(db), other_language_share=1.0)
    async with Rifflux(settings=settings, embedder=CountingEmbedder()) as rf:
        await rf.reindex(linked_vault)
        unfiltered = await rf.search("garden path note", top_k=5, mode="lexical")
        assert all(r["path"].startswith("decoys/") for r in unfiltered)
        near = {"notes/far/Epsilon.md", "notes/Delta.md", "Home.md"}
        lists: dict[str, list[tuple[str, float]]] = {}
        for mode in ("lexical", "semantic", "hybrid"):
            hits = await rf.search("garden path note", top_k=5, mode=mode,
                                   near="notes/far/Epsilon.md", depth=2)
            assert hits and {h["path"] for h in hits} <= near, mode
            lists[mode] = [(h["chunk_id"], bm25(h) if mode == "lexical" else cosine(h)
                            if mode == "semantic" else 0.0) for h in await rf.search(
                "garden path note", top_k=100, mode=mode, near="notes/far/Epsilon.md",
                depth=2, duplicates="all")]
        fused = combine(lists["lexical"], lists["semantic"], depth=100)
        # the fusion of the filtered lists
        assert [c for c, _ in lists["hybrid"]][:5] == [f.key for f in fused][:5]
        one = await rf.search("garden", mode="lexical", near="notes/far/Epsilon.md")
        assert {h["path"] for h in one} <= {"notes/far/Epsilon.md", "notes/Delta.md"}
        counts = {h["path"]: h.get("backlink_count") for h in
                  await rf.search("note", top_k=50, mode="lexical", max_per_file=1)}
        assert counts["a/Note.md"] == 2 and counts["Home.md"] == 2
        assert counts["b/deeper/Note.md"] == 0
        described = rf.describe_search("x", near="Home.md", depth=2)["filters"]
        assert described == {"near": "Home.md", "depth": 2}


async def test_renames_and_deletes_re_resolve_links_without_reading_the_linking_notes(
    tmp_path: Path,
) -> None:
    vault = write_vault(tmp_path / "vault")
    async with watching(tmp_path, vault) as rf:
        await watcher_started(rf)
        assert ("Gamma#Setup", "notes/Gamma.md") in await outgoing(rf, "Home.md")

        # renamed: the link is kept as written, unresolved; nothing links to the new name
        (vault / "notes/Gamma.md").rename(vault / "notes/Gamma-old.md")

        async def gamma_unresolved() -> bool:
            return ("Gamma#Setup", None) in await outgoing(rf, "Home.md")

        await eventually(gamma_unresolved)
        assert ("Gamma#^key-point", None) in await outgoing(rf, "Home.md")
        assert await backlinks(rf, "notes/Gamma-old.md") == []
        assert "notes/Gamma.md" not in await neighbours(rf, "Home.md")
        # a note of that name appears again: the links resolve to it
        write(vault, "notes/Gamma.md", "# Gamma\n\n## Setup\n\nA new gamma.\n")

        async def gamma_back() -> bool:
            return ("Gamma#Setup", "notes/Gamma.md") in await outgoing(rf, "Home.md")

        await eventually(gamma_back)
        assert await backlinks(rf, "notes/Gamma.md") == ["Home.md", "Home.md"]

        # deleted: the embed is unresolved, the backlinks and neighbours follow
        (vault / "notes/Delta.md").unlink()

        async def delta_unresolved() -> bool:
            return ("Delta", None) in await outgoing(rf, "Home.md")

        await eventually(delta_unresolved)
        assert await neighbours(rf, "notes/far/Epsilon.md", 3) == {}
        # of two notes with one name, the other takes the links
        (vault / "a/Note.md").unlink()

        async def other_note() -> bool:
            return ("Note", "b/deeper/Note.md") in await outgoing(rf, "Home.md")

        await eventually(other_note)
        assert await outgoing(rf, "Projects/Alpha.md") == [("../Home.md", "Home.md"),
                                                           ("Note", "b/deeper/Note.md")]
        # an alias that goes away: only Beta.md is read again
        write(vault, "Beta.md", "# Beta\n\nNo aliases now.\n")

        async def alias_gone() -> bool:
            return ("The B", None) in await outgoing(rf, "Home.md")

        await eventually(alias_gone)
        jobs = (await rf.status())["jobs"]
        read = {rel for j in jobs if j["source"] == "watcher" and j["result"]
                for rel in j["result"].get("changed", {}).get("indexed", [])}
        assert read == {"notes/Gamma-old.md", "notes/Gamma.md", "Beta.md"}
        assert (await rf.status())["unresolved_links"] == 3  # Missing Note, Delta, The B


async def test_an_index_of_version_5_gets_its_links_when_opened(tmp_path: Path,
                                                                linked_vault: Path) -> None:
    db = tmp_path / "i.db"
    embedder, embedded = await indexed_then_downgraded(db, linked_vault, 5)
    async with Rifflux(db, embedder=embedder) as rf:
        await jobs_settled(rf)  # the files are read again in the background
        assert [t for t, _ in await outgoing(rf, "Home.md")] == [t for t, _, _ in HOME_LINKS]
        assert (await rf.status())["links"] == 14
    assert len(embedder.embedded) == embedded  # the vectors were kept
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() \
            == (str(SCHEMA_VERSION),)


async def test_a_folder_absorbed_into_its_parent_resolves_its_links_there(
    db: Location, linked_vault: Path
) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(linked_vault / "Projects")  # a root of its own: Home is outside it
        assert await outgoing(rf, "Alpha.md") == [("../Home.md", None), ("Note", None)]
        await rf.reindex(linked_vault)
        assert await outgoing(rf, "Projects/Alpha.md") == [("../Home.md", "Home.md"),
                                                           ("Note", "a/Note.md")]
        assert await backlinks(rf, "Home.md") == ["Projects/Alpha.md", "b/deeper/Note.md"]


SETTINGS = """# Settings

## Files and links

### Default location for new notes

Where new notes go.

### Deleted files

Moved to the system trash.

## Appearance

Themes and fonts.
"""

SIDEBAR = "# Sidebar\n\n## Open hidden sidebars\n\n### On desktop\n\nClick the icon.\n"


async def test_a_heading_with_subheadings_links_to_the_first_chunk_of_its_section(
    db: Location, tmp_path: Path,
) -> None:
    # "Files and links" has no text before its first subheading, so its first chunk is
    # labelled "Settings > Files and links > Default location for new notes"
    vault = write_vault(tmp_path / "vault", {
        "Settings.md": SETTINGS,
        "Home.md": "# Home\n\nSee [[Settings#Files and links]], [[Settings#Appearance]] "
                   "and [[Sidebar#Open hidden sidebars]].\n"})

    async def target_chunks(rf: Rifflux) -> dict[str, tuple[str, int, int] | None]:
        out: dict[str, tuple[str, int, int] | None] = {}
        for link in (await rf.links("Home.md"))["outgoing"]:
            chunk_id = link["target_chunk_id"]
            chunk = None if chunk_id is None else await rf.get_chunk(chunk_id)
            out[link["target"]] = None if chunk is None else (
                chunk["heading_path"], chunk["line_start"], chunk["line_end"])
        return out

    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(vault)
        found = await target_chunks(rf)
        files_and_links = found["Settings#Files and links"]
        assert files_and_links is not None
        heading, first, last = files_and_links
        assert heading == "Settings > Files and links > Default location for new notes"
        assert first <= 3 <= last  # the chunk holds the heading's own line
        assert found["Settings#Appearance"] == ("Settings > Appearance", 13, 15)
        assert found["Sidebar#Open hidden sidebars"] is None  # no such note yet
        # the target note appears later: its heading resolves the same way
        write(vault, "Sidebar.md", SIDEBAR)
        await rf.reindex(vault / "Sidebar.md")
        sidebar = (await target_chunks(rf))["Sidebar#Open hidden sidebars"]
        assert sidebar is not None and sidebar[0] == "Sidebar > Open hidden sidebars > On desktop"
        assert sidebar[1] <= 3 <= sidebar[2]


async def test_a_name_several_notes_share_resolves_to_the_nearest_and_stays_so(
    db: Location, tmp_path: Path,
) -> None:
    # a help vault with a folder per language: [[Canvas]] stays within its language,
    # at index time and as notes of that name appear, move and go
    vault = write_vault(tmp_path / "vault", {
        "en/Basics/Links.md": "# Links\n\nSee [[Canvas]].\n",
        "ja/リンク.md": "# リンク\n\n[[Canvas]]を参照。\n",
        "ja/プラグイン/Canvas.md": "# Canvas\n\nキャンバス。\n",
        "zh/插件/Canvas.md": "# Canvas\n\n白板。\n"})

    async def targets() -> dict[str, str | None]:
        return {src: (await outgoing(rf, src))[0][1] for src in ("en/Basics/Links.md",
                                                                  "ja/リンク.md")}

    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(vault)
        # no English Canvas yet: the shortest path of the others (zh), as before
        assert await targets() == {"en/Basics/Links.md": "zh/插件/Canvas.md",
                                   "ja/リンク.md": "ja/プラグイン/Canvas.md"}
        write(vault, "en/Plugins/Canvas.md", "# Canvas\n\nAn infinite board.\n")
        await rf.reindex(vault)
        assert await targets() == {"en/Basics/Links.md": "en/Plugins/Canvas.md",
                                   "ja/リンク.md": "ja/プラグイン/Canvas.md"}
        assert await backlinks(rf, "en/Plugins/Canvas.md") == ["en/Basics/Links.md"]
        # renamed within English: still the nearest
        (vault / "en/Plugins").rename(vault / "en/Core plugins")
        await rf.reindex(vault)
        assert await targets() == {"en/Basics/Links.md": "en/Core plugins/Canvas.md",
                                   "ja/リンク.md": "ja/プラグイン/Canvas.md"}
        # the Japanese one deleted: the Japanese link takes the nearest that is left
        (vault / "ja/プラグイン/Canvas.md").unlink()
        await rf.reindex(vault)
        assert await targets() == {"en/Basics/Links.md": "en/Core plugins/Canvas.md",
                                   "ja/リンク.md": "zh/插件/Canvas.md"}


BLOCKS = """# Target

## Early

An early point. ^key-point

## Middle

A word on ^keys in passing.

## Late

The key itself. ^key
"""


async def test_a_block_anchor_names_the_chunk_with_that_block_not_one_it_begins(
    db: Location, tmp_path: Path,
) -> None:
    vault = write_vault(tmp_path / "vault", {
        "Target.md": BLOCKS,
        "Home.md": "# Home\n\n[[Target#^key]], [[Target#^key-point]] and [[Target#^nope]].\n"})
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(vault)
        found: dict[str, str | None] = {}
        for link in (await rf.links("Home.md"))["outgoing"]:
            assert link["path"] == "Target.md", link["target"]
            chunk_id = link["target_chunk_id"]
            chunk = None if chunk_id is None else await rf.get_chunk(chunk_id)
            found[link["target"]] = None if chunk is None else chunk["heading_path"]
    assert found == {"Target#^key": "Target > Late", "Target#^key-point": "Target > Early",
                     "Target#^nope": None}


async def test_backlinks_and_the_files_are_listed_in_code_point_order_on_either_store(
    db: Location, tmp_path: Path,
) -> None:
    # byte (code point) order, as SQLite orders text: not a locale's, where "apple"
    # would come before "Target" and "éclair" before "Zebra" (a PostgreSQL database's
    # default collation may be a locale's; the test server's is C)
    sources = ["Zebra.md", "_under.md", "apple.md", "éclair.md"]
    vault = write_vault(tmp_path / "vault", {"Target.md": "# Target\n\nThe target.\n",
                                             **{s: "# Source\n\nSee [[Target]].\n"
                                                for s in reversed(sources)}})
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(vault)
        assert await backlinks(rf, "Target.md") == sources
        assert [f["path"] for f in await rf.files()] == ["Target.md", *sources]
