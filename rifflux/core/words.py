"""A word as FTS5's ``unicode61 remove_diacritics 2`` tokenizer and its ``porter``
stemmer leave it: folded (lower case, accents dropped), then stemmed.

The lexical branch and everything that must agree with it use these two: the
PostgreSQL store's tokens (``core.lexemes``) and the words a snippet marks
(``core.snippets``). One stemmer and one cache of each, so that both see every word
alike and a word folded or stemmed for one is not done again for the other. Light
to import (the standard library and snowballstemmer): a lexical search on SQLite
loads it.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

import snowballstemmer

_STEMMER = snowballstemmer.stemmer("porter")


@lru_cache(maxsize=65536)
def fold(word: str) -> str:
    """Lower case without accents, as FTS5's ``unicode61 remove_diacritics 2`` folds."""
    word = word.lower()
    if word.isascii():
        return word
    return "".join(c for c in unicodedata.normalize("NFKD", word)
                   if not unicodedata.combining(c))


@lru_cache(maxsize=65536)
def stem(folded: str) -> str:
    """As FTS5's porter tokenizer stems: words under three characters are left as they
    are (Snowball would make ``s`` empty, and an empty stem matches everywhere)."""
    return folded if len(folded) < 3 else str(_STEMMER.stemWord(folded))
