"""mistune's block-level tokens -> readable plain text (markup flattened, code kept)."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import mistune


@functools.cache
def _parser() -> mistune.Markdown:
    """The parser, made (and mistune imported) by the first parse: a process that only
    searches never parses markdown."""
    import mistune

    return mistune.create_markdown(
        renderer=None,
        plugins=["table", "strikethrough", "footnotes", "task_lists", "def_list"],
    )


Token = dict[str, Any]


def block_tokens(body: str) -> list[tuple[Token, int, int]]:
    """mistune's block-level AST: each top-level token with the span of ``body`` it was
    parsed from (start and end offsets).

    The loop mirrors ``mistune.BlockParser.parse`` (mistune 3), recording where each
    token came from; tests check that it yields exactly mistune's own tokens. Inline
    markup is rendered by :func:`inline` with a few regular expressions instead of
    mistune's inline parser, which costs more than half of the parse time and whose
    output (emphasis, links) we flatten to text anyway.
    """
    parser = _parser().block
    state = parser.state_cls()
    state.process(body)
    rules = parser.rules
    sc = parser.compile_sc(rules)
    spans = _Spans(state.tokens)
    while state.cursor < state.cursor_max:
        spans.begin(state.cursor)
        if "indent_code" in rules:
            end_pos = parser._parse_indent_code_fast(state)
            if end_pos is not None:
                state.cursor = end_pos
                spans.end(state.cursor)
                continue
        m = sc.match(state.src, state.cursor)
        if not m and parser._parse_plain_paragraph(state, sc):
            spans.end(state.cursor)
            continue
        if not m:
            m = sc.search(state.src, state.cursor)
        if not m:
            break
        end_pos = m.start()
        if end_pos > state.cursor:
            state.add_paragraph(state.get_text(end_pos))
            state.cursor = end_pos
            spans.end(end_pos)
            spans.begin(end_pos)
        end_pos2 = parser.parse_method(m, state)
        if end_pos2:
            state.cursor = end_pos2
        else:
            end_pos3 = state.find_line_end()
            state.add_paragraph(state.get_text(end_pos3))
            state.cursor = end_pos3
        spans.end(state.cursor)
    if state.cursor < state.cursor_max:
        spans.begin(state.cursor)
        state.add_paragraph(state.src[state.cursor :])
        state.cursor = state.cursor_max
        spans.end(state.cursor)
    return [(tok, start, end) for tok, (start, end) in zip(state.tokens, spans.spans, strict=True)]


class _Spans:
    """The source span of each top-level token, kept in step with the token list.

    A parsing step appends tokens, and may change the last one or two (a paragraph
    extended by a lazy line, a paragraph turned into a setext heading, a paragraph
    replaced by a definition list): only that tail is looked at after each step.
    """

    def __init__(self, tokens: list[Token]) -> None:
        self._tokens = tokens
        self.spans: list[tuple[int, int]] = []
        self._start = 0
        self._tail: list[tuple[Token, tuple[int, int], tuple[object, ...]]] = []
        self._keep = 0

    def begin(self, start: int) -> None:
        self._start = start
        self._keep = max(0, len(self._tokens) - 2)
        self._tail = [(tok, span, _fingerprint(tok)) for tok, span in
                      zip(self._tokens[self._keep :], self.spans[self._keep :], strict=True)]

    def end(self, end: int) -> None:
        old = {id(tok): (span, fp) for tok, span, fp in self._tail}
        now = self._tokens[self._keep :]
        kept = {id(tok) for tok in now}
        first = min([self._start, *(s for tok, (s, _), _ in self._tail if id(tok) not in kept)])
        tail: list[tuple[int, int]] = []
        for tok in now:
            if id(tok) not in old:
                tail.append((first, end))  # new (or replacing what disappeared)
                continue
            span, fp = old[id(tok)]
            # changed in place (a lazy line, a setext underline): it ends here now
            tail.append(span if fp == _fingerprint(tok) else (span[0], end))
        self.spans[self._keep :] = tail


def _fingerprint(tok: Token) -> tuple[object, ...]:
    return (tok.get("type"), len(str(tok.get("text", ""))), len(tok.get("children", ())))


_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\](?:\([^)]*\)|\[[^\]]*\])")
_AUTOLINK = re.compile(r"<((?:https?|mailto|ftp):[^>\s]+)>")
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_BREAK = re.compile(r"<(?:br|hr)\s*/?>", re.IGNORECASE)
#: An HTML comment (an unclosed one runs to the end).
COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_NEEDS_INLINE = re.compile(r"[\[<*_\\]")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def _group1(m: re.Match[str]) -> str:
    return m.group(1)


def _group2(m: re.Match[str]) -> str:
    return m.group(2)


_CODE_SPAN = re.compile(r"`+[^`]*`+")
#: An Obsidian tag: ``#`` after a space or at a line start, then letters, digits, ``_``,
#: ``-`` and ``/``, with at least one character that is not a digit.
_INLINE_TAG = re.compile(r"(?<!\S)#([\w/-]*[^\W\d][\w/-]*)")


#: A colour such as ``#1f2328`` or ``#fff0``: hex digits, at least one of them a number.
_COLOUR = re.compile(r"^(?=[a-f]*\d)(?:[0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$", re.IGNORECASE)


def inline_tags(text: str) -> list[str]:
    """The ``#tags`` in rendered text (not in code spans; headings are rendered as ``## x``,
    whose ``#`` is followed by a space or another ``#``, so they are not tags; CSS colours
    are not tags either)."""
    if "#" not in text:
        return []
    return [t for t in _INLINE_TAG.findall(_CODE_SPAN.sub(" ", text)) if not _COLOUR.match(t)]


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
            t = _TAG.sub("", _BREAK.sub(" ", _AUTOLINK.sub(_group1, COMMENT.sub("", t))))
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
    if kind in ("block_html", "inline_html"):  # comments are invisible to readers
        return COMMENT.sub("", str(tok.get("raw", ""))).strip()
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
