"""One file on disk -> what the indexer writes: read, hash, decode, chunk.

A plain function of its arguments so it can run in a worker thread or process.
"""

from __future__ import annotations

import hashlib
import stat
from dataclasses import dataclass
from pathlib import Path

from .chunker import ChunkLimits, ParsedDocument, parse_markdown
from .cjk import has_cjk
from .decode import Binary, decode


@dataclass(frozen=True, slots=True)
class Prepared:
    rel_path: str
    sha256: str
    mtime_ns: int
    size: int
    document: ParsedDocument | None  # None: content identical to ``known_sha``
    encoding: str = "utf-8"
    warning: str | None = None  # indexed, but something was replaced or guessed
    #: Whether some chunk holds CJK text (the writer then cuts it for the full-text
    #: index, ``core.cjk``); found here, in the parse worker, off the writer's core.
    cjk: bool = True


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A file that could not be read: reported as an error; its old index is kept."""

    rel_path: str
    error: str


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file that is not markdown text after all (binary, too large, not a regular
    file): reported as a warning, and not (any longer) in the index."""

    rel_path: str
    reason: str


def prepare_file(
    root: Path, rel_path: str, known_sha: str | None, force: bool, limits: ChunkLimits
) -> Prepared | Unreadable | Skipped | None:
    """None when the file has vanished since it was listed."""
    path = root / rel_path
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):  # never opened: a FIFO would block forever
            return Skipped(rel_path, f"not a regular file ({_kind(st.st_mode)}); it is skipped")
        if st.st_size > limits.max_file_bytes:
            return Skipped(rel_path, f"{st.st_size:,} bytes, over the limit of "
                                     f"{limits.max_file_bytes:,} (max_file_bytes); it is skipped")
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Unreadable(rel_path, f"cannot read file: {exc.strerror or exc}")
    sha = hashlib.sha256(data).hexdigest()
    if sha == known_sha and not force:
        return Prepared(rel_path, sha, st.st_mtime_ns, len(data), None)
    decoded = decode(data)
    if isinstance(decoded, Binary):
        return Skipped(rel_path, decoded.reason)
    try:
        document = parse_markdown(decoded.text, limits)
    except (RecursionError, ValueError, TypeError, KeyError, IndexError) as exc:
        # a parser failure on one odd file must not stop the files after it
        return Unreadable(rel_path, f"cannot parse as markdown ({type(exc).__name__}: {exc})")
    cjk = any(has_cjk(c.heading_path) or has_cjk(c.content) for c in document.chunks)
    return Prepared(rel_path, sha, st.st_mtime_ns, len(data), document, decoded.encoding,
                    decoded.warning, cjk)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a file"


#: What ``prepare_many`` answers for each file: (path, None) for one that has vanished.
ParseResult = list[Prepared | Unreadable | Skipped | tuple[str, None]]


def prepare_many(
    root: Path, items: list[tuple[str, str | None]], force: bool, limits: ChunkLimits
) -> ParseResult:
    """``prepare_file`` over several files in one call (one process round trip)."""
    out: ParseResult = []
    for rel, sha in items:
        res = prepare_file(root, rel, sha, force, limits)
        out.append((rel, None) if res is None else res)
    return out
