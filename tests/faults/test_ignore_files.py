"""Ignore files: git's rules, in any folder, with or without a repository; an edited one
takes effect at the next scan and through the watcher."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rifflux import Rifflux, Settings
from rifflux.core.ignore import IgnoreFiles
from rifflux.core.scan import Globs, scan_root

from ..helpers import CountingEmbedder, eventually, write

pytestmark = pytest.mark.anyio
GLOBS = Globs(("*.md",), ())


def tree(root: Path) -> Path:
    for rel in ("keep.md", "drafts/a.md", "drafts/keep-me.md", "build/out.md", "src/build/x.md",
                "notes/secret.md", "notes/public.md", "deep/one/two/private.md", "top.md",
                "sub/top.md"):
        write(root, rel, f"# {rel}\n\ntext of {rel}\n")
    write(root, ".gitignore", "drafts/*\n!drafts/keep-me.md\nbuild/\n/top.md\n")
    write(root, "notes/.ignore", "secret.md\n")
    write(root, "deep/.riffluxignore", "**/private.md\n")
    write(root, "deep/one/.gitignore", "!two/private.md\n")  # deeper, but less precedence?
    return root


def test_git_rules_apply_per_folder_with_negation_and_anchoring(tmp_path: Path) -> None:
    root = tree(tmp_path / "vault")
    found = {f.rel_path for f in scan_root(root, GLOBS).files}
    assert found == {"keep.md", "drafts/keep-me.md", "notes/public.md", "sub/top.md",
                     "deep/one/two/private.md"}  # the deeper file's negation wins
    assert {f.rel_path for f in scan_root(root, GLOBS, use_ignore_files=False).files} == {
        "keep.md", "drafts/a.md", "drafts/keep-me.md", "build/out.md", "src/build/x.md",
        "notes/secret.md", "notes/public.md", "deep/one/two/private.md", "top.md",
        "sub/top.md"}
    one_by_one = IgnoreFiles(str(root))
    assert [one_by_one.ignored(rel) for rel in ("drafts/a.md", "drafts/keep-me.md",
                                                "src/build/x.md", "notes/secret.md",
                                                "top.md", "sub/top.md")] == [
        True, False, True, True, True, False]


def test_an_ignore_file_that_is_a_fifo_is_passed_over_not_waited_on(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    write(root, "keep.md", "# Keep\n")
    write(root, "drop.md", "# Drop\n")
    write(root, ".gitignore", "drop.md\n")
    os.mkfifo(root / ".ignore")  # opened, it would block the scan (and the watcher) forever
    assert {f.rel_path for f in scan_root(root, GLOBS).files} == {"keep.md"}
    assert IgnoreFiles(str(root)).ignored("drop.md")


def test_nothing_comes_back_from_inside_an_ignored_folder(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    write(root, "cache/a.md", "# a\n")
    write(root, ".gitignore", "cache/\n!cache/a.md\n")
    assert scan_root(root, GLOBS).files == []
    assert IgnoreFiles(str(root)).ignored("cache/a.md")


async def test_an_edited_ignore_file_removes_and_restores_files(tmp_path: Path) -> None:
    root = tree(tmp_path / "vault")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        first = await rf.reindex(root)
        assert first["indexed_files"] == 5
        write(root, ".gitignore", "notes/\n")  # drafts, build and top.md come back
        second = await rf.reindex(root)
        assert second["removed_files"] == 1  # notes/public.md
        assert (await rf.status())["files"] == 8
        assert await rf.search("secret", mode="lexical") == []  # still in notes/
    settings = Settings(db_path=tmp_path / "j.db", use_ignore_files=False)
    async with Rifflux(settings=settings, embedder=CountingEmbedder()) as rf:
        assert (await rf.reindex(root))["indexed_files"] == 10


async def test_the_watcher_follows_an_edited_ignore_file(tmp_path: Path) -> None:
    root = tree(tmp_path / "vault")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder(),
                       watch_paths=[root]) as rf:

        async def files(n: int) -> bool:
            return (await rf.status())["files"] == n

        await eventually(lambda: files(5))
        write(root, "notes/.ignore", "")  # secret.md is no longer ignored
        await eventually(lambda: files(6))
        write(root, "drafts/b.md", "# b\n\nan ignored draft\n")  # a watcher event
        write(root, "fresh.md", "# fresh\n\nnot ignored\n")
        await eventually(lambda: files(7))
        assert await rf.get_file("drafts/b.md") is None and await rf.get_file("fresh.md")
