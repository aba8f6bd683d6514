"""Text and queries as tokens, cut as SQLite's FTS5 cuts them, for a full-text engine
that is given the tokens ready-made (PostgreSQL's ``pg_textsearch`` and its own
``tsvector``, both with the ``simple`` configuration, which only splits on spaces
and punctuation here).

A chunk is indexed as one text of tokens (``indexed_text``): letters and digits
(``_`` separates, as in ``unicode61``), lower case without accents, Porter
stems (``configuring`` -> ``configur``), CJK runs as their overlapping bigrams
(``core.cjk``); the heading breadcrumb twice (FTS5 weighs it 2 to the text's 1),
then the text, then every CJK character alone (FTS5's third column). Columns are
set apart by `` | `` (not a token).

A query (``lexical_query``) is read by ``core.fts_query``'s rules (OR-ed words,
``"phrases"``, ``prefix*``, stopwords, CJK words) and becomes the tokens BM25
ranks by, the prefixes to complete from the index's words, and ``tsquery``
texts: the chunks that match it (any clause), and for a query mixing CJK with
other words, the chunks holding every word. Its clauses are FTS5's phrases:
``frequencies`` counts each one's instances in an indexed text as FTS5's ``bm25()``
counts them (``core.bm25.score`` ranks with them).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .cjk import OTHER_WORD, RUN, bigrams, characters, index_text, is_cjk_word, is_sentence
from .fts_query import MAX_CLAUSES, query_terms
from .words import fold, stem

#: Between the columns of an indexed text: not a token to any parser.
SEPARATOR = " | "
_TOKEN = re.compile(f"{RUN.pattern}|{OTHER_WORD.pattern}")


def _token(raw: str) -> str:
    return raw if RUN.fullmatch(raw) else _word(raw)


@lru_cache(maxsize=1 << 18)
def _word(raw: str) -> str:
    """A word's token (no CJK in it): folded and stemmed, looked up once (a bulk load
    of a million chunks tokenizes every word of them)."""
    return stem(fold(raw))


def tokens(text: str) -> list[str]:
    """The tokens of ``text`` as the index holds them (CJK runs as their bigrams)."""
    cjk = index_text(text)
    if cjk is None:  # (the common case, at a dict lookup a word)
        return list(map(_word, OTHER_WORD.findall(text)))
    return [_token(m.group()) for m in _TOKEN.finditer(cjk)]


def indexed_text(heading_path: str, content: str) -> str:
    """What is indexed for a chunk: the breadcrumb's tokens twice, the text's, then its
    CJK characters alone, the columns set apart."""
    heading = " ".join(tokens(heading_path))
    parts = [heading, heading, " ".join(tokens(content))]
    chars = characters(heading_path, content)
    if chars:
        parts.append(chars)
    return SEPARATOR.join(parts)


#: One way a query word is found: a sequence of tokens (a phrase when more than one),
#: the last one a prefix or not.
Clause = tuple[tuple[str, ...], bool]


@dataclass(frozen=True, slots=True)
class LexicalQuery:
    #: The tokens BM25 ranks by (each once), space-separated.
    ranking: str
    #: Tokens the query has as prefixes (``conf*``): the index's words that start with
    #: them join ``ranking``.
    prefixes: tuple[str, ...]
    #: The chunks that match: any clause (a ``tsquery`` for the ``simple`` configuration).
    match: str
    #: The chunks holding every word, ranked first (a query mixing CJK with other words;
    #: None for any other query).
    every: str | None
    #: Every clause is one whole token: the chunks BM25 scores are those that match.
    exact: bool
    #: FTS5's phrases, in its order (``fts_query.build_match``'s clauses).
    clauses: tuple[Clause, ...] = ()


def lexical_query(query: str) -> LexicalQuery | None:
    """``query`` as the PostgreSQL store searches it; None when it has no searchable
    word."""
    words = _words(query)
    if not words:
        return None
    ranking: dict[str, None] = {}
    prefixes: dict[str, None] = {}
    for clauses in words:
        for toks, prefix in clauses:
            for i, tok in enumerate(toks):
                (prefixes if prefix and i == len(toks) - 1 else ranking)[tok] = None
    every = None
    if _mixed_scripts(query) and len(words) > 1:
        every = " & ".join(_any(clauses) for clauses in words)
    flat = [c for clauses in words for c in clauses]
    return LexicalQuery(
        ranking=" ".join(ranking), prefixes=tuple(prefixes),
        match=" | ".join(tsquery(c) for c in flat), every=every,
        exact=all(len(toks) == 1 and not prefix for toks, prefix in flat), clauses=tuple(flat))


def _mixed_scripts(query: str) -> bool:
    terms = query_terms(query)
    scripts = {any(map(is_cjk_word, p)) for p in terms.phrases}
    scripts |= {is_cjk_word(w) for w, _ in terms.words}
    return len(scripts) > 1


def _words(query: str) -> list[list[Clause]]:
    """The query's words (phrases first), each as the clauses any of which it matches, at
    most ``MAX_CLAUSES`` clauses in all, each clause once (``fts_query._words``' rule)."""
    terms = query_terms(query)
    words: list[list[Clause]] = [
        [(tuple(t for w in phrase for t in _word_tokens(w)), False)]
        for phrase in terms.phrases]
    for word, prefix in terms.words:
        if not is_cjk_word(word):
            words.append([(tuple(_word_tokens(word)), prefix)])
        elif len(word) == 1:
            words.append([((word,), False)])
        elif is_sentence(word) and not prefix:
            words.append([((g,), False) for g in dict.fromkeys(bigrams(word))])
        else:
            words.append([(tuple(bigrams(word)), prefix)])
    seen: set[Clause] = set()
    kept: list[list[Clause]] = []
    for clauses in words:
        room = MAX_CLAUSES - len(seen)
        fresh = [c for c in dict.fromkeys(clauses) if c[0] and c not in seen][: max(room, 0)]
        if fresh:
            seen.update(fresh)
            kept.append(fresh)
    return kept


def _word_tokens(word: str) -> list[str]:
    """A query word's tokens (``snake_case`` is two), stemmed as the index's are: a
    prefix too, as FTS5's porter tokenizer stems it (``installing*`` is ``instal*``)."""
    if is_cjk_word(word):
        return bigrams(word)
    return [_token(r) for r in OTHER_WORD.findall(word)]


def _quoted(token: str) -> str:
    return "'" + token.replace("'", "''") + "'"


def tsquery(clause: Clause) -> str:
    """The ``tsquery`` text (``simple`` configuration) of the chunks a clause matches."""
    toks, prefix = clause
    parts = [_quoted(t) for t in toks]
    if prefix:
        parts[-1] += ":*"
    return parts[0] if len(parts) == 1 else "(" + " <-> ".join(parts) + ")"


def _any(clauses: list[Clause]) -> str:
    """A word found by any of its clauses."""
    if len(clauses) == 1:
        return tsquery(clauses[0])
    return "(" + " | ".join(map(tsquery, clauses)) + ")"


def frequencies(lexemes: str, clauses: Sequence[Clause]) -> list[float]:
    """Each clause's instances in an indexed text (``indexed_text``) as FTS5's ``bm25()``
    weighs them: within one column (a phrase never runs from one into the next), the
    breadcrumb's twice (its weight is 2)."""
    counts = [0] * len(clauses)
    for column in lexemes.split(SEPARATOR):
        toks = column.split()
        if not toks:
            continue
        single = Counter(toks)
        for i, (words, prefix) in enumerate(clauses):
            if len(words) == 1 and not prefix:
                counts[i] += single.get(words[0], 0)
            elif len(words) == 1:
                counts[i] += sum(n for t, n in single.items() if t.startswith(words[0]))
            elif words[0] in single:
                counts[i] += _instances(toks, words, prefix)
    return [float(c) for c in counts]


def _instances(toks: list[str], words: tuple[str, ...], prefix: bool) -> int:
    """How often the phrase ``words`` occurs in ``toks`` (its last word a prefix or not)."""
    last = len(words) - 1
    middle = list(words[1:last])
    found = 0
    # (a phrase longer than the column is not in it: a negative cut would count from the end)
    for at in (i for i, t in enumerate(toks[: max(len(toks) - last, 0)]) if t == words[0]):
        tail = toks[at + last]
        if toks[at + 1: at + last] == middle and (
                tail.startswith(words[last]) if prefix else tail == words[last]):
            found += 1
    return found
