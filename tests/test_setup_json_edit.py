"""JSON and JSONC changed as splices: the member is set as a JSON parser then reads it,
every other byte is kept, and taking the member out again gives the text back."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rifflux.cli.setup.json_edit import remove_member, set_member
from rifflux.cli.setup.jsonc import SyntaxProblem, parse

ENTRY = {"command": "/opt/rifflux/bin/rifflux", "args": ["mcp", "--db", "/d/i.db"]}

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                     st.text(max_size=8))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8)


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, str]:
    """A settings file as editors write them: an object of other settings, maybe a
    servers object with other servers, in some indentation and line ends, maybe with
    comments and trailing commas (JSONC). Returns the text and the servers key."""
    key = draw(st.sampled_from(["mcpServers", "servers", "context_servers"]))
    top: dict[str, Any] = draw(st.dictionaries(
        st.text(max_size=6).filter(lambda k: k != key), _values, max_size=4))
    servers = draw(st.none() | st.dictionaries(st.text(max_size=6).filter(
        lambda k: k != "rifflux"), _values, max_size=3))
    if servers is not None:
        top[key] = servers
        order = list(top)
        draw(st.randoms()).shuffle(order)
        top = {k: top[k] for k in order}
    indent = draw(st.sampled_from([2, 4, "\t", None]))
    text = json.dumps(top, indent=indent, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()) and indent is not None:
        text = "// settings\n" + text.replace(",\n", ", // more\n", 1)
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text + draw(st.sampled_from(["", "\n", "\r\n"])), key


@settings(max_examples=300, deadline=None)
@given(documents())
def test_setting_then_removing_a_member_gives_the_text_back(case: tuple[str, str]) -> None:
    text, key = case
    changed = set_member(text, [key, "rifflux"], ENTRY, comments=True)
    read = parse(changed).value
    assert read[key]["rifflux"] == ENTRY
    before = parse(text).value
    assert {k: v for k, v in read.items() if k != key} == \
        {k: v for k, v in before.items() if k != key}
    assert {k: v for k, v in read[key].items() if k != "rifflux"} == before.get(key, {})
    assert set_member(changed, [key, "rifflux"], ENTRY, comments=True) == changed
    back = remove_member(changed, [key, "rifflux"], comments=True)
    if key in before:
        assert back == text
    else:  # (the object made to hold it stays, empty)
        assert parse(back).value == {**before, key: {}}


def test_a_new_member_is_laid_out_as_its_siblings_are() -> None:
    tabs = '{\n\t"servers": {\n\t\t"a": {\n\t\t\t"type": "http"\n\t\t}\n\t}\n}'
    assert set_member(tabs, ["servers", "rifflux"], {"type": "stdio"}, comments=True) == (
        '{\n\t"servers": {\n\t\t"a": {\n\t\t\t"type": "http"\n\t\t},\n\t\t"rifflux": {\n'
        '\t\t\t"type": "stdio"\n\t\t}\n\t}\n}')
    one_line = '{"mcpServers": {"a": {"command": "x"}}}'
    assert set_member(one_line, ["mcpServers", "rifflux"], {"command": "y"},
                      comments=False) == (
        '{"mcpServers": {"a": {"command": "x"}, "rifflux": {"command": "y"}}}')


def test_a_comment_after_the_last_member_stays_on_its_line() -> None:
    text = '{\n  "mcpServers": {\n    "a": 1 // the only one\n  }\n}\n'
    changed = set_member(text, ["mcpServers", "rifflux"], {"b": 2}, comments=True)
    assert '"a": 1, // the only one\n    "rifflux": {\n      "b": 2\n    }\n' in changed
    assert remove_member(changed, ["mcpServers", "rifflux"], comments=True) == text


def test_trailing_commas_stay_the_files_style() -> None:
    text = '{\n  "servers": {\n    "a": 1,\n  },\n}\n'
    changed = set_member(text, ["servers", "rifflux"], 2, comments=True)
    assert changed == '{\n  "servers": {\n    "a": 1,\n    "rifflux": 2,\n  },\n}\n'
    assert remove_member(changed, ["servers", "rifflux"], comments=True) == text


@pytest.mark.parametrize(("text", "comments", "said"), [
    ('{"a": 1,}', False, "line 1, column 8: a comma before '}'"),
    ('{"a": [1 2]}', True, "line 1, column 10: expected ',' or ']'"),
    ('{\n  "a": 1\n', True, "the object opened at line 1, column 1"),
    ('{"a": "x\n"}', True, "line 1, column 7: a string that never ends"),
    ("{/* open", True, "a /* comment that never ends"),
    ('{"a": tru}', True, "line 1, column 7: unexpected 't'"),
    ('{"a": 1} {}', True, "more text after the end"),
])
def test_a_text_that_is_not_json_says_where_it_broke(text: str, comments: bool,
                                                    said: str) -> None:
    with pytest.raises(SyntaxProblem, match=re.escape(said)):
        parse(text, comments=comments)


def test_something_on_the_way_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ValueError, match="mcpServers is a list, not an object"):
        set_member('{"mcpServers": []}', ["mcpServers", "rifflux"], 1, comments=True)
    with pytest.raises(ValueError, match="holds a list"):
        set_member("[1]", ["mcpServers", "rifflux"], 1, comments=True)
