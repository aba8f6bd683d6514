"""One file on disk -> what the indexer writes: read, hash, decode, chunk.

A plain function of its arguments so it can run in a worker thread or process.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from .chunker import ChunkLimits, ParsedDocument, parse_markdown


@dataclass(frozen=True, slots=True)
class Prepared:
    rel_path: str
    sha256: str
    mtime_ns: int
    size: int
    document: ParsedDocument | None  # None: content identical to ``known_sha``


@dataclass(frozen=True, slots=True)
class Unreadable:
    rel_path: str
    error: str


def prepare_file(
    root: Path, rel_path: str, known_sha: str | None, force: bool, limits: ChunkLimits
) -> Prepared | Unreadable | None:
    """None when the file has vanished since it was listed."""
    path = root / rel_path
    try:
        st = path.stat()
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Unreadable(rel_path, f"cannot read file: {exc.strerror or exc}")
    sha = hashlib.sha256(data).hexdigest()
    if sha == known_sha and not force:
        return Prepared(rel_path, sha, st.st_mtime_ns, len(data), None)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Unreadable(
            rel_path,
            f"not UTF-8 text (byte {exc.start}: {exc.reason}); convert it to UTF-8 to index it",
        )
    try:
        document = parse_markdown(text, limits)
    except (RecursionError, ValueError, TypeError, KeyError, IndexError) as exc:
        # a parser failure on one odd file must not stop the files after it
        return Unreadable(rel_path, f"cannot parse as markdown ({type(exc).__name__}: {exc})")
    return Prepared(rel_path, sha, st.st_mtime_ns, len(data), document)


def prepare_many(
    root: Path, items: list[tuple[str, str | None]], force: bool, limits: ChunkLimits
) -> list[Prepared | Unreadable | tuple[str, None]]:
    """``prepare_file`` over several files in one call (one process round trip)."""
    out: list[Prepared | Unreadable | tuple[str, None]] = []
    for rel, sha in items:
        res = prepare_file(root, rel, sha, force, limits)
        out.append((rel, None) if res is None else res)
    return out
