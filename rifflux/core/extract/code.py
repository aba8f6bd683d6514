"""Source code: chunks along the syntax tree, a function, class or method each.

Parsed by tree-sitter with the grammars its authors publish as wheels
(``tree-sitter-python``, ``-javascript``, ``-typescript``, ``-go``, ``-rust``, ``-java``,
``-c``, ``-cpp``, ``-bash``: compiled in, nothing fetched at run time). A definition's
section runs from the comments and attributes just above it to its end, its breadcrumb
the names that enclose it (``Rifflux > search``); a class's (an impl's, a namespace's)
own lines around its members are sections of their own, and so is the code between
definitions at the top. A long definition is split at its body's statements, never
inside a line (``sections.split_code``).

Other languages, a grammar that cannot be loaded and a file it fails on are read as plain
text (blocks between blank lines), the last two saying so. A file with a line longer
than ``MAX_LINE`` characters (minified or generated code) is skipped, saying so.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...kinds import CODE_SUFFIXES, GRAMMAR_SUFFIXES, KIND_GLOBS, Unit
from .base import Extracted, Refused, Section, Source
from .text import decoded, paragraphs

if TYPE_CHECKING:
    from ..packing import ChunkLimits

#: A longer line is not code a person wrote: the file is skipped.
MAX_LINE = 20_000


@dataclass(frozen=True, slots=True)
class Grammar:
    """How one language's syntax tree is read: the wheel and function of its grammar,
    the node types that are definitions, those among them whose members are too, and
    those that only wrap a definition (``export``, ``template<...>``)."""

    module: str
    function: str
    definitions: frozenset[str]
    containers: frozenset[str]
    wrappers: frozenset[str] = frozenset()


def _g(module: str, definitions: str, containers: str, wrappers: str = "",
       function: str = "language") -> Grammar:
    return Grammar(module, function, frozenset(definitions.split()),
                   frozenset(containers.split()), frozenset(wrappers.split()))


_JS = ("function_declaration generator_function_declaration class_declaration class "
       "method_definition lexical_declaration variable_declaration")
_TS = (f"{_JS} abstract_class_declaration interface_declaration enum_declaration "
       "type_alias_declaration internal_module module function_signature")
GRAMMARS: dict[str, Grammar] = {
    "python": _g("tree_sitter_python", "function_definition class_definition "
                 "decorated_definition", "class_definition"),
    "javascript": _g("tree_sitter_javascript", _JS, "class_declaration class",
                     "export_statement"),
    # (a namespace at the top is an expression statement's: ``namespace Birds {...}``)
    "typescript": _g("tree_sitter_typescript", _TS, "class_declaration class "
                     "abstract_class_declaration interface_declaration internal_module module",
                     "export_statement ambient_declaration expression_statement",
                     "language_typescript"),
    "tsx": _g("tree_sitter_typescript", _TS, "class_declaration class "
              "abstract_class_declaration interface_declaration internal_module module",
              "export_statement ambient_declaration expression_statement", "language_tsx"),
    "go": _g("tree_sitter_go", "function_declaration method_declaration type_declaration",
             ""),
    "rust": _g("tree_sitter_rust", "function_item struct_item enum_item trait_item "
               "impl_item mod_item union_item macro_definition function_signature_item",
               "impl_item trait_item mod_item"),
    "java": _g("tree_sitter_java", "class_declaration interface_declaration "
               "enum_declaration record_declaration method_declaration "
               "constructor_declaration annotation_type_declaration",
               "class_declaration interface_declaration enum_declaration "
               "record_declaration"),
    "c": _g("tree_sitter_c", "function_definition struct_specifier enum_specifier "
            "union_specifier", "", "type_definition declaration"),
    "cpp": _g("tree_sitter_cpp", "function_definition class_specifier struct_specifier "
              "enum_specifier union_specifier namespace_definition",
              "class_specifier struct_specifier namespace_definition",
              "template_declaration type_definition declaration"),
    "bash": _g("tree_sitter_bash", "function_definition", ""),
}
_LANGUAGE_OF = {suffix: language for language, suffixes in GRAMMAR_SUFFIXES.items()
                for suffix in suffixes}
#: Node types above a definition that belong to it: its comments and attributes.
_LEADING = ("comment", "attribute_item", "line_comment", "block_comment", "decorator")


class Code:
    kind: str = "code"
    suffixes: tuple[str, ...] = CODE_SUFFIXES
    unit: Unit = "line"
    globs: tuple[str, ...] = KIND_GLOBS["code"]

    def extract(self, source: Source, limits: ChunkLimits) -> Extracted:
        text = decoded(source)
        longest = max((len(line) for line in text.text.split("\n")), default=0)
        if longest > MAX_LINE:
            raise Refused(f"a line of {longest:,} characters (minified or generated code?): "
                          "it is skipped")
        language = _LANGUAGE_OF.get(source.name[source.name.rfind("."):].lower())
        warning = text.warning
        sections: list[Section] | None = None
        if language is not None:
            try:
                sections = list(_syntax_sections(text.text, language))
            except Exception as exc:  # a grammar that fails costs its structure only
                said = (f"the {language} grammar failed ({type(exc).__name__}: {exc}): "
                        "read as plain text")
                warning = f"{warning}; {said}" if warning else said
        if sections is None:
            sections = [Section(start=s.start, end=s.end, code=True)
                        for s in paragraphs(text.text, {})]
        return Extracted(text=text.text, sections=sections, encoding=text.encoding,
                         warning=warning)


CODE = Code()


@functools.cache
def _parser(language: str) -> Any:
    import tree_sitter

    grammar = GRAMMARS[language]
    module = importlib.import_module(grammar.module)
    return tree_sitter.Parser(tree_sitter.Language(getattr(module, grammar.function)()))


def _syntax_sections(text: str, language: str) -> Iterator[Section]:
    grammar = GRAMMARS[language]
    data = text.encode("utf-8")
    tree = _parser(language).parse(data)
    starts = [0]
    newline = text.find("\n")
    while newline >= 0:
        starts.append(newline + 1)
        newline = text.find("\n", newline + 1)
    ends = [s - 1 for s in starts[1:]] + [len(text)]

    def span(first: int, last: int, path: tuple[str, ...], breaks: tuple[int, ...] = ()
             ) -> Section:
        return Section(start=starts[first], end=ends[last], headings=path, code=True,
                       breaks=breaks)

    def walk(node: Any, path: tuple[str, ...], first: int, last: int) -> Iterator[Section]:
        """The sections of lines ``first``-``last`` of ``node`` (a container, or the
        file): its members' own, and its lines around them under ``path``."""
        at = first
        for member in _members(node, grammar):
            top = _leading_start(member)
            m_first, m_last = max(top, at), member.end_point[0]
            if m_first > m_last:
                continue
            if m_first > at:
                yield span(at, m_first - 1, path)
            inner = _unwrapped(member, grammar)
            name = _name(inner, data)
            crumbs = (*path, name) if name else path
            if inner.type in grammar.containers:
                yield from walk(_body(inner) or inner, crumbs, m_first, m_last)
            else:
                yield span(m_first, m_last, crumbs, _statements(inner, m_first))
            at = m_last + 1
        if at <= last:
            yield span(at, last, path)

    root = tree.root_node
    yield from walk(root, (), 0, len(starts) - 1)


def _members(node: Any, grammar: Grammar) -> Iterator[Any]:
    """The definitions directly in ``node`` (through wrappers), in order."""
    for child in node.named_children:
        if child.type in grammar.wrappers:
            if any(c.type in grammar.definitions for c in child.named_children) \
                    or _is_definition(child, grammar):
                yield child
        elif _is_definition(child, grammar):
            yield child


def _is_definition(node: Any, grammar: Grammar) -> bool:
    if node.type not in grammar.definitions:
        return False
    if node.type in ("lexical_declaration", "variable_declaration"):
        # ``const f = () => ...``: a function by another name; other constants are not
        return any(d.child_by_field_name("value") is not None
                   and d.child_by_field_name("value").type in (
                       "arrow_function", "function_expression", "function", "class")
                   for d in node.named_children if d.type == "variable_declarator")
    if node.type in ("struct_specifier", "enum_specifier", "union_specifier",
                     "class_specifier"):
        return node.child_by_field_name("body") is not None
    return True


def _unwrapped(node: Any, grammar: Grammar) -> Any:
    """The definition a wrapper (``export``, a decorated definition, a template) holds."""
    for _ in range(4):
        inner = node.child_by_field_name("definition") or node.child_by_field_name(
            "declaration")
        if inner is None and node.type in grammar.wrappers:
            inner = next((c for c in node.named_children
                          if c.type in grammar.definitions), None)
        if inner is None:
            return node
        node = inner
    return node


def _name(node: Any, data: bytes) -> str:
    """What a definition is called: its name, a C function's declarator's, a Go method's
    receiver type and name, an impl's type, a ``const f =``'s variable."""
    if node.type in ("lexical_declaration", "variable_declaration"):
        for d in node.named_children:
            if d.type == "variable_declarator" and d.child_by_field_name("name") is not None:
                return _text(d.child_by_field_name("name"), data)
    if node.type == "type_declaration":
        spec = next((c for c in node.named_children if c.type in ("type_spec",
                                                                   "type_alias")), None)
        return _name(spec, data) if spec is not None else ""
    if node.type == "impl_item":
        kind, trait = node.child_by_field_name("type"), node.child_by_field_name("trait")
        shown = _text(kind, data) if kind is not None else "impl"
        return f"{shown} ({_text(trait, data)})" if trait is not None else shown
    name = node.child_by_field_name("name")
    if name is None:
        declarator = node.child_by_field_name("declarator")
        while declarator is not None and declarator.child_by_field_name("declarator"):
            declarator = declarator.child_by_field_name("declarator")
        name = declarator
    shown = _text(name, data) if name is not None else ""
    if node.type == "method_declaration" and node.child_by_field_name("receiver"):
        receiver = _text(node.child_by_field_name("receiver"), data)
        kind = receiver.strip("()").split()[-1].lstrip("*") if receiver.strip("()") else ""
        kind = kind.split("[")[0]  # (a generic type's parameters: ``Owl[T]`` is ``Owl``)
        return f"{kind}.{shown}" if kind else shown
    return shown


def _text(node: Any, data: bytes) -> str:
    return " ".join(data[node.start_byte:node.end_byte].decode("utf-8", "replace").split())


def _leading_start(node: Any) -> int:
    """The first line of a definition with the comments and attributes right above it
    (for the first of a body, those before the body too: a comment between a Python
    class's line and its first method is the class's child, not its body's)."""
    first: int = node.start_point[0]
    prev = node.prev_named_sibling
    if prev is None and node.parent is not None:
        prev = node.parent.prev_named_sibling
    while prev is not None and prev.type in _LEADING and prev.end_point[0] >= first - 1:
        first = prev.start_point[0]
        prev = prev.prev_named_sibling
    return first


def _body(node: Any) -> Any:
    return node.child_by_field_name("body")


def _statements(node: Any, first: int) -> tuple[int, ...]:
    """Where the statements of a definition's body start (lines within its section)."""
    body = _body(node)
    while body is not None and body.named_child_count == 1 \
            and body.named_children[0].named_child_count > 0:
        body = body.named_children[0]
    if body is None:
        return ()
    return tuple(c.start_point[0] - first for c in body.named_children)
