"""The git history of the indexed folders, searched through the library: real
repositories made with git (commits, a rename, a merge, a rebase that drops commits, a
shallow clone, a non-UTF-8 message, a binary file, a huge commit cut to its limit, a
worktree, a submodule, a truncated pack)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rifflux import Rifflux

from .gitrepo import commit, init
from .helpers import CountingEmbedder

pytestmark = pytest.mark.anyio


def handbook(tmp_path: Path) -> Path:
    repo = init(tmp_path / "handbook")
    commit(repo, "Add the deployment notes\n\nHow we ship to production.",
           {"docs/deploy.md": "# Deploy\n\nRun the pipeline.\n"}, date="2024-01-02T10:00:00Z")
    commit(repo, "Introduce a retry policy for uploads\n\nUploads failed on flaky links; "
           "retry three times with backoff.",
           {"docs/deploy.md": "# Deploy\n\nRun the pipeline.\nRetry uploads three times.\n"},
           author="Grace Hopper <grace@example.org>", date="2024-03-05T10:00:00Z")
    commit(repo, "Write the onboarding guide",
           {"docs/onboarding.md": "# Onboarding\n\nWelcome aboard.\n"},
           date="2024-06-01T10:00:00Z")
    return repo


async def test_a_commit_is_found_by_its_message_lexically(tmp_path: Path) -> None:
    repo = handbook(tmp_path)
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(repo)
        await rf.wait_for_history()
        answer = await rf.search_history("retry policy", mode="lexical")
    hits = answer["results"]
    assert hits and hits[0]["title"] == "Introduce a retry policy for uploads"
    assert hits[0]["author"] == "Grace Hopper"
    assert hits[0]["paths"][0]["path"] == "docs/deploy.md"
    assert hits[0]["paths"][0]["change"] == "modified"
    assert hits[0]["match"] is not None and "**Retry**" in hits[0]["match"]["text"]
    assert answer["repositories"][0]["commits"] == 3
