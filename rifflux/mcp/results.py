"""A tool call's result as the client receives it, made by one set of functions for both
paths that answer calls: the SDK's server (``server.RiffluxMCPServer.call_tool``) and the
searches the front takes before the SDK has loaded (``_fast_start.early``). Nothing here
imports the SDK: a result is the JSON object of a ``CallToolResult``.

The text is compact JSON (an agent pays for every character; the SDK would indent it).
"""

from __future__ import annotations

from typing import Any

from ..answers.budget import answer_text

__all__ = ["tool_error", "tool_result", "unexpected"]


def tool_result(value: dict[str, Any]) -> dict[str, Any]:
    """A tool's answer: its JSON text, and the object itself as ``structuredContent``."""
    return {"content": [{"type": "text", "text": answer_text(value)}],
            "structuredContent": value, "isError": False}


def tool_error(message: str) -> dict[str, Any]:
    """A call that failed, saying why and what to do (the library's words, or the
    tool's): the server goes on."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


def unexpected(tool: str, exc: BaseException) -> str:
    """What a call that failed in a way Rifflux did not expect says (its traceback is in
    the server's log, not in the answer)."""
    return (f"{tool} failed: unexpected {type(exc).__name__}; this call failed and the "
            "server goes on (its log has the traceback; please report it)")
