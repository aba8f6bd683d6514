"""A result's snippet: up to ~240 characters of the chunk around the query's terms, with
the matches marked ``**...**``.

Terms are matched as the lexical branch matches them: whole tokens (letters and
digits; ``_`` separates, as in FTS5's unicode61), case and accents ignored,
Porter stems compared (``configuring`` finds ``configuration``), ``prefix*``
terms by prefix, phrases only where the whole phrase occurs; stopwords are never
marked (the lexical branch drops them). The window with the most distinct terms
wins. A chunk with no term in common (a semantic hit) gets its most query-like
sentence, by shared character trigrams, or else its opening.

``Snippets(query)`` does the query's part once per search; ``make`` is cheap
per hit (a search's ten snippets take a fraction of a millisecond).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from typing import NamedTuple

from .cjk import OTHER_WORD, is_cjk_word, pieces
from .fts_query import query_terms
from .words import fold, stem

WIDTH = 240
#: A token as FTS5's unicode61 tokenizer cuts them: letters and digits (``_`` separates),
#: with CJK runs apart (they are matched as CJK words).
_WORD = OTHER_WORD
#: The ``#`` markers of ATX heading lines (``#tag`` lines are text, not headings).
_HEADING_MARK = re.compile(r"^#{1,6}(?:[ \t]+|$)", re.MULTILINE)
#: The rest of a word in lowered ASCII text whose "_" are spaces.
_WORD_REST = re.compile(r"[a-z0-9]*")
_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n")


class Found(NamedTuple):
    """A chunk's text as a snippet is cut from it: whitespace runs made one space, the
    query's matches (start, end, term) in order, and where a snippet without matches
    starts."""

    text: str
    marks: list[tuple[int, int, str]]
    start: int


class Snippets:
    """The snippets of one query's hits."""

    def __init__(self, query: str, width: int = WIDTH) -> None:
        self._width = width
        terms = query_terms(query)
        # CJK words are found inside running text, as the index finds them (core.cjk):
        # a sentence by its bigrams
        self._cjk = tuple(sorted({p for w, _ in terms.words if is_cjk_word(w)
                                  for p in pieces(w)}
                                 | {w for p in terms.phrases for w in p if is_cjk_word(w)},
                                 key=len, reverse=True))
        # a term such as snake_case is a phrase of tokens to FTS5, as here
        split = [(_WORD.findall(w), prefix) for w, prefix in terms.words
                 if not is_cjk_word(w)]
        mixed = [w for p in terms.phrases if any(map(is_cjk_word, p)) for w in p
                 if not is_cjk_word(w)]  # the other words of a phrase with CJK in it
        self._stems = frozenset([*(stem(fold(t[0])) for t, p in split if len(t) == 1
                                   and not p), *(stem(fold(w)) for w in mixed)])
        self._prefixes = tuple(fold(t[0]) for t, p in split if len(t) == 1 and p)
        self._phrases = tuple(
            tuple(stem(fold(w)) for w in phrase)
            for phrase in [*(p for p in terms.phrases if not any(map(is_cjk_word, p))),
                           *(tuple(t) for t, _ in split if len(t) > 1)])
        heads = {s[:3] for s in self._stems} | {p[0][:3] for p in self._phrases if p}
        # ASCII text: a word may match where one of these starts it (str.find on the text
        # lowered, "_" made a space: no pattern compiled per query)
        self._starts = tuple(heads | set(self._prefixes))
        self._heads = frozenset(heads)
        words = [w for w, _ in terms.words] + [w for p in terms.phrases for w in p]
        folded = " ".join(fold(w) for w in words)
        self._trigrams = {folded[i : i + 3] for i in range(len(folded) - 2)
                          if " " not in folded[i : i + 3]}

    def make(self, content: str) -> str:
        return self.clip(self.find(content), self._width)

    def find(self, content: str) -> Found:
        """What ``clip`` needs of ``content``, for any width: the matching is done once.
        The heading lines the chunk opens with are left out (the breadcrumb names them),
        unless the query matches there only: then the snippet shows why it matched."""
        text = " ".join(_without_headings(content).split())
        if not self._starts and not self._cjk:
            return Found(text, [], 0)
        marks = self._marks_in(text)
        if not marks and _HEADING_MARK.match(content):
            whole = " ".join(_HEADING_MARK.sub("", content).split())
            if marks_there := self._marks_in(whole):
                return Found(whole, marks_there, 0)
        return Found(text, marks, 0 if marks else self._likely_sentence(text))

    @staticmethod
    def clip(found: Found, width: int) -> str:
        """The snippet of a ``find`` answer, ``width`` characters wide (marks aside). A
        window that would run past the end starts earlier, so that the width is used."""
        if not found.marks:
            start = found.start
        else:
            start = _best_window(found.marks, width)
        start = max(0, min(start, len(found.text) - width))
        return _clip(found.text, start, width, [(s, e) for s, e, _ in found.marks])

    def _marks_in(self, text: str) -> list[tuple[int, int, str]]:
        marks = self._marks(text) if self._starts else []
        return self._cjk_marks(text, marks) if self._cjk else marks

    # ------------------------------------------------------------ matching

    def _marks(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, term) of every match, in order."""
        if text.isascii():
            lowered = text.lower().replace("_", " ")
            found: set[int] = set()
            for head in self._starts:
                at = lowered.find(head)
                while at >= 0:
                    if not at or not lowered[at - 1].isalnum():
                        found.add(at)
                    at = lowered.find(head, at + 1)
            words = [(at, _word_end(lowered, at)) for at in sorted(found)]
        else:
            heads, prefixes = self._heads, self._prefixes
            words = [(m.start(), m.end()) for m in _WORD.finditer(text)
                     if (f := fold(m.group()))[:3] in heads
                     or (prefixes and f.startswith(prefixes))]
        marks: list[tuple[int, int, str]] = []
        skip_to = 0
        for start, end in words:
            if start < skip_to:
                continue
            folded = fold(text[start:end])
            stemmed = stem(folded)
            phrase = self._phrase_at(text, end, stemmed)
            if phrase is not None:
                marks.append((start, phrase[0], phrase[1]))
                skip_to = phrase[0]
            elif stemmed in self._stems or (self._prefixes
                                            and folded.startswith(self._prefixes)):
                marks.append((start, end, stemmed))
        return marks

    def _cjk_marks(self, text: str,
                   marks: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
        """``marks`` with every occurrence of the query's CJK words added; words that
        overlap or touch make one mark (the bigrams of ``人工智能``, of a sentence)."""
        normal = unicodedata.normalize("NFKC", text) if not text.isascii() else text
        if len(normal) != len(text):  # offsets must point into text: match it as it is
            normal = text
        spans: list[tuple[int, int]] = []
        for word in self._cjk:
            at = normal.find(word)
            while at >= 0:
                spans.append((at, at + len(word)))
                at = normal.find(word, at + 1)
        joined: list[list[int]] = []
        for start, end in sorted(spans):
            if joined and start <= joined[-1][1]:
                joined[-1][1] = max(joined[-1][1], end)
            else:
                joined.append([start, end])
        found = list(marks)
        for start, end in joined:
            if not any(s < end and start < e for s, e, _ in marks):
                found.append((start, end, normal[start:end]))
        return sorted(found)

    def _phrase_at(self, text: str, end: int, first: str) -> tuple[int, str] | None:
        """Where a phrase starting with a word of stem ``first`` (ending at ``end``) ends."""
        for phrase in self._phrases:
            if phrase[0] != first:
                continue
            position, ok = end, True
            for want in phrase[1:]:
                m = _WORD.search(text, position)
                if m is None or text[position : m.start()].strip(" ,;:-_/.") or \
                        stem(fold(m.group())) != want:
                    ok = False
                    break
                position = m.end()
            if ok:
                return position, " ".join(phrase)
        return None

    def _likely_sentence(self, text: str) -> int:
        """Where the sentence sharing the most character trigrams with the query starts."""
        folded = _fold_keeping_length(text)
        ends = [m.end() for m in _SENTENCE_END.finditer(folded)]
        found: dict[int, set[str]] = {}
        for trigram in self._trigrams:
            at = folded.find(trigram)
            while at >= 0:
                found.setdefault(bisect.bisect_right(ends, at), set()).add(trigram)
                at = folded.find(trigram, at + 1)
        if not found:
            return 0
        best = max(found, key=lambda i: (len(found[i]), -i))
        return ends[best - 1] if best > 0 else 0


def _word_end(lowered: str, at: int) -> int:
    rest = _WORD_REST.match(lowered, at)
    assert rest is not None  # (it matches the empty string too)
    return rest.end()


def _without_headings(content: str) -> str:
    """The chunk's text after the heading lines it opens with (the result's breadcrumb
    names them already), unless there is nothing else."""
    lines = content.split("\n")
    i = 0
    while i < len(lines) and (not lines[i].strip() or _HEADING_MARK.match(lines[i])):
        i += 1
    return "\n".join(lines[i:]) if i < len(lines) else content


def _fold_keeping_length(text: str) -> str:
    """``fold`` character by character, so that offsets still point into ``text``."""
    if text.isascii():
        return text.lower()
    return "".join((fold(c) or c)[:1] for c in text)


def snippet(content: str, query: str, width: int = WIDTH) -> str:
    """The snippet of one ``content`` for ``query`` (``Snippets`` does many at once)."""
    return Snippets(query, width).make(content)


def _best_window(marks: list[tuple[int, int, str]], width: int) -> int:
    """Where a window of ``width`` holding the most distinct terms starts (a little
    before its first match, so the match has context): two pointers over the marks."""
    best, best_score = marks[0][0], 0
    reach = width * 3 // 4
    counts: dict[str, int] = {}
    j = 0
    for start, _, term in marks:
        while j < len(marks) and marks[j][1] <= start + reach:
            counts[marks[j][2]] = counts.get(marks[j][2], 0) + 1
            j += 1
        if len(counts) > best_score:
            best, best_score = start, len(counts)
        if term in counts:  # the window moves past this mark
            counts[term] -= 1
            if not counts[term]:
                del counts[term]
    return max(0, best - width // 4)


def _clip(text: str, start: int, width: int,
          marks: list[tuple[int, int]] | None = None) -> str:
    """``text[start:start+width]`` at word boundaries, with ``**`` around ``marks``."""
    while start < len(text) and text[start] == " ":
        start += 1
    if 0 < start < len(text) and text[start - 1] != " ":
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < start + 20 else start
    end = min(len(text), start + width)
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > start + width // 2 else end
    out: list[str] = ["…"] if start > 0 else []
    cursor = start
    for s, e in marks or ():
        if s < cursor or e > end:
            continue
        if s == cursor and len(out) > 1 and out[-1] == "**":  # touching marks: one
            out[-1:] = [text[s:e], "**"]
        else:
            out += [text[cursor:s], "**", text[s:e], "**"]
        cursor = e
    out.append(text[cursor:end])
    if end < len(text):
        out.append("…")
    return "".join(out)
