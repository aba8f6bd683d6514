"""The bounds every surface takes and checks, in one place: the library, the command line,
MCP's input schemas and the JSON API's models all read them from here (standard library
only: the MCP front, which loads before anything else, checks early calls against the
schema these bounds were published in, not against this module)."""

from __future__ import annotations

from typing import Literal

__all__ = ["CONTENT_MODES", "DEFAULT_MAX_CHARS", "DUPLICATES", "MAX_DEPTH", "MAX_LIMIT",
           "MAX_MAX_CHARS", "MAX_QUERY_CHARS", "MAX_TOP_K", "MIN_MAX_CHARS", "MODES",
           "RESOURCE_PAGE", "SNIPPET_CHARS", "ContentMode", "Duplicates", "Mode"]

#: How a search ranks: by words, by meaning, or both (``rifflux.types`` says them too:
#: kept here, where a command that only reads the index checks them without importing
#: the contract's shapes).
Mode = Literal["lexical", "semantic", "hybrid"]
MODES: tuple[Mode, ...] = ("lexical", "semantic", "hybrid")
#: What a hit carries: its whole text, or only its snippet.
ContentMode = Literal["full", "snippet"]
CONTENT_MODES: tuple[ContentMode, ...] = ("full", "snippet")
#: What a search does with chunks holding the same text: gives it once (``collapse``,
#: its other places in ``also_in``) or gives every copy (``all``).
Duplicates = Literal["collapse", "all"]
DUPLICATES: tuple[Duplicates, ...] = ("collapse", "all")

#: The most hits one search returns over MCP and HTTP (the library and the command line
#: take any number).
MAX_TOP_K = 100
#: The deepest link neighbourhood (``near``/``depth``, ``neighbors``): past a few links,
#: a vault is one neighbourhood.
MAX_DEPTH = 10
#: An answer's size in characters of its JSON text, as an agent receives it
#: (``answers.budget``): the default, under the 25,000-token limit some clients enforce,
#: and the bounds a caller may ask for.
DEFAULT_MAX_CHARS = 40_000
MIN_MAX_CHARS = 1_000
MAX_MAX_CHARS = 10_000_000
#: The most entries a list answer gives (links, neighbours, recent notes).
MAX_LIMIT = 1_000
#: The notes a page of MCP's resources/list gives (of at most MAX_LIMIT in all).
RESOURCE_PAGE = 100
#: A snippet's width: the least, the default, the most.
SNIPPET_CHARS = (40, 240, 1_000)
#: The longest query the JSON API takes.
MAX_QUERY_CHARS = 4_000
