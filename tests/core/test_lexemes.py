"""core.lexemes: an FTS5 phrase's instances in an indexed text, as FTS5's bm25 counts them."""

from __future__ import annotations

from rifflux.core.lexemes import frequencies, indexed_text, lexical_query


def _freqs(query: str, heading: str, content: str) -> list[float]:
    q = lexical_query(query)
    assert q is not None
    return frequencies(indexed_text(heading, content), q.clauses)


def test_a_word_in_the_breadcrumb_counts_twice_and_in_the_text_once() -> None:
    assert _freqs("gardens", "Garden notes", "A garden, and another garden.") == [2.0 + 2.0]


def test_a_phrase_counts_where_its_words_follow_each_other_within_one_column() -> None:
    # "notes garden" would run from the breadcrumb into the text: FTS5 finds no instance
    assert _freqs('"notes garden"', "Garden notes", "Garden beds.") == [0.0]
    assert _freqs('"garden beds"', "Garden notes", "Garden beds, garden beds.") == [2.0]


def test_a_prefix_counts_every_word_it_starts() -> None:
    assert _freqs("compo*", "Compost", "Composting and components.") == [2.0 + 2.0]


def test_each_clause_is_counted_apart_in_the_query_order() -> None:
    assert _freqs('"garden beds" compost', "Compost", "Garden beds of compost.") == [1.0, 3.0]


def test_a_phrase_longer_than_a_column_is_not_in_it() -> None:
    # (the column "retri polici upload" is shorter than the phrase: nothing to count)
    lexemes = "retri polici upload | retri polici upload for flaki link"
    phrase = (("retri", "polici", "upload", "for", "flaki"), False)
    assert frequencies(lexemes, [phrase]) == [1.0]
