from __future__ import annotations

import sqlite3

import pytest

from rifflux.core.fts_query import build_match, dropped_stopwords

# Text FTS5 would read as syntax, or choke on, that still holds words to look for.
HOSTILE_WITH_WORDS = [
    '"unbalanced',
    'a "b c',
    "AND",
    "OR NOT",
    "NEAR(a b)",
    "-foo",
    "col:value",
    "a\x00b",
    "^start",
    "x" * 10_000,
    "word " * 2000,
    "日本語のテキスト",
    "café naïve",
    "🙂 emoji",
    "a*b*",
    "{a b}",
]
# Text with no letter or digit in it: nothing to look for.
HOSTILE_WITHOUT_WORDS = ["*", "-", ":", "(", "())", "''", "+", "", "   "]


@pytest.mark.parametrize("query", HOSTILE_WITH_WORDS)
def test_any_text_with_words_gives_a_valid_fts5_query(fts: sqlite3.Connection,
                                                     query: str) -> None:
    match = build_match(query)
    assert match is not None
    fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,)).fetchall()


@pytest.mark.parametrize("query", HOSTILE_WITHOUT_WORDS)
def test_text_without_words_gives_no_query(query: str) -> None:
    assert build_match(query) is None


def test_words_are_ored_so_partial_matches_rank(fts: sqlite3.Connection) -> None:
    match = build_match("quick linux")
    assert match is not None
    rows = fts.execute("SELECT heading_path FROM t WHERE t MATCH ?", (match,)).fetchall()
    assert {r[0] for r in rows} == {"Foxes", "Install > Linux"}


def test_quoted_phrase_is_kept(fts: sqlite3.Connection) -> None:
    assert build_match('"quick brown"') == '"quick brown"'
    assert build_match('"brown quick"') is not None
    rows = fts.execute("SELECT heading_path FROM t WHERE t MATCH ?",
                       (build_match('"brown quick"'),))
    assert rows.fetchall() == []


def test_prefix_is_honoured(fts: sqlite3.Connection) -> None:
    assert build_match("instal*") == '"instal"*'
    rows = fts.execute("SELECT heading_path FROM t WHERE t MATCH ?", (build_match("instal*"),))
    assert rows.fetchall() == [("Install > Linux",)]


def test_stopwords_dropped_unless_nothing_else() -> None:
    assert build_match("the fox") == '"fox"'
    assert build_match("the") == '"the"'


def test_the_stopwords_left_out_are_named_as_written_once_each() -> None:
    assert dropped_stopwords("How to install THE wombat, the way it is") == [
        "How", "to", "THE", "it", "is"]
    assert dropped_stopwords("the of") == []  # (kept: nothing else to look for)
    assert dropped_stopwords('wombat "the end"') == []  # a phrase keeps its words
    assert dropped_stopwords("wombat the*") == []  # so does a prefix
    assert dropped_stopwords("wombat") == []


def test_operators_are_plain_words() -> None:
    assert build_match("cats NEAR dogs") == '"cats" OR "NEAR" OR "dogs"'


def test_punctuation_only_is_not_searchable() -> None:
    assert build_match("*") is None
    assert build_match("-:()") is None
