from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from rifflux.core.snippets import WIDTH, Snippets, snippet

LONG = ("Intro words fill the opening of this chunk. " * 8
        + "Here the watcher settings are configured for the docker containers. "
        + "Trailing words close the chunk out. " * 8)


def marked(text: str) -> list[str]:
    return re.findall(r"\*\*(.+?)\*\*", text)


def test_words_are_marked_by_stem_and_the_window_moves_to_them() -> None:
    out = snippet(LONG, "configuring the watchers for docker container")
    assert marked(out) == ["watcher", "configured", "docker", "containers"]
    assert out.startswith("…") and out.endswith("…")
    assert len(out.replace("**", "")) <= WIDTH + 2


def test_stopwords_and_parts_of_words_are_never_marked() -> None:
    out = snippet("The cat sat on the category of the catalogue, then the cat left.",
                  "the cat")
    assert marked(out) == ["cat", "cat"]  # not "the", not "category"


def test_a_phrase_is_marked_only_where_it_occurs_whole() -> None:
    text = "Reset your password here. Your reset link expires; the password reset link works."
    assert marked(snippet(text, '"reset link"')) == ["reset link", "reset link"]


def test_a_prefix_term_marks_the_words_it_starts() -> None:
    assert marked(snippet("Configure the configurator, not the conifer.", "config*")) == [
        "Configure", "configurator"]


def test_accents_and_case_are_ignored_both_ways() -> None:
    assert marked(snippet("Le CAFÉ de la gare, a café crème.", "cafe")) == ["CAFÉ", "café"]
    assert marked(snippet("Ein Übersicht über alles.", "ubersicht")) == ["Übersicht"]
    assert marked(snippet("a plain cafe", "café")) == ["cafe"]


def test_snake_case_terms_match_as_their_parts() -> None:
    assert marked(snippet("call max_per_file here", "max_per_file")) == ["max_per_file"]


def test_a_hit_with_no_term_in_common_gets_its_most_query_like_sentence() -> None:
    text = ("Opening words about nothing. " * 10 + "Pick a color scheme early. "
            + "Closing remarks follow here. " * 10)
    out = snippet(text, "colour")  # no stem in common: shared trigrams decide
    assert out.startswith("…Pick a color scheme early.") and not marked(out)
    plain = snippet("Alpha beta gamma. Delta epsilon.", "zzz qqq")
    assert plain == "Alpha beta gamma. Delta epsilon."


def test_a_match_near_the_end_gets_a_window_as_wide_as_the_others() -> None:
    text = "Opening words of a long note. " * 10 + "The last line speaks of sarcasm."
    out = snippet(text, "sarcasm", width=120)
    assert marked(out) == ["sarcasm"] and out.endswith("**sarcasm**.")
    assert len(out.replace("**", "").strip("…")) >= 110  # the width is used, backwards


def test_a_match_in_the_chunks_heading_only_is_shown_there() -> None:
    # The breadcrumb names the heading, so a snippet leaves it out, unless the query
    # matches nowhere else: then the snippet must show why the chunk matched.
    chunk = "## Data-Driven (Parameterized) Tests\n\n- Use @ParameterizedTest with sources."
    assert marked(snippet(chunk, "data-driven")) == ["Data", "Driven"]
    assert not snippet(chunk, "sources").startswith("Data")  # found in the text: as before


def test_a_leading_tag_line_is_text_not_a_heading() -> None:
    # '#project #todo' opens the chunk: tags, which the breadcrumb does not name
    chunk = "#project #todo\nShip the otter survey."
    assert snippet(chunk, "otter").startswith("#project #todo Ship")
    assert marked(snippet(chunk, "todo")) == ["todo"]
    assert snippet("## Plan\n#project\nShip it.", "ship").startswith("#project **Ship**")


def test_one_query_makes_many_snippets() -> None:
    snippets = Snippets("docker")
    assert [marked(snippets.make(t)) for t in ("a docker b", "no match", "Docker!")] == [
        ["docker"], [], ["Docker"]]


@given(st.text(max_size=600), st.text(max_size=40))
def test_any_text_and_query_give_a_bounded_snippet(content: str, query: str) -> None:
    assert len(snippet(content, query).replace("**", "")) <= WIDTH + 2


@given(st.text(st.characters(blacklist_characters="*"), max_size=600), st.text(max_size=40))
@example(":", "S")  # Snowball stems "s" to "", which matched everywhere (FTS5 keeps "s")
def test_marks_are_balanced_around_words_of_the_text(content: str, query: str) -> None:
    out = snippet(content, query)
    assert out.count("**") % 2 == 0
    assert all(mark in " ".join(content.split()) for mark in marked(out))
