"""Real git repositories for the history's tests, made with the ``git`` executable."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

#: A fixed identity and no user configuration: the tests make the same repositories
#: on every machine.
ENV = {"GIT_AUTHOR_NAME": "Ada Lovelace", "GIT_AUTHOR_EMAIL": "ada@example.org",
       "GIT_COMMITTER_NAME": "Ada Lovelace", "GIT_COMMITTER_EMAIL": "ada@example.org",
       "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
       "GIT_ALLOW_PROTOCOL": "file"}


def git(repo: Path, *args: str, env: dict[str, str] | None = None,
        input: bytes | None = None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                          env={**os.environ, **ENV, **(env or {})}, input=input, check=False)
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr.decode()}")
    return done.stdout.decode("utf-8", "replace").strip()


def init(repo: Path) -> Path:
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "protocol.file.allow", "always")
    return repo


def commit(repo: Path, message: str | bytes, files: Mapping[str, str | bytes] | None = None, *,
           author: str | None = None, date: str | None = None,
           remove: tuple[str, ...] = ()) -> str:
    """Write ``files``, remove ``remove``, commit everything; the new commit's hash."""
    for rel, text in (files or {}).items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
    for rel in remove:
        git(repo, "rm", "-q", rel)
    git(repo, "add", "-A")
    env: dict[str, str] = {}
    if author is not None:
        name, _, email = author.partition(" <")
        env |= {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email.rstrip(">")}
    if date is not None:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    raw = message if isinstance(message, bytes) else message.encode()
    git(repo, "commit", "-q", "--allow-empty", "-F", "-", env=env, input=raw)
    return git(repo, "rev-parse", "HEAD")


def handbook(tmp_path: Path) -> Path:
    """A docs repository of three commits by two authors (the history tests' own)."""
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
