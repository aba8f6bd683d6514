"""A commit as a document: what full-text search indexes of it (its title, body, the
paths it changed, the summary of its change) and the one text its vector is made of,
keyed by that text's hash (a commit is embedded once, and a text already embedded, a
chunk's or a cherry-picked commit's, is never embedded again)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .git import RawCommit

#: The paths a commit's document names, at most (a vendored tree of 100,000 files
#: still has every path in ``commit_paths``, for ``history(path)``).
DOCUMENT_PATHS = 2_000
#: Characters of the embedded text: about the model's 256-token cut.
EMBED_CHARS = 1_200


@dataclass(frozen=True, slots=True)
class CommitDocument:
    title: str
    body: str
    paths: str
    summary: str
    #: What the commit's vector is made of, and its hash (the key of its vector).
    text: str
    content_hash: str


def split_message(message: str) -> tuple[str, str]:
    """A message's title (its first paragraph, on one line) and body."""
    head, _, body = message.strip().partition("\n\n")
    return " ".join(head.split()), body.strip()


def document(commit: RawCommit) -> CommitDocument:
    title, body = split_message(commit.message)
    names = [p.path if p.old_path is None else f"{p.old_path} -> {p.path}"
             for p in commit.paths[:DOCUMENT_PATHS]]
    paths = "\n".join(names)
    text = embed_text(title, body, paths, commit.summary)
    return CommitDocument(title=title, body=body, paths=paths, summary=commit.summary,
                          text=text, content_hash=text_hash(text))


def embed_text(title: str, body: str, paths: str, summary: str) -> str:
    """The text a commit's vector is made of, from its document's fields (read back
    from the store, the same text again): its message, its first paths, its change."""
    first = "\n".join(paths.split("\n", 20)[:20])
    return "\n".join(part for part in (title, body, first, summary) if part)[:EMBED_CHARS]


def text_hash(text: str) -> str:
    """The key of a text's vector (as a chunk's ``content_hash``)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
