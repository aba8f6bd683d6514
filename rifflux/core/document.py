"""One file on disk -> what the indexer writes: read, hash, extract (by kind), chunk.
Each chunk's language is not told here: it is found once the file is committed
(``core.language.chunk_languages``, the indexer's languages pass), off the path to a
lexically searchable file.

A plain function of its arguments so it can run in a worker thread or process.
"""

from __future__ import annotations

import hashlib
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from .chunker import ChunkLimits, ParsedDocument
from .cjk import has_cjk
from .extract import Refused, Source, extractor_for
from .extract.sections import chunked, cut_to


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
    kind: str = "markdown"  # which extractor read it (``core.extract``)


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A file that could not be read: reported as an error; its old index is kept."""

    rel_path: str
    error: str


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file that cannot be indexed (binary, too large, not a regular file, an
    encrypted PDF, a zip bomb): reported as a warning, and not (any longer) in the
    index."""

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
    extractor = extractor_for(rel_path)
    source = Source(rel_path, data, time.monotonic() + limits.extract_seconds)
    try:
        extracted = extractor.extract(source, limits)
        if extracted.document is None:
            extracted = cut_to(extracted, limits.max_text_chars)
        document = chunked(extracted, limits)
    except Refused as exc:
        return Skipped(rel_path, str(exc))
    except Exception as exc:  # noqa: BLE001 (a hostile file costs that file alone)
        return Unreadable(rel_path, f"cannot parse as {extractor.kind} "
                                    f"({type(exc).__name__}: {exc})")
    cjk = any(has_cjk(c.heading_path) or has_cjk(c.content) for c in document.chunks)
    return Prepared(rel_path, sha, st.st_mtime_ns, len(data), document, extracted.encoding,
                    extracted.warning, cjk, extractor.kind)


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
