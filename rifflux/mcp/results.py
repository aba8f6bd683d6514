"""A tool call's result as the client receives it, made by one set of functions for both
paths that answer calls: the SDK's server (``server.RiffluxMCPServer.call_tool``) and the
searches the front takes before the SDK has loaded (``_fast_start.early``). Nothing here
imports the SDK: a result is the JSON object of a ``CallToolResult``.

A tool's answer is its compact JSON text, and nothing else: an agent pays for every
character it is given, and clients differ in what they give it. The MCP specification
makes ``structuredContent`` optional without an ``outputSchema`` (and asks a server that
sends it to send its JSON text too, "for backwards compatibility"); Claude Code, Claude
Desktop and Cursor hand the model the text, other clients the structured object, some
both. Sent both ways, one answer is paid for twice, and ``max_chars`` would bound only
half of what the client receives. So the tools publish no ``outputSchema`` and send no
``structuredContent``: the one text block is what ``max_chars`` bounds, and a program
reads it with one ``json.loads``.
"""

from __future__ import annotations

from typing import Any

from ..answers.budget import answer_text

__all__ = ["tool_error", "tool_result", "unexpected"]


def tool_result(value: dict[str, Any]) -> dict[str, Any]:
    """A tool's answer: its compact JSON text, once."""
    return {"content": [{"type": "text", "text": answer_text(value)}], "isError": False}


def tool_error(message: str) -> dict[str, Any]:
    """A call that failed, saying why and what to do (the library's words, or the
    tool's): the server goes on."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


def unexpected(tool: str, exc: BaseException) -> str:
    """What a call that failed in a way Rifflux did not expect says (its traceback is in
    the server's log, not in the answer)."""
    return (f"{tool} failed: unexpected {type(exc).__name__}; this call failed and the "
            "server goes on (its log has the traceback; please report it)")
