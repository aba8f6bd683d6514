"""A repository left out of the history by the ignore rules (README: "Leaving a
repository's history out"): a submodule in an ignored or excluded folder, and a
repository whose ``.git`` an ignore file names; real repositories made with git."""

from __future__ import annotations

from pathlib import Path

import pytest

from rifflux import Rifflux
from rifflux.config import Settings

from .gitrepo import commit, git, init
from .helpers import CountingEmbedder

pytestmark = pytest.mark.anyio


def project(tmp_path: Path) -> Path:
    """A project with its notes, and a vendored library as a submodule in ``vendor/lib``."""
    lib = init(tmp_path / "lib")
    commit(lib, "Fix the parser's handling of tabs", {"parser.md": "# Parser\n\ntabs\n"})
    main = init(tmp_path / "main")
    commit(main, "Write the deployment notes", {"docs/deploy.md": "# Deploy\n\nship it\n"})
    git(main, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib),
        "vendor/lib")
    commit(main, "Vendor the parser library")
    return main


async def titles(rf: Rifflux) -> set[str]:
    await rf.wait_for_history()
    answer = await rf.search_history("parser deployment notes vendor", mode="lexical")
    return {h["title"] for h in answer["results"]}


async def test_a_submodule_in_an_ignored_or_excluded_folder_has_no_history(
        tmp_path: Path) -> None:
    main = project(tmp_path)
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(main)
        assert "Fix the parser's handling of tabs" in await titles(rf)  # (not ignored yet)
        (main / ".gitignore").write_text("vendor/\n")
        await rf.reindex(main)  # (an ignore file takes effect at the next scan)
        assert await titles(rf) == {"Write the deployment notes", "Vendor the parser library"}
        assert [f for f in await rf.files() if f["path"].startswith("vendor/")] == []
        (main / ".gitignore").unlink()
        await rf.reindex(main)
        assert "Fix the parser's handling of tabs" in await titles(rf)  # (it comes back)
    settings = Settings(db_path=tmp_path / "x.db", exclude=(*Settings().exclude, "vendor"))
    async with Rifflux(settings=settings, embedder=CountingEmbedder()) as rf:
        await rf.reindex(main)
        assert await titles(rf) == {"Write the deployment notes", "Vendor the parser library"}


async def test_a_git_pattern_in_an_ignore_file_leaves_the_history_out_and_the_notes_in(
        tmp_path: Path) -> None:
    main = project(tmp_path)
    (main / ".riffluxignore").write_text("/.git\n")  # (anchored: this folder's alone)
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(main)
        await rf.wait_for_history()
        answer = await rf.search_history("deployment notes", mode="lexical")
        # the project's own history is out; the submodule's, its own repository, is in
        assert [r["path"] for r in answer["repositories"]] == [str(main / "vendor" / "lib")]
        assert answer["results"] == []
        assert await titles(rf) == {"Fix the parser's handling of tabs"}
        assert (await rf.search("ship", mode="lexical"))[0]["path"] == "docs/deploy.md"
        (main / ".riffluxignore").write_text(".git\n")  # (at any depth, as git reads it)
        await rf.reindex(main)
        assert await titles(rf) == set()
        assert (await rf.search_history("parser", mode="lexical"))["repositories"] == []
        # an indexed folder inside the repository: the folder's own ignore files decide
        (main / "docs" / ".riffluxignore").write_text("/.git/\n")
    async with Rifflux(tmp_path / "docs.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(main / "docs")
        assert await titles(rf) == set()
        (main / "docs" / ".riffluxignore").unlink()
        await rf.reindex(main / "docs")
        assert "Write the deployment notes" in await titles(rf)
    # the ignore files turned off (--no-ignore-files): the pattern means nothing
    settings = Settings(db_path=tmp_path / "all.db", use_ignore_files=False)
    async with Rifflux(settings=settings, embedder=CountingEmbedder()) as rf:
        await rf.reindex(main)
        assert "Write the deployment notes" in await titles(rf)
