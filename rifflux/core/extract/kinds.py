"""The kinds of file Rifflux reads, by name: their suffixes, their globs, the defaults.

Light on purpose: settings read it at start (no extractor is loaded for it).
"""

from __future__ import annotations

from typing import Literal

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
