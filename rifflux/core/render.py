"""mistune's block-level tokens -> readable plain text (markup flattened, code kept)."""

from __future__ import annotations

import re
from typing import Any

import mistune

_PARSER = mistune.create_markdown(
    renderer=None,
    plugins=["table", "strikethrough", "footnotes", "task_lists", "def_list"],
)


def block_tokens(body: str) -> list[dict[str, Any]]:
    """mistune's block-level AST.

    Inline markup is rendered by :func:`inline` with a few regular expressions
    instead of mistune's inline parser, which costs more than half of the
    parse time and whose output (emphasis, links) we flatten to text anyway.
    """
    state = _PARSER.block.state_cls()
    state.process(body)
    _PARSER.block.parse(state)
    return list(state.tokens)


_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\](?:\([^)]*\)|\[[^\]]*\])")
_AUTOLINK = re.compile(r"<((?:https?|mailto|ftp):[^>\s]+)>")
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_NEEDS_INLINE = re.compile(r"[\[<*_\\]")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def _group1(m: re.Match[str]) -> str:
    return m.group(1)


def _group2(m: re.Match[str]) -> str:
    return m.group(2)


def inline(text: str) -> str:
    """Inline markdown -> readable text: link and image text kept, code spans kept."""
    if not _NEEDS_INLINE.search(text):
        return text.strip("\n")
    pieces = re.split(r"(`+[^`]*`+)", text)  # leave code spans untouched
    for i in range(0, len(pieces), 2):
        t = pieces[i]
        if "[" in t:
            t = _LINK.sub(_group1, _IMAGE.sub(_group1, t))
        if "<" in t:
            t = _TAG.sub("", _AUTOLINK.sub(_group1, t))
        if "**" in t or "__" in t:
            t = _STRONG.sub(_group2, t)
        if "\\" in t:
            t = _ESCAPE.sub(_group1, t)
        pieces[i] = t
    return "".join(pieces).strip("\n")


def block(tok: dict[str, Any], depth: int = 0) -> str:
    """One block token (and its children) -> text; a fenced code block stays fenced."""
    kind = tok.get("type")
    if kind in ("paragraph", "block_text", "table_cell"):
        return inline(str(tok.get("text", "")))
    if kind == "block_code":
        info = str(tok.get("attrs", {}).get("info", "") or "").strip()
        code = str(tok.get("raw", "")).rstrip("\n")
        return f"```{info}\n{code}\n```"
    if kind == "list":
        return _list(tok, depth)
    if kind == "table":
        return _table(tok)
    if kind == "block_quote":
        inner = "\n\n".join(block(c, depth) for c in tok.get("children", []))
        return "\n".join(f"> {line}".rstrip() for line in inner.strip("\n").split("\n"))
    if kind in ("blank_line", "thematic_break"):
        return ""
    if kind == "heading":  # inside a quote or list
        return inline(str(tok.get("text", "")))
    if kind in ("block_html", "inline_html"):
        return str(tok.get("raw", "")).strip()
    if "children" in tok:
        parts = [block(c, depth) for c in tok["children"]]
        return "\n".join(p for p in parts if p)
    return inline(str(tok.get("text", ""))) if "text" in tok else str(tok.get("raw", ""))


def _list(tok: dict[str, Any], depth: int) -> str:
    attrs = tok.get("attrs", {})
    ordered = bool(attrs.get("ordered"))
    start = int(attrs.get("start", 1) or 1)
    indent = "  " * depth
    lines: list[str] = []
    for n, item in enumerate(tok.get("children", [])):
        marker = f"{start + n}." if ordered else "-"
        if item.get("type") == "task_list_item":
            marker += " [x]" if item.get("attrs", {}).get("checked") else " [ ]"
        parts: list[str] = []
        for child in item.get("children", []):
            if child.get("type") == "list":
                parts.append(_list(child, depth + 1))
            else:
                text = block(child, depth + 1)
                if text:
                    parts.append(text)
        first, *rest = parts or [""]
        lines.append(f"{indent}{marker} {first}".rstrip())
        lines.extend(p if p.startswith(indent + "  ") else _indent(p, indent + "  ") for p in rest)
    return "\n".join(lines)


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else line for line in text.split("\n"))


def _table(tok: dict[str, Any]) -> str:
    rows: list[str] = []
    for section in tok.get("children", []):
        cells_rows = (
            [section] if section.get("type") == "table_head" else section.get("children", [])
        )
        for row in cells_rows:
            cells = [inline(str(c.get("text", ""))).strip() for c in row.get("children", [])]
            rows.append(" | ".join(cells))
    return "\n".join(rows)
