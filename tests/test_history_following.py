"""Several processes on one index's git history: what one process reads of a repository
and embeds, another process searches (lexically at once, semantically once it holds
the vectors), whether it is read-only or a writer that was not asked to read; on both
stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from .gitrepo import commit, init
from .helpers import Location, eventually
from .test_processes import Driver, drivers, shared  # noqa: F401 (the fixture: both stores)

pytestmark = pytest.mark.anyio

NEW = "Introduce a retry policy for uploads"


async def _finds(driver: Driver, query: str, mode: str, title: str) -> bool:
    titles = await driver("history", query=query, mode=mode, top_k=3)
    return bool(titles) and titles[0] == title


async def test_a_commit_another_process_reads_and_embeds_is_searched_in_every_mode(
        tmp_path: Path, shared: Location) -> None:  # noqa: F811 (the fixture)
    repo = init(tmp_path / "handbook")
    commit(repo, "Add the deployment notes\n\nHow we ship to production.",
           {"docs/deploy.md": "# Deploy\n\nRun the pipeline.\n"})
    db = shared  # (PostgreSQL: followed by LISTEN, the change log's history rows)
    async with drivers(db, []) as (writer,):
        await writer("reindex", path=str(repo))
        await writer("wait_for_history")
        async with drivers(db, [], ["--read-only"]) as (other, reader):
            for follower in (other, reader):  # (what was there when they opened)
                assert await _finds(follower, "deployment notes", "semantic",
                                    "Add the deployment notes")
            commit(repo, f"{NEW}\n\nUploads failed on flaky links; retry three times.",
                   {"docs/deploy.md": "# Deploy\n\nRun the pipeline.\nRetry uploads.\n"})
            await writer("reindex", path=str(repo))  # (a job's end reads the history)
            await writer("wait_for_history")
            for follower in (other, reader):
                assert await _finds(follower, "retry policy uploads", "lexical", NEW)

            async def embedded() -> bool:
                status = await writer("status")
                return bool(status["history"]["pending_embeddings"] == 0)

            await eventually(embedded, within=30)
            for follower in (other, reader):
                async def follows(f: Driver = follower) -> bool:
                    return await _finds(f, "retry policy uploads flaky links", "semantic",
                                        NEW) and await _finds(
                        f, "retry policy uploads flaky links", "hybrid", NEW)

                await eventually(follows, within=30)
            # (the read-only one never reads a repository: it can only have followed)
            assert (await reader("status"))["history"]["commits_read"] == 0
