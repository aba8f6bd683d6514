"""Changes to a JSON or JSONC text as splices: one member set or removed, every other byte
kept (other members, their order, comments, indentation, line ends).

A new member goes after the last one of its object, indented as its siblings are (or,
in an object written on one line, on that line); a member set again has its value's
text replaced; a member removed takes its line with it. Inserting and then removing a
member gives the text back as it was.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .jsonc import Member, Node, parse

__all__ = ["remove_member", "set_member"]


def set_member(text: str, path: Sequence[str], value: Any, *, comments: bool) -> str:
    """``text`` with the member at ``path`` (a key in each object on the way down) set to
    ``value``; objects missing on the way are made. An empty text becomes a document
    holding only that. Raises ``SyntaxProblem`` for a text it cannot read and ValueError
    when something on the way is not an object."""
    if not text.strip():
        return _Style("").render(_nested(path, value), "") + "\n"
    node = _top(text, comments)
    style = _Style(text)
    for depth, key in enumerate(path):
        member = node.member(key)
        if member is None:
            return _insert(text, node, key, _nested(path[depth + 1:], value), style)
        if depth == len(path) - 1:
            if member.value.value == value and _same_types(member.value.value, value):
                return text  # (already so: not a byte changes)
            if not _multiline(text, node):
                rendered = json.dumps(value, ensure_ascii=False)
            else:
                rendered = style.render(value, _indent_of(text, member.key_start))
            return text[:member.value.start] + rendered + text[member.value.end:]
        if member.value.kind != "object":
            raise ValueError(f"{'.'.join(path[:depth + 1])} is {_what(member.value)}, not an "
                             "object: fix it by hand (or remove it), then run this again")
        node = member.value
    raise AssertionError("an empty path")


def remove_member(text: str, path: Sequence[str], *, comments: bool) -> str:
    """``text`` without the member at ``path`` (unchanged when there is none). The object
    that held it stays, even empty: it may have been there before."""
    if not text.strip():
        return text
    node = _top(text, comments)
    for key in path[:-1]:
        member = node.member(key)
        if member is None or member.value.kind != "object":
            return text
        node = member.value
    member = node.member(path[-1])
    return text if member is None else _delete(text, node, member)


# ---------------------------------------------------------------- reading


def _top(text: str, comments: bool) -> Node:
    node = parse(text, comments=comments)
    if node.kind != "object":
        raise ValueError(f"the file holds {_what(node)}, not an object: it is not a "
                         "configuration this client reads")
    return node


def _what(node: Node) -> str:
    return {"array": "a list", "string": "a string", "number": "a number"}.get(
        node.kind, "null" if node.value is None else "true or false" if node.kind ==
        "literal" else f"a {node.kind}")


def _nested(path: Sequence[str], value: Any) -> Any:
    for key in reversed(path):
        value = {key: value}
    return value


def _same_types(a: Any, b: Any) -> bool:
    """Equal values of the same JSON types all the way down (``1 == True`` in Python)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return all(_same_types(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return all(_same_types(x, y) for x, y in zip(a, b, strict=True))
    return True


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def _indent_of(text: str, at: int) -> str:
    """The whitespace the line holding ``at`` begins with."""
    start = _line_start(text, at)
    line = text[start:at]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _begins_line(text: str, at: int) -> bool:
    return not text[_line_start(text, at):at].strip(" \t")


def _line_end(text: str, at: int) -> int:
    """Where the line holding ``at`` ends (before its line break)."""
    end = text.find("\n", at)
    if end < 0:
        return len(text)
    return end - 1 if end and text[end - 1] == "\r" else end


def _break_before(text: str, line_start: int) -> int:
    """How many characters the line break just before ``line_start`` has (1 or 2)."""
    return 2 if text[max(0, line_start - 2):line_start] == "\r\n" else 1


class _Style:
    """How the file is written: its line breaks and one level of indentation."""

    def __init__(self, text: str) -> None:
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.unit = "  "
        for line in text.splitlines():
            stripped = line.lstrip(" \t")
            if stripped.startswith('"') and len(stripped) < len(line):
                self.unit = line[: len(line) - len(stripped)]
                break

    def render(self, value: Any, indent: str) -> str:
        """``value`` as JSON laid out like the file (an object's members on lines of
        their own, a short list of plain values on one line), its later lines indented by
        ``indent`` (where its first line begins)."""
        if isinstance(value, dict) and value:
            inner = indent + self.unit
            members = [f"{json.dumps(k, ensure_ascii=False)}: {self.render(v, inner)}"
                       for k, v in value.items()]
            return ("{" + self.newline + inner + ("," + self.newline + inner).join(members)
                    + self.newline + indent + "}")
        flat = json.dumps(value, ensure_ascii=False)
        if not isinstance(value, list) or not value or (
                len(flat) + len(indent) <= 100
                and not any(isinstance(v, dict | list) for v in value)):
            return flat
        inner = indent + self.unit
        return ("[" + self.newline + inner + ("," + self.newline + inner).join(
            self.render(v, inner) for v in value) + self.newline + indent + "]")


# ---------------------------------------------------------------- writing


def _insert(text: str, obj: Node, key: str, value: Any, style: _Style) -> str:
    if obj.members and not _multiline(text, obj):  # {"a": 1} on one line: stays one line
        last = obj.members[-1]
        compact = json.dumps({key: value}, ensure_ascii=False)[1:-1]
        at = last.value.end
        return text[:at] + ", " + compact + text[at:]
    if not obj.members:
        outer = _indent_of(text, obj.start)
        inner = outer + style.unit
        member = f"{json.dumps(key, ensure_ascii=False)}: {style.render(value, inner)}"
        between = text[obj.start + 1:obj.end - 1]  # (a comment there is kept)
        keep = between.rstrip(" \t\r\n") if between.strip() else ""
        return (text[:obj.start + 1] + keep + style.newline + inner + member
                + style.newline + outer + text[obj.end - 1:])
    last = obj.members[-1]
    indent = (_indent_of(text, last.key_start) if _begins_line(text, last.key_start)
              else _indent_of(text, obj.start) + style.unit)
    member = f"{json.dumps(key, ensure_ascii=False)}: {style.render(value, indent)}"
    anchor = last.comma + 1 if last.comma is not None else last.value.end
    end = _line_end(text, anchor)
    rest = text[anchor:end].strip()
    at = end if not rest or (rest.startswith("//") and "\n" not in text[anchor:end]) \
        else anchor
    if last.comma is not None:  # (a trailing comma after each member: so after this one)
        return text[:at] + style.newline + indent + member + "," + text[at:]
    return (text[:last.value.end] + "," + text[last.value.end:at] + style.newline + indent
            + member + text[at:])


def _multiline(text: str, obj: Node) -> bool:
    return "\n" in text[obj.start:obj.end]


def _delete(text: str, obj: Node, member: Member) -> str:
    index = obj.members.index(member)
    own_end = member.comma + 1 if member.comma is not None else member.value.end
    if not _begins_line(text, member.key_start):  # written on one line with others
        if index + 1 < len(obj.members):
            return text[:member.key_start] + text[obj.members[index + 1].key_start:]
        if index:
            previous = obj.members[index - 1]
            return text[:previous.value.end] + text[own_end:]
        return text[:obj.start + 1] + text[obj.end - 1:]
    start = _line_start(text, member.key_start)
    if index + 1 == len(obj.members) and member.comma is None and index:
        # the last member: the comma before it goes, and the line break before its line
        previous = obj.members[index - 1]
        assert previous.comma is not None
        cut = start - _break_before(text, start)
        end = own_end
        rest = text[own_end:_line_end(text, own_end)]
        if rest.strip().startswith("//"):
            end = own_end + len(rest)
        return (text[:previous.comma] + text[previous.comma + 1:cut] + text[end:])
    if len(obj.members) == 1 and not text[obj.start + 1:start].strip() and \
            not text[own_end:obj.end - 1].strip():  # the only member: back to {}
        return text[:obj.start + 1] + text[obj.end - 1:]
    # its whole line (or lines), up to and with the line break after it
    end = _line_end(text, own_end)
    if text[own_end:end].strip() and not text[own_end:end].strip().startswith("//"):
        end = own_end  # (more on that line: keep it)
    else:
        end = min(len(text), end + (2 if text[end:end + 2] == "\r\n" else 1))
    return text[:start] + text[end:]
