"""``max_chars`` bounds the whole answer, as a real MCP client receives it (its JSON text
content): every tool that takes it stays within ``max_chars`` plus the fixed envelope
(``truncated``, ``omitted``, ``next_start_line``, ``hint``), says what was cut and how
to read on, and reading on gets the rest."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mcp import ClientSession

from rifflux.answers.budget import ENVELOPE, answer_text
from rifflux.answers.search import _cut
from rifflux.limits import MIN_MAX_CHARS
from rifflux.mcp.answers import WORDS, file_answer
from rifflux.types import FileLines

from .helpers import REPO, call, mcp_session, text_of, write

pytestmark = pytest.mark.anyio

#: Forty tags, a long title: what every chunk of a whole file used to repeat.
_TAGS = ", ".join(f"topic-{i:02}/sub-{i:02}" for i in range(40))


def _escaped(i: int) -> str:
    """A line whose JSON text is longer than the line: quotes, backslashes and a tab."""
    return f'line {i}: say "hi" to C:\\temp\\dir{i}\tand "bye" ' + "x" * (i % 70)


def big_vault(root: Path) -> Path:
    """``whole.md`` (150 sections, tagged), ``lines.md`` (4,000 lines full of JSON escapes),
    ``hub.md`` (300 links out, half of them unresolved) and 300 notes linking to it."""
    sections = "".join(f"## Section {i}\n\n" + " ".join(
        f'The "heron" number {i} wades; path C:\\reeds\\{i}.' for _ in range(12)) + "\n\n"
        for i in range(150))
    write(root, "whole.md", f"---\ntitle: {'A very long title ' * 8}\ntags: [{_TAGS}]\n---\n"
                            f"# Whole\n\n{sections}")
    write(root, "lines.md", "\n".join(_escaped(i) for i in range(4000)) + "\n")
    links = "\n".join(f"See [[note-{i}]] and [[missing-{i}]] for what the heron did at the "
                      f"{'river ' * 20}bend {i}." for i in range(150))
    write(root, "hub.md", f"# Hub\n\n{links}\n")
    for i in range(300):
        write(root, f"note-{i}.md", f"# Note {i}\n\nBack to [[hub]] where the heron "
                                    f"{'stands ' * 20}still ({i}).\n")
    return root


async def answer(session: ClientSession, tool: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    """The text a client receives for a call that must not fail, and its JSON."""
    with anyio.fail_after(60):
        result = await session.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    text = text_of(result)
    return text, json.loads(text)


def within(text: str, max_chars: int) -> None:
    assert len(text) <= max_chars + ENVELOPE, (len(text), max_chars)


def said_cut(out: dict[str, Any]) -> None:
    assert out["truncated"] is True and "max_chars" in out["hint"]


async def test_every_tool_that_takes_max_chars_keeps_its_whole_answer_within_it(
    tmp_path: Path,
) -> None:
    vault = big_vault(tmp_path / "vault")
    async with mcp_session(tmp_path) as session:
        await call(session, "reindex", path=str(vault))
        for max_chars in (40_000, 5_000, 1_000):
            # search_rifflux, its whole contents and its first look
            text, out = await answer(session, "search_rifflux", query="heron river", top_k=100,
                                     max_chars=max_chars)
            within(text, max_chars)
            said_cut(out)
            assert out["count"] == len(out["results"]) and out["omitted"] > 0
            assert out["count"] + out["omitted"] == 100 and "top_k" in out["hint"]
            text, out = await answer(session, "search_rifflux", query="heron river", top_k=100,
                                     content="snippet", max_chars=max_chars)
            within(text, max_chars)
            if max_chars < 40_000:  # (a hundred hits' first look is about 28,000)
                said_cut(out)
            # get_chunk: a chunk of whole.md, which carries forty tags and a long title
            hit = (await call(session, "search_rifflux", query="heron number 7",
                              mode="lexical", paths=["whole.md"], top_k=1))["results"][0]
            text, out = await answer(session, "get_chunk", chunk_id=hit["chunk_id"],
                                     max_chars=max_chars)
            within(text, max_chars)
            if max_chars == 1_000:
                said_cut(out)
                assert "get_file" in out["hint"]
            # get_file: a whole file's chunks, and a range of lines full of JSON escapes
            text, out = await answer(session, "get_file", path="whole.md", max_chars=max_chars)
            within(text, max_chars)
            said_cut(out)
            assert out["next_start_line"] > 1
            text, out = await answer(session, "get_file", path="lines.md", start_line=1,
                                     end_line=4000, max_chars=max_chars)
            within(text, max_chars)
            said_cut(out)
            assert out["next_start_line"] == out["end_line"] + 1
            # get_links: 300 links out and 300 backlinks, each with its line as context
            text, out = await answer(session, "get_links", path="hub.md", limit=1000,
                                     max_chars=max_chars)
            within(text, max_chars)
            said_cut(out)
            assert out["counts"] == {"outgoing": 300, "backlinks": 300, "unresolved": 150}


async def test_a_huge_query_is_echoed_cut_and_the_answer_keeps_its_budget(
    tmp_path: Path,
) -> None:
    vault = big_vault(tmp_path / "vault")
    query = "heron " + "wades in the river and " * 5_000  # 115,006 characters
    async with mcp_session(tmp_path) as session:
        await call(session, "reindex", path=str(vault))
        for content in ("full", "snippet"):
            text, out = await answer(session, "search_rifflux", query=query, content=content,
                                     max_chars=5_000, explain=True)
            within(text, 5_000)
            said_cut(out)
            assert out["query"].startswith("heron wades in the river")
            assert re.search(r"…\[\+\d+ chars\]$", out["query"])
            assert "query" in out["hint"]


async def test_reading_on_after_a_cut_gets_the_rest_of_the_file(tmp_path: Path) -> None:
    vault = big_vault(tmp_path / "vault")
    source = (vault / "lines.md").read_text(encoding="utf-8").splitlines()
    whole_source = (vault / "whole.md").read_text(encoding="utf-8").splitlines()
    async with mcp_session(tmp_path) as session:
        await call(session, "reindex", path=str(vault))
        read: list[str] = []
        start = 1
        while True:  # a range read page by page: every line once, each page in budget
            text, page = await answer(session, "get_file", path="lines.md", start_line=start,
                                      max_chars=5_000)
            within(text, 5_000)
            read += page["text"].split("\n")
            if not page.get("truncated"):
                break
            start = page["next_start_line"]
        assert read == source
        text, first = await answer(session, "get_file", path="whole.md", max_chars=5_000)
        last_line = max(c["line_end"] for c in first["chunks"])
        assert first["next_start_line"] == last_line + 1
        rest = await call(session, "get_file", path="whole.md",
                          start_line=first["next_start_line"], max_chars=400_000)
        assert rest["text"].split("\n") == whole_source[last_line:]


#: A line of any text (no newline), rich in what JSON escapes: quotes, backslashes, tabs,
#: control characters (six characters each in JSON text).
_LINE = st.text(st.one_of(st.characters(exclude_categories=["Cs"], exclude_characters="\n\r"),
                          st.sampled_from('"\\\t\x01\x1f')), max_size=600)


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(_LINE, min_size=1, max_size=200),
       max_chars=st.integers(MIN_MAX_CHARS, 12_000), changed=st.booleans())
@example(lines=['"\\\t\x01' * 100] * 100, max_chars=5_000, changed=True)  # 3.5 times longer as JSON
def test_pages_of_any_lines_keep_the_budget_and_lose_no_line(
    lines: list[str], max_chars: int, changed: bool,
) -> None:
    read: list[str] = []
    start = 1
    while True:  # as an agent reads on: from next_start_line, to the end of the file
        page: FileLines = {"path": "a.md", "root": "/notes", "start_line": start,
                           "end_line": len(lines), "total_lines": len(lines),
                           "text": "\n".join(lines[start - 1:])}
        if changed:
            page["changed_since_indexed"] = True
        out = file_answer(page, max_chars)
        assert len(answer_text(out)) <= max_chars + ENVELOPE
        got = out["text"].split("\n")
        assert out["end_line"] - out["start_line"] + 1 == len(got)
        if got[-1] != lines[out["end_line"] - 1]:  # one line longer than the budget, cut
            assert len(got) == 1 and re.search(r"…\[\+\d+ chars\]$", got[0])
            got = lines[start - 1:start]  # (the hint says how to read it whole)
            assert f"line {start} has {len(got[0])} characters" in out["hint"]
        read += got
        if "next_start_line" not in out:
            break
        assert out["truncated"] is True and out["next_start_line"] == out["end_line"] + 1
        start = out["next_start_line"]
    assert read == lines


def test_the_contract_states_the_envelope() -> None:
    contract = (REPO / "docs" / "CONTRACT.md").read_text(encoding="utf-8")
    assert f"`max_chars` plus {ENVELOPE:,} characters" in contract


def test_the_hint_says_what_was_cut_in_words_that_agree() -> None:
    assert "the echoed query was cut" in _cut(["query"], 0, 40_000, WORDS, False)
    assert "the echoed query and contents were cut" in _cut(["query", "content"], 0,
                                                            40_000, WORDS, False)
