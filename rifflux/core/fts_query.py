"""Any user text -> a valid FTS5 MATCH expression (or None when nothing is searchable).

Words become quoted FTS5 strings joined with OR, so bm25 ranks chunks that
match more (and rarer) terms first. A well-formed ``"quoted phrase"`` stays a
phrase and ``word*`` stays a prefix query. Everything else that FTS5 would read
as syntax (``AND``, ``NEAR``, ``-``, ``:``, parentheses, stray quotes, NUL) is
treated as plain text, so no query can raise a syntax error.
"""

from __future__ import annotations

import re
import unicodedata

MAX_TERMS = 32

# Words so common in English prose that they only slow an OR query down and
# blur its ranking. Dropped unless the query has nothing else.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves must shall may might also""".split()
)

_PHRASE = re.compile(r'"([^"]*)"')
_WORD = re.compile(r"(\w+)(\*?)", re.UNICODE)


def _terms(text: str) -> list[tuple[str, bool]]:
    return [(m.group(1), bool(m.group(2))) for m in _WORD.finditer(text)]


def build_match(query: str) -> str | None:
    """The FTS5 expression for ``query``; None when it has no searchable word."""
    text = unicodedata.normalize("NFKC", query.replace("\x00", " "))
    clauses: list[str] = []
    seen: set[str] = set()

    def add(clause: str) -> None:
        if clause not in seen and len(clauses) < MAX_TERMS:
            seen.add(clause)
            clauses.append(clause)

    rest_parts: list[str] = []
    last = 0
    for match in _PHRASE.finditer(text):
        rest_parts.append(text[last : match.start()])
        last = match.end()
        words = [w for w, _ in _terms(match.group(1))]
        if len(words) > 1:
            add('"' + " ".join(words) + '"')
        elif words:
            rest_parts.append(" " + words[0] + " ")
    rest_parts.append(text[last:])
    terms = _terms(" ".join(rest_parts))
    content = [(w, p) for w, p in terms if w.lower() not in STOPWORDS or p]
    for word, prefix in content or terms:
        add(f'"{word}"*' if prefix else f'"{word}"')
    if not clauses:
        return None
    return " OR ".join(clauses)
