"""File bytes -> text, by a simple rule that needs no detection library.

1. A byte order mark names the encoding: UTF-8, UTF-16 (LE/BE) or UTF-32 (LE/BE).
2. Without one, NUL bytes or the signature of a known binary format (PNG, JPEG, GIF,
   PDF, ZIP, gzip) mean the file is not text: it is skipped, with that reason.
3. Text that is valid UTF-8 is UTF-8.
4. Text with valid multi-byte UTF-8 sequences and a few bytes that are not (at most
   1 in 100, or no more than the valid sequences: legacy 8-bit text has almost none
   of those) is UTF-8 that was damaged: those bytes become U+FFFD and the file is
   indexed with a warning.
5. Anything else is legacy 8-bit text, read as Windows-1252 (a superset of Latin-1
   for printable text; its five unassigned bytes are read as Latin-1).

The encoding used is recorded with the file (``get_file`` shows it). ``read_lines``
reads lines of a file as it is on disk now, by the same rule (``get_file`` with a range).
"""

from __future__ import annotations

import codecs
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidArgumentError, RiffluxError

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same bytes
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive (or an Office document)"),
    (b"\x1f\x8b", "a gzip archive"),
)
#: A valid multi-byte UTF-8 sequence (a lead byte and its continuation bytes).
_UTF8_MULTIBYTE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")
_SNIFF = 8192


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    encoding: str  # what the text was read as: utf-8, utf-16-le, cp1252, ...
    warning: str | None = None  # something was lost or guessed


@dataclass(frozen=True, slots=True)
class Binary:
    reason: str


def decode(data: bytes) -> Decoded | Binary:
    """The text of a file's bytes, or why it has none (see the module's docstring)."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            text = data[len(bom):].decode(encoding, errors="replace")  # (BOM cut off)
            bad = text.count("\ufffd")
            return Decoded(text, encoding, _replaced(bad, encoding) if bad else None)
    head = data[:_SNIFF]
    for signature, kind in _SIGNATURES:
        if head.startswith(signature):
            return Binary(f"not text: {kind} with a markdown name; it is skipped")
    if b"\x00" in head:
        return Binary("not text: it contains NUL bytes (a binary file with a markdown name?); "
                      "it is skipped")
    try:
        return Decoded(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") - data.count(b"\xef\xbf\xbd")  # those written as such
    # damaged UTF-8: some valid multi-byte text, and few bad bytes (1 in 100, or no more
    # than the valid sequences, counted only when needed: a full scan)
    if _UTF8_MULTIBYTE.search(data) and (
            bad * 100 <= len(data) or bad <= len(_UTF8_MULTIBYTE.findall(data))):
        return Decoded(text, "utf-8", _replaced(bad, "UTF-8")
                       + " (save the file as UTF-8 to fix it)")
    return Decoded(_cp1252(data), "cp1252")


def _replaced(bad: int, encoding: str) -> str:
    if bad == 1:
        return f"1 byte is not valid {encoding}; it was replaced by U+FFFD"
    return f"{bad} bytes are not valid {encoding}; they were replaced by U+FFFD"


def _cp1252(data: bytes) -> str:
    return data.decode("cp1252", errors="surrogateescape").translate(_UNASSIGNED)


#: cp1252's five unassigned bytes arrive as lone surrogates: read them as Latin-1.
_UNASSIGNED = {0xDC00 + b: b for b in (0x81, 0x8D, 0x8F, 0x90, 0x9D)}


def read_lines(path: Path, start: int | None, end: int | None,
               ) -> tuple[int, int, int, str, str]:
    """Lines ``start``..``end`` (1-based, inclusive, as ``str.splitlines()`` counts them)
    of the file as it is on disk now: (start and end clamped to the file, total lines,
    text, the sha256 of the file's bytes). A start before line 1 is line 1, so that a
    hit's ``line_start - 5`` reads from the top of the file.

    Raises ``InvalidArgumentError`` for a range that cannot be read, ``RiffluxError`` when
    the file is gone.
    """
    data = read_indexed(path)
    decoded = decode(data)
    if isinstance(decoded, Binary):
        raise RiffluxError(f"{path} is {decoded.reason.removeprefix('not text: ')}")
    lines = decoded.text.lstrip("\ufeff").splitlines()
    total = len(lines)
    first = 1 if start is None else max(start, 1)
    if end is not None and end < first:
        raise InvalidArgumentError(
            f"lines {start}-{end} are not a range: end_line is 1 or more and not before "
            "start_line")
    if first > max(total, 1):
        raise InvalidArgumentError(
            f"start_line {first} is past the end of {path.name} ({total} lines)")
    last = total if end is None else min(end, total)
    text = "\n".join(lines[first - 1 : last])
    return first, last, total, text, hashlib.sha256(data).hexdigest()


def read_indexed(path: Path) -> bytes:
    """An indexed file's bytes as they are on disk now; ``RiffluxError`` saying what to do
    when it is gone or cannot be read."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise RiffluxError(f"{path} is no longer on disk; reindex its folder") from None
    except OSError as exc:
        raise RiffluxError(f"cannot read {path}: {exc.strerror or exc}") from exc
