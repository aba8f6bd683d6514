"""JSON and JSONC (JSON with comments, as VS Code and Zed write their settings) read with
where every value is, so that a change is a splice of the text and everything else stays
byte for byte: other servers, key order, comments, indentation, line ends.

Written here rather than taken from PyPI: json-five round-trips comments through a
model whose API its author calls unstable and whose edits may dump invalid JSON5 (and
JSON5 accepts what these clients refuse: single quotes, bare keys); jsonc-edit drives
Microsoft's jsonc-parser through a Node.js daemon that it installs with npm at first
use, which an offline tool cannot do; the others strip comments. What is needed is
small: find a member, replace a value, insert or delete a member (``edit``).

``parse(text, comments=...)`` gives a tree of ``Node`` with ``start``/``end`` offsets;
a text it cannot read raises ``SyntaxProblem`` naming the line and column where it
broke. Strict JSON (``comments=False``) refuses comments and trailing commas, which
clients that read their file with a plain JSON parser (Claude Desktop, Claude Code)
would refuse too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Member", "Node", "SyntaxProblem", "parse", "position"]


class SyntaxProblem(ValueError):
    """The text is not JSON (or JSONC): where, and what was found there."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.line, self.column, self.reason = line, column, message


@dataclass(slots=True)
class Member:
    """``"key": value`` in an object; ``comma``: the offset of the comma after it, if any."""

    key: str
    key_start: int
    value: Node
    comma: int | None = None


@dataclass(slots=True)
class Node:
    """A value and where it is: ``text[start:end]``. An object has ``members`` in order,
    an array ``items``; ``value`` is the plain Python value."""

    kind: str  # "object", "array", "string", "number", "literal"
    start: int
    end: int
    value: Any = None
    members: list[Member] = field(default_factory=list)
    items: list[Node] = field(default_factory=list)

    def member(self, key: str) -> Member | None:
        """The last member named ``key`` (as JSON parsers read a repeated key)."""
        found = [m for m in self.members if m.key == key]
        return found[-1] if found else None


def position(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of ``offset``."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def parse(text: str, *, comments: bool = True) -> Node:
    """The tree of ``text``, one value with nothing but whitespace (and, for JSONC,
    comments) around it."""
    reader = _Reader(text, comments)
    reader.skip()
    node = reader.value()
    reader.skip()
    if reader.at < len(text):
        reader.fail("more text after the end of the JSON value")
    return node


_LITERALS = {"true": True, "false": False, "null": None}
_NUMBER_CHARS = frozenset("+-0123456789.eE")


class _Reader:
    def __init__(self, text: str, comments: bool) -> None:
        self.text, self.at, self.comments = text, 0, comments

    def fail(self, message: str, at: int | None = None) -> None:
        where = self.at if at is None else at
        raise SyntaxProblem(message, *position(self.text, where))

    def skip(self) -> None:
        """Whitespace and comments."""
        text, n = self.text, len(self.text)
        while self.at < n:
            ch = text[self.at]
            if ch in " \t\r\n":
                self.at += 1
            elif text.startswith("//", self.at) or text.startswith("/*", self.at):
                if not self.comments:
                    self.fail("a comment, which this file's client cannot read (plain JSON)")
                if text[self.at + 1] == "/":
                    end = text.find("\n", self.at)
                    self.at = n if end < 0 else end
                else:
                    end = text.find("*/", self.at + 2)
                    if end < 0:
                        self.fail("a /* comment that never ends")
                    self.at = end + 2
            else:
                return

    def value(self) -> Node:
        if self.at >= len(self.text):
            self.fail("the text ends where a value should be")
        ch = self.text[self.at]
        if ch == "{":
            return self.object()
        if ch == "[":
            return self.array()
        if ch == '"':
            start = self.at
            return Node("string", start, self.at_after_string(), value=self.string_value(start))
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, self.at):
                start, self.at = self.at, self.at + len(word)
                return Node("literal", start, self.at, value=literal)
        if ch in _NUMBER_CHARS:
            start = self.at
            while self.at < len(self.text) and self.text[self.at] in _NUMBER_CHARS:
                self.at += 1
            try:
                number = json.loads(self.text[start:self.at])
            except ValueError:
                self.fail(f"{self.text[start:self.at]!r} is not a number", start)
            return Node("number", start, self.at, value=number)
        self.fail(f"unexpected {ch!r} where a value should be")
        raise AssertionError  # (fail raises)

    def at_after_string(self) -> int:
        """Moves past the string starting here; its end."""
        text, i = self.text, self.at + 1
        while True:
            if i >= len(text) or text[i] == "\n":
                self.fail("a string that never ends", self.at)
            if text[i] == "\\":
                i += 2
            elif text[i] == '"':
                self.at = i + 1
                return self.at
            else:
                i += 1

    def string_value(self, start: int) -> str:
        try:
            value: str = json.loads(self.text[start:self.at])
        except ValueError as exc:
            self.fail(f"a string JSON cannot read ({exc.args[0].split(':')[0]})", start)
            raise AssertionError from exc
        return value

    def not_ended(self, node: Node, closer: str) -> None:
        if self.at >= len(self.text):
            line, column = position(self.text, node.start)
            self.fail(f"the text ends before the {node.kind} opened at line {line}, column "
                      f"{column} is closed with {closer!r}")

    def object(self) -> Node:
        node = Node("object", self.at, self.at, value={})
        self.at += 1
        while True:
            self.skip()
            self.not_ended(node, "}")
            if self.at < len(self.text) and self.text[self.at] == "}":
                if node.members and node.members[-1].comma is not None and not self.comments:
                    self.fail("a comma before '}', which plain JSON does not allow",
                              node.members[-1].comma)
                break
            if node.members and node.members[-1].comma is None:
                self.fail("expected ',' or '}' after a member")
            if self.at >= len(self.text) or self.text[self.at] != '"':
                self.fail("expected a member's name in double quotes, or '}'")
            key_start = self.at
            self.at_after_string()
            key = self.string_value(key_start)
            self.skip()
            if self.at >= len(self.text) or self.text[self.at] != ":":
                self.fail(f"expected ':' after the name {key!r}")
            self.at += 1
            self.skip()
            member = Member(key, key_start, self.value())
            node.members.append(member)
            node.value[key] = member.value.value
            self.skip()
            if self.at < len(self.text) and self.text[self.at] == ",":
                member.comma = self.at
                self.at += 1
        self.at += 1
        node.end = self.at
        return node

    def array(self) -> Node:
        node = Node("array", self.at, self.at, value=[])
        self.at += 1
        comma: int | None = None
        while True:
            self.skip()
            self.not_ended(node, "]")
            if self.at < len(self.text) and self.text[self.at] == "]":
                if comma is not None and not self.comments:
                    self.fail("a comma before ']', which plain JSON does not allow", comma)
                break
            if node.items and comma is None:
                self.fail("expected ',' or ']' after an item")
            item = self.value()
            node.items.append(item)
            node.value.append(item.value)
            self.skip()
            comma = None
            if self.at < len(self.text) and self.text[self.at] == ",":
                comma = self.at
                self.at += 1
        self.at += 1
        node.end = self.at
        return node
