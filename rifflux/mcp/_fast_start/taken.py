"""Which ``search_rifflux`` calls the front takes for ``early`` (standard library only:
the front decides in its reader thread, before anything else has loaded)."""

from __future__ import annotations

from typing import Any

__all__ = ["EARLY_BOUNDS", "early_search"]

#: The arguments of a ``search_rifflux`` call answered before the SDK (``early``).
_EARLY_ARGS = frozenset({"query", "top_k", "mode", "content", "max_per_file", "explain",
                         "max_chars"})
#: Their bounds, as ``mcp.params`` and ``mcp.budget`` declare them (which import pydantic);
#: a test checks that they agree.
EARLY_BOUNDS = {"top_k": (1, 100), "max_per_file": (1, None),
                "max_chars": (1_000, 10_000_000)}


def early_search(message: dict[str, Any]) -> bool:
    """A ``search_rifflux`` call whose arguments are plainly valid: a string ``query``
    and, of the others, only those in ``_EARLY_ARGS``, of their exact JSON types and within
    their bounds (nothing the SDK would convert or refuse)."""
    params = message.get("params")
    if message.get("method") != "tools/call" or not isinstance(params, dict):
        return False
    args = params.get("arguments")
    if params.get("name") != "search_rifflux" or not isinstance(args, dict):
        return False
    if set(params) - {"name", "arguments"} or not set(args) <= _EARLY_ARGS:
        return False  # (_meta, a progress token, filters, db_path: the SDK's)
    for name, (low, high) in EARLY_BOUNDS.items():
        value = args.get(name)
        if name in args and not (value is None and name == "max_per_file") and not (
                type(value) is int and value >= low and (high is None or value <= high)):
            return False
    return (isinstance(args.get("query"), str)
            and args.get("mode", "hybrid") in ("hybrid", "lexical", "semantic")
            and args.get("content", "full") in ("full", "snippet")
            and type(args.get("explain", False)) is bool)
