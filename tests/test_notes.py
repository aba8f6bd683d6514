"""Agents keep notes through the library (issue 26): every operation, its safety (paths,
conflicts, the trash) and its promise: found the moment the call returns."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from rifflux import (
    InvalidArgumentError,
    NoteConflictError,
    NotWritableError,
    Rifflux,
    RiffluxError,
)
from rifflux.core.note_text import sha256
from rifflux.types import JobInfo

from .helpers import (
    CountingEmbedder,
    GatedEmbedder,
    Location,
    eventually,
    numbered_notes,
    watcher_started,
    write,
)


def notes_rf(tmp_path: Path, *, embedder: CountingEmbedder | None = None,
             watch_writable: bool = False) -> Rifflux:
    """An instance writing in ``tmp_path/notes`` (not watched, unless asked)."""
    return Rifflux(tmp_path / "i.db", embedder=embedder or CountingEmbedder(),
                   writable=[tmp_path / "notes"], watch_writable=watch_writable)


async def lexical(rf: Rifflux, query: str) -> list[str]:
    return [h["path"] for h in await rf.search(query, mode="lexical")]


@pytest.mark.anyio
async def test_a_written_note_is_found_when_the_call_returns_with_its_sha_and_lines(
    tmp_path: Path,
) -> None:
    async with notes_rf(tmp_path) as rf:
        done = await rf.write_note("decisions/db.md", "# DB\n\nWe chose the axolotl store.\n",
                                   title="Database", tags=["adr", "#db"])
        assert await lexical(rf, "axolotl") == ["decisions/db.md"]  # no waiting
        data = (tmp_path / "notes" / "decisions" / "db.md").read_bytes()
        assert data == b"---\ntitle: Database\ntags: [adr, db]\n---\n# DB\n\nWe chose the " \
                       b"axolotl store.\n"
        assert (done["sha256"], done["previous_sha256"], done["lines"]) == (
            sha256(data), None, [[1, 7]])
        assert done["folder"] == str((tmp_path / "notes").resolve())
        hit = (await rf.search("axolotl", mode="lexical"))[0]
        assert (hit["title"], hit["tags"]) == ("Database", ["adr", "db"])
        await rf.wait_for_job(done["job_id"])  # then semantically too
        assert (await rf.search("axolotl store", mode="semantic"))[0]["path"] == \
            "decisions/db.md"


@pytest.mark.anyio
async def test_a_note_whose_text_does_not_end_its_last_line_is_written_with_it_ended(
    tmp_path: Path,
) -> None:
    async with notes_rf(tmp_path) as rf:
        plain = await rf.write_note("a.md", "# A\n\nno final newline")
        crlf = await rf.write_note("b.md", "# B\r\n\r\nno final line break")
        empty = await rf.write_note("c.md", "")
    notes = tmp_path / "notes"
    assert (notes / "a.md").read_bytes() == b"# A\n\nno final newline\n"
    assert (notes / "b.md").read_bytes() == b"# B\r\n\r\nno final line break\r\n"
    assert (notes / "c.md").read_bytes() == b""
    assert plain["sha256"] == sha256((notes / "a.md").read_bytes())  # (of what was written)
    assert (plain["lines"], crlf["lines"], empty["lines"]) == ([[1, 3]], [[1, 3]], [])


@pytest.mark.anyio
async def test_a_note_named_by_its_absolute_path_inside_the_writable_folder_is_that_note(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes"
    async with notes_rf(tmp_path) as rf:
        await rf.write_note(str(notes / "ideas" / "kiwi.md"), "# Kiwi\n\nA kiwi note.\n")
        assert (notes / "ideas" / "kiwi.md").is_file()
        edited = await rf.edit_note(notes / "ideas" / "kiwi.md", append="Brown outside.")
        assert edited["path"] == "ideas/kiwi.md"
        moved = await rf.move_note(str(notes / "ideas" / "kiwi.md"), "fruit/kiwi.md")
        assert (moved["moved_from"], moved["path"]) == ("ideas/kiwi.md", "fruit/kiwi.md")
        assert await lexical(rf, "brown outside") == ["fruit/kiwi.md"]
        await rf.delete_note(str(notes / "fruit" / "kiwi.md"))
        assert not (notes / "fruit" / "kiwi.md").exists()
        with pytest.raises(NotWritableError, match="is absolute: give the note's path"):
            await rf.write_note(str(tmp_path / "elsewhere.md"), "outside every folder")


@pytest.mark.anyio
async def test_the_answer_says_whether_the_vectors_are_stored_yet(tmp_path: Path) -> None:
    embedder = GatedEmbedder()
    async with notes_rf(tmp_path, embedder=embedder) as rf:
        first = await rf.write_note("a.md", "The quokka smiles.\n")
        assert first["vector_stored"] is False  # the model waits at the gate
        embedder.gate.set()
        await rf.wait_for_job(first["job_id"])
        again = await rf.write_note("b.md", "The quokka smiles.\n")  # the same text
        assert again["vector_stored"] is True


@pytest.mark.anyio
async def test_an_existing_note_is_replaced_only_with_overwrite_or_its_sha(
    tmp_path: Path,
) -> None:
    async with notes_rf(tmp_path) as rf:
        first = await rf.write_note("n.md", "one\n")
        with pytest.raises(NoteConflictError, match="already exists") as refused:
            await rf.write_note("n.md", "two\n")
        assert refused.value.current_sha256 == first["sha256"]
        assert (tmp_path / "notes" / "n.md").read_text() == "one\n"
        second = await rf.write_note("n.md", "two\n", if_match=first["sha256"])
        assert second["previous_sha256"] == first["sha256"]
        await rf.write_note("n.md", "three ocelot\n", overwrite=True)
        assert await lexical(rf, "ocelot") == ["n.md"]
        assert await lexical(rf, "two") == []


@pytest.mark.anyio
async def test_each_edit_changes_its_part_and_keeps_crlf_and_front_matter(
    tmp_path: Path,
) -> None:
    original = "---\r\ntags: [plan]\r\n---\r\n# Plan\r\n\r\n## Status\r\n\r\nDraft.\r\n"
    write(tmp_path / "notes", "plan.md", "")
    (tmp_path / "notes" / "plan.md").write_bytes(original.encode())
    async with notes_rf(tmp_path) as rf:
        await rf.reindex(tmp_path / "notes")
        done = await rf.edit_note("plan.md", replace_section=("Status", "Approved by the emu."))
        assert done["lines"] == [[8, 8]]
        await rf.edit_note("plan.md", append="Next: the wombat.")
        await rf.edit_note("plan.md", prepend="> Owner: the team")
        await rf.edit_note("plan.md", find="wombat", replace="numbat")
        assert await lexical(rf, "emu") == ["plan.md"]
        assert await lexical(rf, "numbat") == ["plan.md"]
        data = (tmp_path / "notes" / "plan.md").read_bytes()
        assert data == (b"---\r\ntags: [plan]\r\n---\r\n> Owner: the team\r\n\r\n# Plan\r\n\r\n"
                        b"## Status\r\n\r\nApproved by the emu.\r\n\r\nNext: the numbat.\r\n"
                        )
        with pytest.raises(ValueError, match="exactly one of"):
            await rf.edit_note("plan.md", append="a", prepend="b")


@pytest.mark.anyio
async def test_an_edit_over_a_persons_edit_is_a_conflict_that_writes_nothing(
    tmp_path: Path,
) -> None:
    async with notes_rf(tmp_path) as rf:
        seen = await rf.write_note("shared.md", "# Shared\n\nAgreed: tea.\n")
        person = "# Shared\n\nAgreed: coffee (changed by hand).\n"
        (tmp_path / "notes" / "shared.md").write_text(person)  # an editor's save
        with pytest.raises(NoteConflictError, match="changed since it was read") as conflict:
            await rf.edit_note("shared.md", append="Also: biscuits.", if_match=seen["sha256"])
        assert conflict.value.current_sha256 == sha256(person.encode())
        assert (tmp_path / "notes" / "shared.md").read_text() == person
        lines = await rf.get_file("shared.md", start_line=1)
        assert lines is not None and lines.get("sha256") == conflict.value.current_sha256
        retried = await rf.edit_note("shared.md", append="Also: biscuits.",
                                     if_match=conflict.value.current_sha256)
        assert retried["sha256"] == sha256((tmp_path / "notes" / "shared.md").read_bytes())


@pytest.mark.anyio
async def test_two_agents_editing_one_note_at_once_one_wins_the_other_conflicts(
    tmp_path: Path,
) -> None:
    async with notes_rf(tmp_path) as rf:
        base = await rf.write_note("race.md", "start\n")
        outcomes: list[str] = []

        async def agent(word: str) -> None:
            try:
                await rf.edit_note("race.md", append=word, if_match=base["sha256"])
                outcomes.append(word)
            except NoteConflictError:
                outcomes.append("conflict")

        async with anyio.create_task_group() as tg:
            tg.start_soon(agent, "heron")
            tg.start_soon(agent, "egret")
        assert sorted(outcomes)[0] == "conflict" and len(outcomes) == 2
        winner = next(o for o in outcomes if o != "conflict")
        assert (tmp_path / "notes" / "race.md").read_text() == f"start\n\n{winner}\n"


@pytest.mark.anyio
async def test_paths_outside_the_folder_or_the_index_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "secret.md", "secret\n")
    notes = tmp_path / "notes"
    write(notes, ".gitignore", "private/\n")
    (notes / "escape").symlink_to(outside, target_is_directory=True)
    (notes / "linked.md").symlink_to(outside / "secret.md")
    async with notes_rf(tmp_path) as rf:
        for path, why in [("../x.md", r"'\.\.'"), ("/tmp/x.md", "absolute"),
                          ("x.txt", "'.md'"), ("node_modules/x.md", "would not be indexed"),
                          ("escape/x.md", "symbolic link"), ("private/x.md", "ignore file"),
                          (".rifflux-trash/x.md", "trash")]:
            with pytest.raises(NotWritableError, match=why):
                await rf.write_note(path, "x\n")
        with pytest.raises(NotWritableError, match="symbolic link leading out"):
            await rf.edit_note("linked.md", append="gotcha")
        with pytest.raises(NotWritableError, match="symbolic link leading out"):
            await rf.delete_note("linked.md")
    assert (outside / "secret.md").read_text() == "secret\n"
    assert sorted(os.listdir(outside)) == ["secret.md"]


@pytest.mark.anyio
async def test_a_file_system_error_is_a_rifflux_error_and_writes_nothing(
    tmp_path: Path,
) -> None:
    write(tmp_path / "notes", "plain.md", "a file, not a folder\n")
    async with notes_rf(tmp_path) as rf:
        with pytest.raises(RiffluxError, match="cannot write .*plain.md.*try again"):
            await rf.write_note("plain.md/inside.md", "x\n")
    assert (tmp_path / "notes" / "plain.md").read_text() == "a file, not a folder\n"


@pytest.mark.anyio
async def test_without_a_writable_folder_writing_is_off(tmp_path: Path) -> None:
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        with pytest.raises(NotWritableError, match="writing notes is off"):
            await rf.write_note("a.md", "x\n")
        assert await rf.recent() == []  # (reading is not writing)


@pytest.mark.anyio
async def test_moving_a_note_rewrites_the_links_to_it_and_the_index_follows(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes"
    write(notes, "projects/Alpha.md", "# Alpha\n\n## Plan\n\nThe ibis plan. [home](../Home.md)\n")
    write(notes, "Home.md", "# Home\n\n[[Alpha]], [[Alpha#Plan]], [[Alpha|the A]], ![[Alpha]]\n"
                            "and [plan](projects/Alpha.md#plan) and `[[Alpha]]`.\n")
    async with notes_rf(tmp_path) as rf:
        await rf.reindex(notes)
        done = await rf.move_note("projects/Alpha.md", "archive/Alpha 2026.md")
        assert done["moved_from"] == "projects/Alpha.md"
        assert (notes / "Home.md").read_text() == (
            "# Home\n\n[[Alpha 2026]], [[Alpha 2026#Plan]], [[Alpha 2026|the A]], "
            "![[Alpha 2026]]\nand [plan](archive/Alpha%202026.md#plan) and `[[Alpha]]`.\n")
        assert (notes / "archive/Alpha 2026.md").read_text().endswith("[home](../Home.md)\n")
        assert len(done["links_updated"]) == 5
        links = await rf.links("archive/Alpha 2026.md")  # current when the call returns
        assert {b["path"] for b in links["backlinks"]} == {"Home.md"}
        assert len(links["backlinks"]) == 5 and links["unresolved"] == []
        assert await lexical(rf, "ibis") == ["archive/Alpha 2026.md"]
        with pytest.raises(NoteConflictError, match="already exists"):
            await rf.move_note("Home.md", "archive/Alpha 2026.md")
        before = (notes / "Home.md").read_bytes()
        kept = await rf.move_note("archive/Alpha 2026.md", "Omega.md", update_links=False)
        assert kept.get("links_updated", []) == [] and (notes / "Home.md").read_bytes() == before
        dangling = (await rf.links("Home.md"))["unresolved"]
        assert {u["target"] for u in dangling} >= {"Alpha 2026"}


@pytest.mark.anyio
async def test_a_deleted_note_goes_to_the_trash_out_of_the_index_and_comes_back(
    tmp_path: Path,
) -> None:
    async with notes_rf(tmp_path) as rf:
        written = await rf.write_note("gone.md", "The pangolin note.\n")
        deleted = await rf.delete_note("gone.md")
        assert await lexical(rf, "pangolin") == []
        trashed = tmp_path / "notes" / deleted["trash_path"]
        assert trashed.read_text() == "The pangolin note.\n"
        assert deleted["trash_path"].startswith(".rifflux-trash/")
        await rf.reindex(tmp_path / "notes")  # the trash is never indexed
        assert await lexical(rf, "pangolin") == []
        restored = await rf.restore_note("gone.md")
        assert restored["sha256"] == written["sha256"]
        assert await lexical(rf, "pangolin") == ["gone.md"]
        assert not trashed.exists()
        await rf.delete_note("gone.md")
        await rf.write_note("gone.md", "A new one.\n")
        with pytest.raises(NoteConflictError, match="already exists"):
            await rf.restore_note("gone.md")


@pytest.mark.anyio
async def test_recent_lists_what_anyone_changed_newest_first(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    numbered_notes(notes, 3)
    for i, age in enumerate((300, 100, 200)):
        os.utime(notes / f"n{i}.md", (1e9 + age, 1e9 + age))  # (long ago)
    async with notes_rf(tmp_path, watch_writable=True) as rf:
        await watcher_started(rf)
        await rf.write_note("mine.md", "# By the agent\n\nhello\n")
        write(notes, "theirs.md", "# By a person\n\nhi\n")

        async def theirs_listed() -> bool:
            return any(n["path"] == "theirs.md" for n in await rf.recent(limit=2))

        await eventually(theirs_listed)
        recent = await rf.recent(limit=5)
        assert [n["path"] for n in recent][2:] == ["n0.md", "n2.md", "n1.md"]
        assert {n["title"] for n in recent[:2]} == {"By the agent", "By a person"}
        assert [n["path"] for n in await rf.recent(since="7d")] != []
        assert {n["path"] for n in await rf.recent(since="7d")} == {"mine.md", "theirs.md"}


@pytest.mark.anyio
async def test_the_watchers_event_for_rifflux_own_write_is_a_no_op(tmp_path: Path) -> None:
    async with notes_rf(tmp_path, watch_writable=True) as rf:
        await watcher_started(rf)
        seen = (await rf.status())["watcher"]["events_seen"]
        done = await rf.write_note("quiet.md", "# Quiet\n\nThe heron waits.\n")

        async def watcher_job_done() -> list[JobInfo]:
            status = await rf.status()
            return [j for j in status["jobs"] if j["source"] == "watcher"
                    and j["status"] == "completed"] if status["watcher"]["events_seen"] > seen \
                else []

        jobs = await eventually(watcher_job_done)
        results = [j["result"] for j in jobs]
        assert all(r is not None and r["indexed_files"] == 0 for r in results), results
        note_jobs = [j for j in (await rf.status())["jobs"] if j["source"] == "note"]
        assert [j["id"] for j in note_jobs] == [done["job_id"]]
        assert note_jobs[0]["indexed_files"] == 1


@pytest.mark.anyio
async def test_a_note_write_cuts_in_ahead_of_a_long_reindex(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reindex's parsing is held on gates (a group of 16 files at a time, in threads:
    # under 64 files), so that whatever the machine's speed the note is queued while the
    # reindex runs, cuts in at the reindex's next commit (its second group's), and is
    # searchable while the rest of the reindex still waits.
    from rifflux.actors import index_job

    big = numbered_notes(tmp_path / "big", 64, long=True)
    second, rest = threading.Event(), threading.Event()
    groups: list[Path] = []
    from rifflux.core.document import prepare_many as parse

    def held(root: Path, *args: Any) -> Any:
        if root == big.resolve():
            groups.append(root)
            gate = None if len(groups) == 1 else second if len(groups) == 2 else rest
            if gate is not None and not gate.wait(timeout=60):
                raise TimeoutError("the test never opened the gate")
        return parse(root, *args)

    monkeypatch.setattr(index_job, "prepare_many", held)
    async with notes_rf(tmp_path) as rf:
        job_id = (await rf.reindex(big, background=True))["job"]["id"]

        async def indexing() -> bool:
            return (await rf.job(job_id))["indexed_files"] > 0

        async def note_queued() -> bool:
            return any(j["source"] == "note" for j in (await rf.status())["jobs"])

        try:
            await eventually(indexing, within=60)
            async with anyio.create_task_group() as tg:
                tg.start_soon(rf.write_note, "urgent.md", "The kestrel hovers.\n")
                await eventually(note_queued)
                second.set()  # (the reindex's next commit: the note cuts in after it)
            assert await lexical(rf, "kestrel") == ["urgent.md"]
            big_job = await rf.job(job_id)
            assert big_job["status"] == "running" and big_job["indexed_files"] == 32
        finally:
            second.set()
            rest.set()
        assert (await rf.wait_for_job(job_id))["status"] == "completed"


@pytest.mark.anyio
async def test_another_process_on_the_index_finds_the_note_when_the_call_returns(
    tmp_path: Path,
) -> None:
    async with notes_rf(tmp_path) as writer, \
            Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as reader:
        await writer.write_note("first.md", "# First\n\nhello\n")
        for i in range(3):
            await writer.write_note(f"n{i}.md", f"# N{i}\n\nthe word zorkmid{i}, see [[first]]\n")
            assert await lexical(reader, f"zorkmid{i}") == [f"n{i}.md"]  # no waiting

        async def backlinks() -> int:
            try:
                return len((await reader.links("first.md"))["backlinks"])
            except InvalidArgumentError:  # (not in its catalog yet)
                return 0

        async def all_three() -> bool:
            return await backlinks() == 3

        await eventually(all_three)  # at its next look at the change log


@pytest.mark.anyio
async def test_what_a_notes_job_leaves_undone_is_tidied_once_writing_pauses(
    tmp_path: Path,
) -> None:
    # A note's job does not prune vectors or merge the full-text index (a caller waits);
    # the indexer does both once no note was written for half a second.
    db = tmp_path / "i.db"

    def untidy() -> tuple[int, int]:
        with sqlite3.connect(db) as conn:
            orphans = conn.execute("SELECT COUNT(*) FROM embeddings WHERE content_hash NOT IN "
                                   "(SELECT content_hash FROM chunks)").fetchone()[0]
            pieces = conn.execute("SELECT COUNT(DISTINCT segid) FROM chunks_fts_idx").fetchone()[0]
        return int(orphans), int(pieces)

    async with notes_rf(tmp_path) as rf:
        done = await rf.write_note("log.md", "# Log\n\nday 0\n")
        for day in range(1, 7):
            await rf.wait_for_job(done["job_id"])  # (its vector stored, then orphaned)
            done = await rf.edit_note("log.md", find=f"day {day - 1}", replace=f"day {day}")
        orphans, pieces = untidy()  # (left by the notes' jobs)
        assert orphans >= 5 and pieces > 1

        async def tidied() -> bool:
            return untidy() == (0, 1)

        await eventually(tidied)
        assert await lexical(rf, "day 6") == ["log.md"]


@pytest.mark.anyio
async def test_every_note_operation_works_on_either_store(db: Location, tmp_path: Path) -> None:
    # (the notes reach the index through the store's protocols: SQLite or PostgreSQL)
    notes = tmp_path / "notes"
    write(notes, "Home.md", "# Home\n\nSee [[Alpha]].\n")
    async with Rifflux(db, embedder=CountingEmbedder(), writable=[notes],
                       watch_writable=False) as rf, \
            Rifflux(db, embedder=CountingEmbedder()) as other:
        await rf.reindex(notes)
        done = await rf.write_note("Alpha.md", "# Alpha\n\nthe axolotl\n")
        assert await lexical(rf, "axolotl") == ["Alpha.md"]
        assert await lexical(other, "axolotl") == ["Alpha.md"]  # another process, at once
        edited = await rf.edit_note("Alpha.md", append="a quokka", if_match=done["sha256"])
        assert await lexical(rf, "quokka") == ["Alpha.md"]
        with pytest.raises(NoteConflictError):
            await rf.edit_note("Alpha.md", append="stale", if_match=done["sha256"])
        await rf.wait_for_job(edited["job_id"])
        assert (await rf.search("quokka axolotl", mode="semantic"))[0]["path"] == "Alpha.md"
        await rf.move_note("Alpha.md", "x/Beta.md")
        assert (notes / "Home.md").read_text() == "# Home\n\nSee [[Beta]].\n"
        assert [b["path"] for b in (await rf.links("x/Beta.md"))["backlinks"]] == ["Home.md"]
        await rf.delete_note("x/Beta.md")
        assert await lexical(rf, "axolotl") == []
        await rf.restore_note("x/Beta.md")
        assert await lexical(rf, "axolotl") == ["x/Beta.md"]
        assert {n["path"] for n in await rf.recent()} == {"Home.md", "x/Beta.md"}
