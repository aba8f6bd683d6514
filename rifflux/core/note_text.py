"""A note's bytes as edits see them, and edits applied back to bytes: pure functions.

Edits work on the note's text with every line break written ``\\n`` (``NoteText.text``,
lines as ``str.splitlines()`` counts them, so line numbers agree with the index). They
are applied to the decoded text as it was, so that everything an edit does not touch
keeps its bytes: the front matter, the other lines, each line's own break (CRLF, LF or
CR) and the encoding (UTF-8 with or without a byte order mark, UTF-16/32, cp1252).
New lines take the note's most common line break.

A note whose bytes do not decode and encode back to themselves (UTF-8 with bad bytes,
read with U+FFFD in their place) is not edited: the edit would change bytes it did not
mean to. ``write_note`` with ``overwrite`` replaces such a note whole.
"""

from __future__ import annotations

import bisect
import codecs
import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import InvalidArgumentError
from .decode import Binary, decode

#: What ``str.splitlines`` breaks lines at (CRLF counts as one break).
_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
_BOMS = {"utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE,
         "utf-32-le": codecs.BOM_UTF32_LE, "utf-32-be": codecs.BOM_UTF32_BE}
#: cp1252's five unassigned bytes, read as Latin-1 characters (``core.decode``).
_CP1252_BACK = {b: 0xDC00 + b for b in (0x81, 0x8D, 0x8F, 0x90, 0x9D)}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace ``text[start:end]`` of a ``NoteText`` with ``new`` (line breaks as ``\\n``)."""

    start: int
    end: int
    new: str


def encode(text: str, encoding: str, bom: bytes = b"") -> bytes:
    """``text`` as the bytes of a note saved in ``encoding`` (after ``bom``)."""
    try:
        if encoding == "cp1252":
            return bom + text.translate(_CP1252_BACK).encode("cp1252", "surrogateescape")
        return bom + text.encode(encoding)
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start:exc.end]
        raise InvalidArgumentError(
            f"the note is saved as {encoding}, which cannot hold {bad!r}; leave that "
            "text out, or replace the whole note (write_note with overwrite) to save it "
            "as UTF-8") from None


@dataclass(frozen=True, slots=True)
class NoteText:
    text: str  # each line, then "\n" if it had a break
    original: str  # the decoded text as it is
    encoding: str
    bom: bytes
    newline: str  # the break new lines get: the note's most common one ("\n" if none)
    #: Where each line starts in ``text`` and in ``original`` (with one past the end).
    starts: tuple[int, ...]
    original_starts: tuple[int, ...]

    @classmethod
    def of(cls, data: bytes, name: str) -> NoteText:
        """The note ``name``'s bytes, ready to edit; ``InvalidArgumentError`` when they
        cannot be edited without changing bytes the edit does not touch."""
        decoded = decode(data)
        if isinstance(decoded, Binary):
            raise InvalidArgumentError(f"{name} is {decoded.reason.removeprefix('not text: ')}"
                                       "; it cannot be edited as a note")
        bom = _BOMS.get(decoded.encoding, b"")
        if decoded.encoding == "utf-8" and data.startswith(codecs.BOM_UTF8):
            bom = codecs.BOM_UTF8
        original = decoded.text
        if decoded.warning is not None or encode(original, decoded.encoding, bom) != data:
            raise InvalidArgumentError(
                f"{name} has bytes that are not valid {decoded.encoding}; an edit would "
                "change them: fix the file, or replace it whole (write_note with overwrite)")
        parts: list[str] = []
        starts: list[int] = []
        original_starts: list[int] = []
        breaks: Counter[str] = Counter()
        at = original_at = 0
        for line in original.splitlines(keepends=True):
            cut = 2 if line.endswith("\r\n") else 1 if line[-1] in _BREAKS else 0
            content = line[: len(line) - cut]
            starts.append(at)
            original_starts.append(original_at)
            parts.append(content + ("\n" if cut else ""))
            at += len(parts[-1])
            original_at += len(line)
            if cut:
                breaks[line[len(line) - cut:]] += 1
        starts.append(at)
        original_starts.append(original_at)
        newline = max(("\n", "\r\n", "\r"), key=lambda b: (breaks[b], b == "\n"))
        return cls("".join(parts), original, decoded.encoding, bom, newline,
                   tuple(starts), tuple(original_starts))

    @property
    def line_count(self) -> int:
        return len(self.starts) - 1

    def _original_at(self, pos: int) -> int:
        line = bisect.bisect_right(self.starts, pos) - 1
        return self.original_starts[line] + pos - self.starts[line]

    def apply(self, edits: Sequence[Edit]) -> tuple[bytes, str, list[tuple[int, int]]]:
        """The note's bytes with ``edits`` made, its new text (breaks as ``\\n``), and the
        lines each edit left its text on (1-based, inclusive, blank lines around it left
        out; an edit that only removed text: the line where it was)."""
        ordered = sorted(edits, key=lambda e: (e.start, e.end))
        for before, after in zip(ordered, ordered[1:], strict=False):
            if after.start < before.end:
                raise InvalidArgumentError("two edits of one call overlap; make them one")
        pieces: list[str] = []
        normal: list[str] = []
        last = last_normal = 0
        for e in ordered:
            start, end = self._original_at(e.start), self._original_at(e.end)
            pieces += [self.original[last:start], e.new.replace("\n", self.newline)]
            normal += [self.text[last_normal:e.start], e.new]
            last, last_normal = end, e.end
        pieces.append(self.original[last:])
        normal.append(self.text[last_normal:])
        new_text = "".join(normal)
        lines: list[tuple[int, int]] = []
        shift = 0
        for e in ordered:  # (the blank lines an edit puts around its text not counted)
            words = e.new.strip("\n")
            at = e.start + shift + (len(e.new) - len(e.new.lstrip("\n")) if words else 0)
            first = new_text.count("\n", 0, at) + 1
            lines.append((first, new_text.count("\n", 0, at + max(len(words) - 1, 0)) + 1))
            shift += len(e.new) - (e.end - e.start)
        return encode("".join(pieces), self.encoding, self.bom), new_text, lines


def line_ranges(ranges: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Line ranges merged where they touch, in order: ``[[first, last], ...]``."""
    out: list[list[int]] = []
    for first, last in sorted(ranges):
        if out and first <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], last)
        else:
            out.append([first, last])
    return out


def normal(text: str) -> str:
    """Text a caller gave, with its line breaks written ``\\n``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def whole_lines(text: str) -> list[list[int]]:
    """Every line of a new note, as a range (none for an empty one)."""
    count = len(text.splitlines())
    return [[1, count]] if count else []
