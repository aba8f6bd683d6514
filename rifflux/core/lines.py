"""Where a chunk's text came from: 1-based, inclusive source lines.

Lines are counted as ``str.splitlines()`` counts them (the chunker joins the
file's lines with ``\\n`` before parsing, so the two agree). A chunk's text is
rendered from its blocks (inline markup flattened, list markers redrawn), so
its lines are found by walking its words through the block's source, in order:
its first word is on ``line_start`` and its last on ``line_end`` (or, when it ends with a
code block, that block's closing fence).
"""

from __future__ import annotations

import bisect
import re

#: Words that rendering never invents: at least one letter (list numbers are redrawn).
_WORD = re.compile(r"\w*[^\W\d_]\w*")
#: How far past the cursor a word is looked for before it counts as not in the source
#: (what rendering drops between two words, a link's address say, is far shorter).
_LOOKAHEAD = 512
#: A piece that ends with a fence line, and such a line in the source.
_FENCE_LAST = re.compile(r"\n[ \t]*(`{3,}|~{3,})[ \t]*$")
_CLOSING_FENCE = re.compile(r"\n[ \t]*(`{3,}|~{3,})[ \t]*(?=\n|$)")


class SourceMap:
    """Offsets of ``body`` (the text after any front matter) -> file line numbers."""

    def __init__(self, body: str, first_line: int = 1) -> None:
        self._body = body
        self._first = first_line
        self._starts = [0, *(m.end() for m in re.finditer("\n", body))]
        #: Blocks are located in document order: none starts before the last word found
        #: (two blocks parsed in one step share a span, and the second one starts after
        #: the first one's words).
        self._cursor = 0

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset) - 1 + self._first

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The lines of ``body[start:end]``, without its leading and trailing blank space."""
        text = self._body[start:end]
        stripped = text.strip()
        if not stripped:
            line = self.line(start)
            return line, line
        lead = len(text) - len(text.lstrip())
        return self.line(start + lead), self.line(start + lead + len(stripped) - 1)

    def locate(self, pieces: list[str], start: int, end: int) -> list[tuple[int, int]]:
        """The lines of consecutive pieces of text rendered from ``body[start:end]`` (the
        blocks of a document are located in order)."""
        start = min(max(start, self._cursor), end)
        fallback = self.span(start, end)  # after what earlier blocks' words took
        found = list(_WORD.finditer(self._body, start, end))
        source = [m.group() for m in found]
        out: list[tuple[int, int]] = []
        j = 0  # words before j are behind us
        for piece in pieces:
            first = last = -1
            words = _WORD.findall(piece)
            if words and source[j : j + len(words)] == words:
                # (nearly always: the piece's words are the source's next ones, in order;
                # one comparison instead of a walk, with the walk's answer)
                first, j = found[j].start(), j + len(words)
                last = found[j - 1].end() - 1
                words = []
            for word in words:
                k, stop = j, min(len(source), j + _LOOKAHEAD)
                while k < stop and source[k] != word:
                    k += 1
                if k == stop:
                    continue  # not in the source (or too far ahead to trust)
                if first < 0:
                    first = found[k].start()
                last = found[k].start() + len(word) - 1
                j = k + 1
            if first < 0:  # no word to go by: the line after the previous piece, or
                # the first piece's first line, found in the source (a block sharing its
                # span with the one before starts after that one's words, perhaps on
                # their line)
                line = min(out[-1][1] + 1, fallback[1]) if out else self._found(
                    piece, start, end, fallback[0])
                out.append((line, line))
            else:
                if _FENCE_LAST.search(piece):  # a code block's closing fence has no word
                    upto = found[j].start() if j < len(found) else end
                    fence = _CLOSING_FENCE.search(self._body, last, upto)
                    last = fence.end() - 1 if fence else last
                out.append((self.line(first), self.line(last)))
                self._cursor = last + 1
        return out

    def _found(self, piece: str, start: int, end: int, otherwise: int) -> int:
        """The line of ``body[start:end]`` where a wordless piece's first line is (its
        fence, its rule), else ``otherwise``."""
        head = piece.strip().partition("\n")[0].strip()
        at = self._body.find(head, start, end) if head else -1
        return otherwise if at < 0 else self.line(at)
