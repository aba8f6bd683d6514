"""Any user text -> a valid FTS5 MATCH expression (or None when nothing is searchable).

Words become quoted FTS5 strings joined with OR, so bm25 ranks chunks that
match more (and rarer) terms first. For a query that mixes CJK words with others
(``Python 教程``), ``build_every`` is the conjunction of its words, and the chunks
that hold every word rank first (each group by bm25): bm25 alone ranks a short
English note with ``Python`` above a Chinese one with both words, because a CJK
chunk is long to it (its text is indexed as bigrams and characters), so the two
scripts' scores do not compare. Within one script bm25 orders alone. A well-formed
``"quoted phrase"`` stays a phrase and ``word*`` stays a prefix query.
Everything else that FTS5 would read as syntax (``AND``, ``NEAR``, ``-``, ``:``,
parentheses, stray quotes, NUL) is treated as plain text, so no query can raise a
syntax error.

Chinese, Japanese and Korean words are looked up as the index holds them
(``core.cjk``): by their character bigrams, a single character by itself.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from .cjk import is_cjk_word, is_sentence, match_word, phrase_tokens, set_apart

MAX_TERMS = 32
#: At most this many clauses in all (a long CJK run gives one per bigram).
MAX_CLAUSES = 64

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


@dataclass(frozen=True, slots=True)
class QueryTerms:
    """What the lexical branch looks for: words (with whether each is a prefix) and
    phrases, in the order the query gives them."""

    words: tuple[tuple[str, bool], ...] = ()
    phrases: tuple[tuple[str, ...], ...] = ()
    #: The stopwords left out (as written, once each): none when the query has nothing else.
    dropped: tuple[str, ...] = ()


def query_terms(query: str) -> QueryTerms:
    """The terms of ``query`` as ``build_match`` uses them (stopwords dropped unless the
    query has nothing else; at most ``MAX_TERMS`` clauses). A search asks twice (the
    match and the snippets): queries of usual length are remembered, long ones are not
    (the cache holds 256, whatever their size)."""
    return _remembered(query) if len(query) <= 1_000 else _query_terms(query)


@lru_cache(maxsize=256)
def _remembered(query: str) -> QueryTerms:
    return _query_terms(query)


def _query_terms(query: str) -> QueryTerms:
    text = set_apart(unicodedata.normalize("NFKC", query.replace("\x00", " ")))
    phrases: list[tuple[str, ...]] = []
    words: list[tuple[str, bool]] = []
    seen: set[object] = set()

    def room() -> bool:
        return len(phrases) + len(words) < MAX_TERMS

    rest_parts: list[str] = []
    last = 0
    for match in _PHRASE.finditer(text):
        rest_parts.append(text[last : match.start()])
        last = match.end()
        found = tuple(w for w, _ in _terms(match.group(1)))
        if len(found) > 1 or (found and is_cjk_word(found[0]) and is_sentence(found[0])):
            if found not in seen and room():
                seen.add(found)
                phrases.append(found)
        elif found:
            rest_parts.append(" " + found[0] + " ")
    rest_parts.append(text[last:])
    terms = _terms(" ".join(rest_parts))
    content = [(w, p) for w, p in terms if w.lower() not in STOPWORDS or p]
    for term in content or terms:
        if term not in seen and room():
            seen.add(term)
            words.append(term)
    dropped: dict[str, str] = {}
    for word, prefix in terms if content else ():
        if word.lower() in STOPWORDS and not prefix:
            dropped.setdefault(word.lower(), word)
    return QueryTerms(tuple(words), tuple(phrases), tuple(dropped.values()))


def clauses(match: str) -> list[str]:
    """The clauses ``build_match`` joined with OR, each one FTS5 phrase: ``"w"``,
    ``"w"*``, ``"w1 w2"`` or ``cjk : "c"`` (no clause holds a quote of its own)."""
    parts = match.split('"')
    out: list[str] = []
    clause = ""
    for i, part in enumerate(parts):
        if i % 2:  # inside quotes
            clause += '"' + part + '"'
            continue
        pieces = part.split(" OR ")
        clause += pieces[0]
        for piece in pieces[1:]:
            out.append(clause.strip())
            clause = piece
    out.append(clause.strip())
    return [c for c in out if c]


def build_match(query: str) -> str | None:
    """The FTS5 expression for ``query``; None when it has no searchable word."""
    words = _words(query)
    return " OR ".join(c for clauses in words for c in clauses) if words else None


def build_every(query: str) -> str | None:
    """For a query that mixes CJK words with others, the FTS5 expression that a chunk
    holding every word matches (a word found by any of its clauses, as a CJK sentence by
    any of its bigrams); None for any other query."""
    terms = query_terms(query)
    scripts = {any(map(is_cjk_word, p)) for p in terms.phrases}
    scripts |= {is_cjk_word(w) for w, _ in terms.words}
    words = _words(query)
    if len(scripts) < 2 or len(words) < 2:
        return None
    return " AND ".join(c[0] if len(c) == 1 else "(" + " OR ".join(c) + ")" for c in words)


def _words(query: str) -> list[list[str]]:
    """The query's words (phrases first), each as the FTS5 clauses any of which it
    matches, at most ``MAX_CLAUSES`` clauses in all, each clause once."""
    terms = query_terms(query)
    words = [['"' + " ".join(phrase_tokens(p)) + '"'] for p in terms.phrases]
    words += [match_word(w, prefix) if is_cjk_word(w) else [f'"{w}"*' if prefix else f'"{w}"']
              for w, prefix in terms.words]
    seen: set[str] = set()
    kept: list[list[str]] = []
    for clauses in words:
        room = MAX_CLAUSES - len(seen)
        fresh = [c for c in dict.fromkeys(clauses) if c not in seen][: max(room, 0)]
        if fresh:
            seen.update(fresh)
            kept.append(fresh)
    return kept


def dropped_stopwords(query: str) -> list[str]:
    """The stopwords ``build_match`` left out of ``query`` (as written, once each)."""
    return list(query_terms(query).dropped)


def has_sentence(query: str) -> bool:
    """Whether ``query`` has a CJK run searched by its bigrams (a question typed as a
    sentence): no chunk holding its words is not a misspelling."""
    return any(is_cjk_word(w) and is_sentence(w) for w, _ in query_terms(query).words)
