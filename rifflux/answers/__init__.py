"""What an answer says, once for every surface (MCP, the JSON API, the command line): a
search answer (``search``: its fields, its hints in each surface's ``Words``, what a
budget cut and how to read on) and the budget that keeps an answer within ``max_chars``
(``budget``). The bounds a caller may ask for are in ``rifflux.limits``."""

from .budget import Shaped, answer_text, within
from .search import (
    FIRST_LOOK_CHARS,
    SNIPPET_WIDTHS,
    Answered,
    Searched,
    Why,
    Words,
    search_answer,
    why,
)

__all__ = ["FIRST_LOOK_CHARS", "SNIPPET_WIDTHS", "Answered", "Searched", "Shaped", "Why", "Words",
           "answer_text", "search_answer", "why", "within"]
