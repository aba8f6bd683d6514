"""One file on disk -> what the indexer writes: read, hash, decode, chunk.

A plain function of its arguments so it can run in a worker thread or process.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidArgumentError, RiffluxError
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


def read_lines(path: Path, start: int | None, end: int | None) -> tuple[int, int, int, str]:
    """Lines ``start``..``end`` (1-based, inclusive, as ``str.splitlines()`` counts them)
    of the file as it is on disk now: (start, end clamped to the file, total lines, text).

    Raises ``InvalidArgumentError`` for a range that cannot be read, ``RiffluxError`` when
    the file is gone.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RiffluxError(f"{path} is no longer on disk; reindex its folder") from None
    except OSError as exc:
        raise RiffluxError(f"cannot read {path}: {exc.strerror or exc}") from exc
    lines = data.decode("utf-8", errors="replace").lstrip("\ufeff").splitlines()
    total = len(lines)
    first = 1 if start is None else start
    if first < 1 or (end is not None and end < first):
        raise InvalidArgumentError(
            f"lines {start}-{end} are not a range: start_line is 1 or more and end_line is "
            "not before it")
    if first > max(total, 1):
        raise InvalidArgumentError(
            f"start_line {first} is past the end of {path.name} ({total} lines)")
    last = total if end is None else min(end, total)
    return first, last, total, "\n".join(lines[first - 1 : last])
