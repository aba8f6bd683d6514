"""The kinds of file Rifflux reads, by name: their suffixes, their globs, the defaults,
and the extractors installed packages add (the ``rifflux.extractors`` entry points).

Light on purpose: settings read it at start (no extractor is loaded for it), and it
imports nothing of the package: an installed extractor is any object with ``kind``,
``suffixes``, ``unit``, ``globs`` and ``extract`` (``core.extract.Extractor``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any, Literal

from .errors import InvalidArgumentError

logger = logging.getLogger(__name__)

#: What a file's locations count: its lines, or (as well) a PDF's pages, a deck's slides.
Unit = Literal["line", "page", "slide"]

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
#: ``.log`` is read as text, but only when asked for (``--include "*.log"``).
TEXT_SUFFIXES = (".txt", ".text", ".rst", ".org", ".adoc", ".asciidoc", ".log")
#: Source code read along its syntax tree (``extract.code``), by language.
GRAMMAR_SUFFIXES: dict[str, tuple[str, ...]] = {
    "python": (".py", ".pyi"),
    "javascript": (".js", ".mjs", ".cjs", ".jsx"),
    "typescript": (".ts", ".mts", ".cts"),
    "tsx": (".tsx",),
    "go": (".go",),
    "rust": (".rs",),
    "java": (".java",),
    "c": (".c", ".h"),
    "cpp": (".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++"),
    "bash": (".sh", ".bash"),
}
#: Source code without a grammar here: read as plain text, split at blank lines.
PLAIN_CODE_SUFFIXES = (".rb", ".php", ".kt", ".kts", ".swift", ".scala", ".cs", ".lua",
                       ".pl", ".pm", ".r", ".jl", ".sql", ".zig", ".dart", ".ex", ".exs",
                       ".erl", ".hs", ".ml", ".clj", ".groovy", ".ps1", ".zsh", ".fish")
CODE_SUFFIXES = (*(s for suffixes in GRAMMAR_SUFFIXES.values() for s in suffixes),
                 *PLAIN_CODE_SUFFIXES)


#: Every suffix a built-in extractor claims (``core.links``: a link to such a file is a
#: link, which resolves when the index holds the file).
BUILT_IN_SUFFIXES = frozenset((*MARKDOWN_SUFFIXES, *TEXT_SUFFIXES, ".pdf", ".pptx", ".docx",
                               *CODE_SUFFIXES))


def _globs(suffixes: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"*{s}" for s in suffixes)


#: The built-in kinds and the globs that name their files.
KIND_GLOBS: dict[str, tuple[str, ...]] = {
    "markdown": _globs(MARKDOWN_SUFFIXES),
    "text": _globs(tuple(s for s in TEXT_SUFFIXES if s != ".log")),
    "pdf": ("*.pdf",),
    "pptx": ("*.pptx",),
    "docx": ("*.docx",),
    "code": _globs(CODE_SUFFIXES),
}
#: What a folder's notes are, indexed unless settings say otherwise: source code only
#: when asked (a home folder holds much code nobody wants among its notes' answers).
DEFAULT_KINDS = ("markdown", "text", "pdf", "pptx", "docx")
#: The name of the default kinds in a list of kinds (``--kinds default,code``).
DEFAULT_NAME = "default"
DEFAULT_GLOBS = tuple(g for kind in DEFAULT_KINDS for g in KIND_GLOBS[kind])
#: What each kind's chunks locate besides lines.
UNITS: dict[str, Unit] = {"pdf": "page", "pptx": "slide"}

ENTRY_POINT_GROUP = "rifflux.extractors"
_MEMBERS = ("kind", "suffixes", "unit", "globs", "extract")


#: The entry points a parent process found, handed to its parse workers (``given``): a
#: worker then loads them without importing ``importlib.metadata`` and scanning every
#: installed package (0.14 s of each worker's first file, on the path to a searchable
#: file).
_given: tuple[tuple[str, str], ...] | None = None


@functools.cache
def entry_point_specs() -> tuple[tuple[str, str], ...]:
    """The ``rifflux.extractors`` entry points, as (name, ``module:attribute``)."""
    if _given is not None:
        return _given
    from importlib.metadata import entry_points

    return tuple((entry.name, entry.value) for entry in entry_points(group=ENTRY_POINT_GROUP))


def given(specs: tuple[tuple[str, str], ...]) -> None:
    """The entry points as another process found them (``entry_point_specs``): a parse
    worker is handed its parent's, before it reads its first file."""
    global _given
    if _given is None and entry_point_specs.cache_info().currsize == 0:
        _given = tuple(specs)


@functools.cache
def installed() -> tuple[Any, ...]:
    """The extractors of the ``rifflux.extractors`` entry points; one that cannot be
    loaded, or lacks a member, is left out (logged): one broken package must not stop
    indexing."""
    found = []
    for name, value in entry_point_specs():
        try:
            extractor = _load(value)
        except Exception:
            logger.exception("the extractor %s (%s) could not be loaded", name, value)
            continue
        missing = [m for m in _MEMBERS if not hasattr(extractor, m)]
        if missing:
            logger.error("the extractor %s (%s) lacks %s: it is left out", name, value,
                         ", ".join(missing))
            continue
        found.append(extractor)
    return tuple(found)


def _load(value: str) -> Any:
    """An entry point's object, from its ``module:attribute.path`` (as
    ``importlib.metadata.EntryPoint.load`` reads it)."""
    import importlib

    module, _, attrs = value.partition(":")
    found: Any = importlib.import_module(module.strip())
    for attr in filter(None, attrs.split("[")[0].strip().split(".")):
        found = getattr(found, attr)
    return found


def known_kinds() -> dict[str, tuple[str, ...]]:
    """Every kind by name with its globs: the built-in ones, then installed ones'."""
    known: dict[str, tuple[str, ...]] = dict(KIND_GLOBS)
    for extractor in installed():
        kind = str(extractor.kind)
        known[kind] = tuple(dict.fromkeys((*known.get(kind, ()), *extractor.globs)))
    return known


def kind_globs(kinds: Sequence[str]) -> tuple[str, ...]:
    """The include globs of these kinds of file (``default``: the default kinds')."""
    named = [k.strip().lower() for k in kinds if k.strip()]
    known = dict(KIND_GLOBS)
    if any(k not in known and k != DEFAULT_NAME for k in named):
        known = known_kinds()  # (an installed extractor's kind?)
    out: list[str] = []
    for kind in named:
        if kind == DEFAULT_NAME:
            out += [g for k in DEFAULT_KINDS for g in known[k]]
        elif kind in known:
            out += known[kind]
        else:
            raise InvalidArgumentError(
                f"no kind of file is called {kind!r}: give some of "
                f"{', '.join([DEFAULT_NAME, *known])} (--kinds, RIFFLUX_KINDS)")
    return tuple(dict.fromkeys(out))
