"""The git history of the indexed folders, searched through the library (on both stores
where the store is what a test exercises: ``db``): real
repositories made with git (commits, a rename, a merge, a rebase that drops commits, a
shallow clone, a non-UTF-8 message, a binary file, a huge commit cut to its limit, a
worktree, a submodule, a truncated pack)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from rifflux import InvalidArgumentError, NotFoundError, Rifflux, RiffluxError
from rifflux.config import Settings

from .gitrepo import commit, git, handbook, init
from .helpers import (
    CountingEmbedder,
    GatedEmbedder,
    Location,
    eventually,
    index_rows,
    watcher_started,
    watching,
)

pytestmark = pytest.mark.anyio


async def test_a_commit_is_found_by_its_message_lexically(
        tmp_path: Path, db: Location) -> None:
    repo = handbook(tmp_path)
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(repo)
        await rf.wait_for_history()
        answer = await rf.search_history("retry policy", mode="lexical")
        status = await rf.status()
    assert status["history"]["repositories"] == 1
    assert status["history"]["commits_read"] == 3 and status["history"]["problems"] == []
    hits = answer["results"]
    assert hits and hits[0]["title"] == "Introduce a retry policy for uploads"
    assert hits[0]["author"] == "Grace Hopper"
    assert hits[0]["paths"][0]["path"] == "docs/deploy.md"
    assert hits[0]["paths"][0]["change"] == "modified"
    assert hits[0]["match"] is not None and "**Retry**" in hits[0]["match"]["text"]
    assert answer["repositories"][0]["commits"] == 3


async def test_filters_keep_commits_by_author_date_path_and_repository(
        tmp_path: Path, db: Location) -> None:
    repo = handbook(tmp_path)
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(repo)
        await rf.wait_for_history()

        async def titles(**kw: object) -> list[str]:
            answer = await rf.search_history("deploy onboarding retry notes guide",
                                             mode="lexical", **kw)  # type: ignore[arg-type]
            return sorted(h["title"] for h in answer["results"])

        assert await titles(author="grace") == ["Introduce a retry policy for uploads"]
        assert await titles(author="ADA@EXAMPLE") == ["Add the deployment notes",
                                                      "Write the onboarding guide"]
        assert await titles(since="2024-03-01", before="2024-05-01") == [
            "Introduce a retry policy for uploads"]
        assert await titles(paths=["docs/onboarding.md"]) == ["Write the onboarding guide"]
        assert len(await titles(paths="docs")) == 3
        assert await titles(paths=[str(repo / "docs" / "onboarding.md")]) == [
            "Write the onboarding guide"]
        assert len(await titles(repo=repo)) == 3
        with pytest.raises(InvalidArgumentError, match="no indexed repository"):
            await titles(repo=tmp_path / "elsewhere")
        with pytest.raises(InvalidArgumentError, match="since"):
            await titles(since="not a date")
        # an empty list says why: the filters, or the words
        for kw, said in (({"author": "nobody at all"}, "within these filters (author)"),
                         ({"paths": "nothere/"}, "within these filters (paths)"),
                         ({}, "no commit matched: try other words")):
            answer = await rf.search_history("zebra xylophone", mode="lexical",
                                             **kw)  # type: ignore[arg-type]
            assert answer["results"] == [] and any(said in p for p in answer["problems"])
        found = await rf.search_history("deploy", mode="lexical", author="ada")
        assert found["results"] and found["problems"] == []


async def test_semantic_and_hybrid_search_rank_commits_by_meaning(
        tmp_path: Path, db: Location) -> None:
    repo = handbook(tmp_path)
    embedder = CountingEmbedder()
    async with Rifflux(db, embedder=embedder) as rf:
        await rf.reindex(repo)
        await rf.wait_for_history()

        async def embedded() -> bool:
            answer = await rf.search_history("retry policy uploads", mode="semantic")
            return answer["pending_embeddings"] == 0 and bool(answer["results"])

        await eventually(embedded)
        semantic = await rf.search_history("retry policy uploads", mode="semantic")
        hybrid = await rf.search_history("retry policy uploads", mode="hybrid")
        by_ada = await rf.search_history("retry policy uploads", mode="semantic",
                                         author="ada")
    assert semantic["results"][0]["title"] == "Introduce a retry policy for uploads"
    assert sorted(h["title"] for h in by_ada["results"]) == [
        "Add the deployment notes", "Write the onboarding guide"]
    assert semantic["results"][0]["scores"]["cosine"] is not None
    top = hybrid["results"][0]
    assert top["title"] == "Introduce a retry policy for uploads"
    assert top["scores"]["lexical_rank"] == 1 and top["scores"]["semantic_rank"] is not None
    # each commit's text embedded once, however often it is searched
    commit_texts = [t for t in embedder.embedded if t.startswith(("Add the", "Introduce",
                                                                 "Write the"))]
    assert len(commit_texts) == len(set(commit_texts)) == 3


async def test_a_commit_is_shown_by_a_prefix_of_its_hash(
        tmp_path: Path, db: Location) -> None:
    repo = handbook(tmp_path)
    head = git(repo, "rev-parse", "HEAD~1")
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(repo)
        await rf.wait_for_history()
        shown = await rf.show_commit(head[:7])
        with pytest.raises(NotFoundError, match="no indexed commit"):
            await rf.show_commit("0000000")
        with pytest.raises(InvalidArgumentError, match="not a commit hash"):
            await rf.show_commit("HEAD")
        cut = await rf.show_commit(head, max_chars=10)
    assert shown["hash"] == head and shown["title"] == "Introduce a retry policy for uploads"
    assert shown["body"].startswith("Uploads failed on flaky links")
    assert "+Retry uploads three times." in shown["change"]
    assert "@@ -3,0 +4 @@" in shown["change"]
    assert shown["paths"] == [{"path": "docs/deploy.md", "change": "modified",
                               "old_path": None, "added": 1, "removed": 0, "binary": False}]
    assert cut["truncated"] and len(cut["change"]) == 10


async def test_a_file_history_follows_its_renames(
        tmp_path: Path, db: Location) -> None:
    repo = init(tmp_path / "notes")
    commit(repo, "Start the plan", {"plan.md": "# Plan\n\none\ntwo\nthree\n"})
    commit(repo, "Add a fourth step", {"plan.md": "# Plan\n\none\ntwo\nthree\nfour\n"})
    git(repo, "mv", "plan.md", "roadmap.md")
    commit(repo, "Call the plan a roadmap")
    commit(repo, "Change step two", {"roadmap.md": "# Plan\n\none\nTWO\nthree\nfour\n"})
    commit(repo, "Unrelated", {"other.md": "# Other\n"})
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(repo)
        await rf.wait_for_history()
        whole = await rf.history("roadmap.md")
        lines = await rf.history("roadmap.md", 4, 6)
        renamed = await rf.search_history("roadmap", mode="lexical")
    assert [c["title"] for c in whole["commits"]] == [
        "Change step two", "Call the plan a roadmap", "Add a fourth step", "Start the plan"]
    assert [c["path"] for c in whole["commits"]] == [
        "roadmap.md", "roadmap.md", "plan.md", "plan.md"]
    assert whole["commits"][1]["change"] == "renamed"
    assert whole["commits"][1]["old_path"] == "plan.md"
    # lines 4..6 are "TWO", "three", "four": each from the commit that last changed it
    by_title = {c["title"]: c["lines"] for c in lines["commits"]}
    assert by_title == {"Change step two": [4], "Start the plan": [5],
                        "Add a fourth step": [6]}
    assert lines["commits"][0]["title"] == "Change step two"
    assert any(h["paths"][0]["change"] == "renamed" for h in renamed["results"])


async def test_a_merge_a_binary_file_and_a_non_utf8_message_are_indexed(
        tmp_path: Path, db: Location) -> None:
    repo = init(tmp_path / "repo")
    commit(repo, "Base", {"a.md": "# A\n"})
    git(repo, "switch", "-q", "-c", "topic")
    commit(repo, "Add the logo", {"logo.png": b"\x89PNG\r\n\x1a\n\x00\x00binary\x00data"})
    git(repo, "switch", "-q", "main")
    commit(repo, "Edit a", {"a.md": "# A\n\nmore\n"})
    git(repo, "merge", "-q", "--no-ff", "topic", "-m", "Merge the topic branch")
    commit(repo, "Caf\xe9 cr\xe8me menu".encode("latin-1"), {"menu.md": "# Menu\n"})
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(repo)
        await rf.wait_for_history()
        merge = (await rf.search_history("merge topic branch", mode="lexical"))["results"]
        logo = (await rf.search_history("logo", mode="lexical"))["results"]
        menu = (await rf.search_history("menu", mode="lexical"))["results"]
        shown = await rf.show_commit(logo[0]["hash"])
    assert merge[0]["title"] == "Merge the topic branch" and merge[0]["paths"] == []
    assert logo[0]["paths"][0] == {"path": "logo.png", "change": "added", "old_path": None,
                                   "added": 0, "removed": 0, "binary": True}
    assert shown["change"] == "logo.png (binary)"  # named, never diffed
    assert menu[0]["title"].startswith("Caf") and menu[0]["title"].endswith("menu")


async def test_a_huge_commit_is_cut_to_the_limit(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    vendored = {f"vendor/lib{i}.txt": "".join(f"line {j} of file {i}\n" for j in range(400))
                for i in range(30)}
    commit(repo, "Vendor the library", vendored)
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder(),
                       settings=Settings(history_diff_chars=2_000)) as rf:
        await rf.reindex(repo)
        await rf.wait_for_history()
        hit = (await rf.search_history("vendor library", mode="lexical"))["results"][0]
        shown = await rf.show_commit(hit["hash"])
    assert shown["cut"] and len(shown["change"]) <= 2_000 + 250
    assert hit["paths_total"] == 30 and len(hit["paths"]) == 20
    assert all(p["added"] == 400 for p in shown["paths"])  # counted beyond the cut


async def test_a_rebase_drops_the_commits_no_branch_reaches(
        tmp_path: Path, db: Location) -> None:
    repo = init(tmp_path / "repo")
    commit(repo, "Base", {"a.md": "# A\n"})
    commit(repo, "Keep this change", {"b.md": "# B\n"})
    commit(repo, "Drop this mistake", {"c.md": "# C\n"})
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(repo)
        await rf.wait_for_history()
        assert (await rf.search_history("mistake", mode="lexical"))["results"]
        git(repo, "reset", "-q", "--hard", "HEAD~1")
        commit(repo, "Replace the mistake", {"d.md": "# D\n"})
        await rf.wait_for_history()
        found = (await rf.search_history("mistake", mode="lexical"))["results"]
        answer = await rf.search_history("change", mode="lexical")
    assert [h["title"] for h in found] == ["Replace the mistake"]
    assert answer["repositories"][0]["commits"] == 3


async def test_a_shallow_clone_is_indexed_as_far_as_it_goes(tmp_path: Path) -> None:
    origin = handbook(tmp_path)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(clone))
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(clone)
        await rf.wait_for_history()
        answer = await rf.search_history("onboarding retry", mode="lexical")
    assert [h["title"] for h in answer["results"]] == ["Write the onboarding guide"]
    assert answer["repositories"][0]["shallow"]
    assert any("shallow clone" in p for p in answer["problems"])


async def test_a_worktree_and_a_submodule_have_their_histories(tmp_path: Path) -> None:
    lib = handbook(tmp_path)
    main = init(tmp_path / "main")
    commit(main, "Main project starts", {"README.md": "# Main\n"})
    git(main, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    commit(main, "Add the handbook as a submodule")
    tree = tmp_path / "tree"
    git(main, "worktree", "add", "-q", "-b", "side", str(tree))
    commit(tree, "Work on the side branch", {"side.md": "# Side\n"})
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(main)
        await rf.reindex(tree)
        await rf.wait_for_history()
        side = (await rf.search_history("side branch", mode="lexical"))["results"]
        retry = (await rf.search_history("retry policy", mode="lexical"))["results"]
        answer = await rf.search_history("anything", mode="lexical")
    assert side[0]["title"] == "Work on the side branch"
    assert retry[0]["title"] == "Introduce a retry policy for uploads"
    # the worktree and its main tree are one repository; the submodule is another
    assert len(answer["repositories"]) == 2


async def test_a_truncated_pack_costs_its_history_only(tmp_path: Path) -> None:
    repo = handbook(tmp_path)
    git(repo, "gc", "-q")
    pack = next((repo / ".git" / "objects" / "pack").glob("*.pack"))
    pack.chmod(0o644)
    data = pack.read_bytes()
    pack.write_bytes(data[: len(data) // 2])
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(repo)
        await rf.wait_for_history()
        notes = await rf.search("pipeline", mode="lexical")
        answer = await rf.search_history("retry", mode="lexical")
    assert notes  # the notes are indexed
    assert answer["results"] == []
    assert any("cannot be read" in p for p in answer["problems"]), answer["problems"]


async def test_history_can_be_turned_off(
        tmp_path: Path, db: Location) -> None:
    repo = handbook(tmp_path)
    async with Rifflux(db, embedder=CountingEmbedder(),
                       settings=Settings(history=False)) as rf:
        await rf.reindex(repo)
        with pytest.raises(RiffluxError, match="history is turned off"):
            await rf.search_history("retry")
    rows = await index_rows(db, "SELECT COUNT(*) FROM commits")
    assert rows == [(0,)]


async def test_a_folder_outside_any_repository_has_no_history(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nplain notes\n")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(folder)
        await rf.wait_for_history()
        answer = await rf.search_history("notes", mode="lexical")
    assert answer["results"] == [] and answer["repositories"] == []
    assert answer["problems"] == [
        "no indexed folder is in a git repository: there is no history to search"]


async def test_a_watch_follows_a_commit_a_branch_switch_and_a_rebase(tmp_path: Path) -> None:
    repo = handbook(tmp_path)
    async with watching(tmp_path, repo) as rf:
        await watcher_started(rf)
        await rf.wait_for_history()

        async def titles(query: str) -> list[str]:
            answer = await rf.search_history(query, mode="lexical")
            return [h["title"] for h in answer["results"]]

        # (a watch's look, a read of the refs and a write each time: 30 s, as the other
        # watch tests give, for a machine busy with the rest of the suite)
        commit(repo, "Describe the rollback drill", {"docs/rollback.md": "# Rollback\n"})
        await eventually(lambda: titles("rollback drill"), within=30)  # (no wait_for_history)
        git(repo, "switch", "-q", "-c", "experiment")
        commit(repo, "Try a canary release", {"docs/canary.md": "# Canary\n"})
        await eventually(lambda: titles("canary release"), within=30)
        # both branches back to the onboarding guide: the canary and the drill are gone
        git(repo, "reset", "-q", "--hard", "HEAD~2")
        git(repo, "branch", "-q", "-f", "main", "HEAD")

        async def gone() -> bool:
            return not await titles("canary rollback")

        await eventually(gone, within=30)


async def test_line_history_follows_new_commits_and_leaves_out_uncommitted_lines(
        tmp_path: Path) -> None:
    repo = init(tmp_path / "notes")
    commit(repo, "First draft", {"plan.md": "# Plan\n\none\ntwo\n"},
           date="2024-01-01T10:00:00Z")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(repo)
        before = await rf.history("plan.md", 3, 4)
        commit(repo, "Second thoughts", {"plan.md": "# Plan\n\none\nTWO\n"},
               date="2024-02-01T10:00:00Z")
        after = await rf.history("plan.md", 3, 4)
        (repo / "plan.md").write_text("# Plan\n\nONE\nTWO\n")  # (not committed)
        dirty = await rf.history("plan.md", 3, 4)
        clamped = await rf.history("plan.md", 4, 99)  # (to its last line)
        with pytest.raises(InvalidArgumentError, match=r"line 99 is past the end of plan\.md "
                           r"\(4 lines\)"):  # (not an empty list that looks like no commit)
            await rf.history("plan.md", 99, 120)
    assert [(c["title"], c["lines"]) for c in clamped["commits"]] == [("Second thoughts", [4])]
    assert [(c["title"], c["lines"]) for c in before["commits"]] == [("First draft", [3, 4])]
    assert [(c["title"], c["lines"]) for c in after["commits"]] == [
        ("Second thoughts", [4]), ("First draft", [3])]
    assert [(c["title"], c["lines"]) for c in dirty["commits"]] == [("Second thoughts", [4])]


async def test_a_path_not_in_utf8_is_read_with_replacement_characters(
        tmp_path: Path, db: Location) -> None:
    repo = init(tmp_path / "repo")
    # (a .dat file, which the notes leave out: a note so named fails the reindex itself)
    commit(repo, "Add the tasting notes", {
        "README.md": "# Readme\n",
        os.fsdecode(b"caf\xe9 notes.dat"): b"# Caf\xc3\xa9\n\nespresso tasting\n"})
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(repo)
        await rf.wait_for_history()
        hits = (await rf.search_history("tasting", mode="lexical"))["results"]
    assert [p["path"] for p in hits[0]["paths"]] == ["README.md", "caf\ufffd notes.dat"]
    match = hits[0]["match"]
    assert match is not None and "+espresso tasting" in match["text"].replace("**", "")


async def test_a_new_commit_is_searchable_while_a_backlog_waits_for_vectors(
        tmp_path: Path) -> None:
    repo = handbook(tmp_path)
    embedder = GatedEmbedder()  # (embeds nothing until its gate opens)
    async with Rifflux(tmp_path / "i.db", embedder=embedder) as rf:
        await rf.reindex(repo, background=True)
        await rf.wait_for_history()
        await anyio.to_thread.run_sync(embedder.entered.wait, 10)
        commit(repo, "Describe the rollback drill", {"docs/rollback.md": "# Rollback\n"})
        with anyio.fail_after(10):
            await rf.wait_for_history()
        found = await rf.search_history("rollback drill", mode="lexical")
        assert (await rf.status())["history"]["pending_embeddings"] >= 3
        embedder.gate.set()
    assert found["results"][0]["title"] == "Describe the rollback drill"


async def test_the_history_of_a_file_outside_the_indexed_folders_is_refused(
        tmp_path: Path) -> None:
    indexed = handbook(tmp_path)
    other = init(tmp_path / "private")
    commit(other, "Secret plans", {"plans.md": "# Plans\n\nnone of your business\n"})
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(indexed / "docs")
        await rf.wait_for_history()
        with pytest.raises(NotFoundError, match="not a file in an indexed folder or rep"):
            await rf.history(other / "plans.md", 1, 3)
        lines = await rf.history(indexed / "docs" / "deploy.md", 4, 4)  # (absolute, inside)
        (indexed / "top.md").write_text("# Top\n")  # (in the repository, not the folder)
        commit(indexed, "Add a top note", {"top.md": "# Top\n\nabove the docs\n"})
        top = await rf.history(indexed / "top.md", 3, 3)
    assert [c["title"] for c in lines["commits"]] == ["Introduce a retry policy for uploads"]
    assert [c["title"] for c in top["commits"]] == ["Add a top note"]


async def test_both_stores_rank_commits_by_the_same_bm25(
        tmp_path: Path, new_postgres_index: Callable[[], str]) -> None:
    repo = handbook(tmp_path)
    topics = ("Tune the retry backoff", "Document the cache eviction", "Fix flaky links in "
              "the sitemap", "Rename the upload bucket", "Add jitter to the retry loop",
              "Explain the release calendar", "Evict stale cache entries on deploy")
    for i, title in enumerate(topics):
        commit(repo, f"{title}\n\n{'Uploads retry on flaky links. ' * (i % 3)}See the "
               f"{'cache ' * i}notes.", {f"docs/step{i}.md": f"# {title}\n\n{'jitter ' * i}\n"})
    # a word more often than PostgreSQL's tsvector keeps its positions (256): counted whole
    commit(repo, f"Warm the cache\n\n{'cache ' * 150}", {"docs/warm.md": "# Warm\n"})
    queries = ("retry policy uploads", "deploy*", "evi* re* uplo*", '"flaky links"',
               "cache eviction jitter", "onboarding guide", "retry loop", "step3",
               "introduce a retry policy for uploads on flaky links, please")
    ranked: list[list[list[tuple[str, float | None]]]] = []
    for where in (tmp_path / "i.db", new_postgres_index()):
        async with Rifflux(where, embedder=CountingEmbedder()) as rf:
            await rf.reindex(repo)
            await rf.wait_for_history()
            ranked.append([[(h["title"], h["scores"]["bm25"]) for h in (
                await rf.search_history(q, mode="lexical", top_k=20))["results"]]
                for q in queries])
    assert all(ranked[0]) and ranked[0] == ranked[1]


async def test_a_title_phrase_is_counted_again_once_the_commits_change(
        tmp_path: Path, new_postgres_index: Callable[[], str]) -> None:
    """PostgreSQL keeps how many titles hold a query's phrase until the commits change
    (``history_lexical.TitleCounts``): its ranking stays SQLite's after new commits and
    after a rebase that drops some."""
    query = "merge the release branch"
    ranked: list[list[list[tuple[str, float | None]]]] = []
    wheres: list[str | Path] = [tmp_path / "i.db", new_postgres_index()]
    for n, where in enumerate(wheres):
        repo = init(tmp_path / f"repo{n}")
        commit(repo, "Merge the release branch", {"a.md": "# A\n"})
        for i in range(10):
            commit(repo, f"Tidy the notes, part {i}", {f"n{i}.md": f"# Part {i}\n"})
        steps: list[list[tuple[str, float | None]]] = []
        async with Rifflux(where, embedder=CountingEmbedder()) as rf:

            async def ranks(rf: Rifflux = rf) -> list[tuple[str, float | None]]:
                return [(h["title"], h["scores"]["bm25"]) for h in (await rf.search_history(
                    query, mode="lexical", top_k=20))["results"]]

            await rf.reindex(repo)
            await rf.wait_for_history()
            steps += [await ranks(), await ranks()]  # (the second: the count as kept)
            for i in range(3):
                commit(repo, f"Merge the release branch again, round {i}", {f"m{i}.md": "# M\n"})
            await rf.wait_for_history()
            steps.append(await ranks())
            git(repo, "reset", "-q", "--hard", "HEAD~2")
            await rf.wait_for_history()
            steps.append(await ranks())
        ranked.append(steps)
    assert all(ranked[0]) and ranked[0] == ranked[1]
    first, kept, more, fewer = ranked[0]
    assert first == kept
    assert more[0][1] != first[0][1] != fewer[0][1]  # (the phrase's idf moved each time)


async def test_a_process_opened_later_searches_the_history_another_indexed(
        tmp_path: Path, db: Location) -> None:
    repo = handbook(tmp_path)
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(repo)
        await rf.wait_for_history()

        async def embedded() -> bool:
            return (await rf.status())["history"]["pending_embeddings"] == 0

        await eventually(embedded)
    embedder = CountingEmbedder()
    async with Rifflux(db, embedder=embedder, settings=Settings(read_only=True)) as reader:
        lexical = await reader.search_history("retry policy", mode="lexical")
        semantic = await reader.search_history("retry policy uploads", mode="semantic")
        shown = await reader.show_commit(lexical["results"][0]["hash"])
        whole = await reader.history("docs/deploy.md")
    assert lexical["results"][0]["title"] == "Introduce a retry policy for uploads"
    assert semantic["results"][0]["title"] == "Introduce a retry policy for uploads"
    assert shown["body"].startswith("Uploads failed on flaky links")
    assert [c["title"] for c in whole["commits"]] == [
        "Introduce a retry policy for uploads", "Add the deployment notes"]
    # the commits' vectors were read, not made again: only the query was embedded
    assert not [t for t in embedder.embedded if t.startswith(("Add the", "Introduce"))]


_ORPHANS = ("SELECT count(*) FROM embeddings e WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE "
            "c.content_hash = e.content_hash) AND NOT EXISTS (SELECT 1 FROM commits m WHERE "
            "m.content_hash = e.content_hash)")
_COMMIT_VECTORS = ("SELECT count(*) FROM embeddings e WHERE EXISTS (SELECT 1 FROM commits m "
                   "WHERE m.content_hash = e.content_hash)")


async def test_commit_vectors_outlive_the_pruning_of_orphan_vectors(
        tmp_path: Path, db: Location) -> None:
    repo = handbook(tmp_path)
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(repo)
        await rf.wait_for_history()

        async def embedded() -> bool:
            return (await rf.status())["history"]["pending_embeddings"] == 0

        await eventually(embedded)
        assert await index_rows(db, _COMMIT_VECTORS) == [(3,)]
        (repo / "docs" / "onboarding.md").write_text("# Onboarding\n\nA new welcome.\n")
        await rf.reindex(repo)  # (the old text's vector is an orphan, then pruned)

        async def pruned() -> bool:
            return await index_rows(db, _ORPHANS) == [(0,)]

        await eventually(pruned)
        assert await index_rows(db, _COMMIT_VECTORS) == [(3,)]


async def test_only_the_process_holding_the_embedding_lease_embeds_commits(
        tmp_path: Path) -> None:
    repo = handbook(tmp_path)
    db = tmp_path / "i.db"
    embedder = CountingEmbedder()
    async with Rifflux(db, embedder=CountingEmbedder(), settings=Settings(history=False)) as rf:
        await rf.reindex(repo)  # (the notes embedded: a reindex later has none to wait for)
    with (tmp_path / "i.db.embedding.lock").open("ab") as held:  # (another process's lease)
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        async with Rifflux(db, embedder=embedder) as rf:
            await rf.reindex(repo)
            await rf.wait_for_history()
            await anyio.sleep(0.5)  # (time enough to embed three commits, had it the lease)
            assert (await rf.status())["history"]["pending_embeddings"] == 3
            assert not [t for t in embedder.embedded if t.startswith(("Add the", "Introduce"))]
            fcntl.flock(held.fileno(), fcntl.LOCK_UN)  # (the holder leaves)

            async def commits_embedded() -> bool:
                return (await rf.status())["history"]["pending_embeddings"] == 0

            await eventually(commits_embedded)
    assert [t for t in embedder.embedded if t.startswith("Introduce a retry policy")]


async def test_a_prefix_with_many_completions_is_bounded_on_postgresql_and_says_so(
        tmp_path: Path, db: Location) -> None:
    repo = handbook(tmp_path)
    many = " ".join(f"zeta{n}" for n in range(100, 180))  # (80 words completing zeta*)
    commit(repo, f"Log the sensor readings\n\n{many}", {"docs/sensors.md": "# Sensors\n"})
    commit(repo, "Tune zeta", {"docs/zeta.md": "# Zeta\n"})
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(repo)
        await rf.wait_for_history()
        bounded = await rf.search_history("zeta*", mode="lexical")
        whole = await rf.search_history("deploy*", mode="lexical")
    titles = [h["title"] for h in bounded["results"]]
    assert {"Tune zeta", "Log the sensor readings"} <= set(titles)
    assert whole["results"] and not [p for p in whole["problems"] if "completions" in p]
    said = [p for p in bounded["problems"] if "completions" in p]
    if "://" in str(db):  # PostgreSQL: the BM25 index is asked for the 64 shortest
        assert said and "zeta*" in said[0] and "64" in said[0]
    else:  # FTS5 ranks every match of a prefix
        assert not said
