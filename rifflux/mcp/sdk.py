"""Everything Rifflux needs from the MCP SDK beyond ``MCPServer``'s public surface, in one
place: when the SDK changes, this is the module to look at.

``MCPServer`` serves its low-level server only over the process's own stdio
(``run_stdio_async``); serving the front's queue of lines, and asking the SDK
in memory what it answers to the handshake, need the low-level server object
(a private attribute) and its dual-era serve loop.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server import MCPServer
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_dual_era_loop
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCRequest, JSONRPCResponse, jsonrpc_message_adapter
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS

__all__ = ["HANDSHAKE_PROTOCOL_VERSIONS", "Message", "answer_to", "connection_of", "dump",
           "handle", "is_request", "loads", "lowlevel", "parse", "run_lowlevel",
           "serve_in_memory", "set_instructions", "to_message", "tool_input_schema"]

Message = SessionMessage


def lowlevel(server: MCPServer[Any]) -> Server[Any]:
    return server._lowlevel_server


def tool_input_schema(server: MCPServer[Any], name: str) -> dict[str, Any] | None:
    """A registered tool's input schema: the very object ``tools/list`` publishes, so a
    change to it shows there (None: no such tool)."""
    return server._tool_input_schema(name)


def handle(server: MCPServer[Any], method: str, params_type: type[Any], handler: Any) -> None:
    """Answer ``method`` with ``handler(ctx, params)`` instead of ``MCPServer``'s own (the
    resources, which ``MCPServer`` lists from a fixed registry: ours come from the
    index, paginated)."""
    lowlevel(server).add_request_handler(method, params_type, handler)


def set_instructions(server: MCPServer[Any], instructions: str) -> None:
    """What the next ``initialize`` answers as the server's instructions (read from the
    low-level server each time: ``create_initialization_options``)."""
    lowlevel(server).instructions = instructions


def connection_of(session: Any) -> Any:
    """The client's connection a request came on (what outlives the request: a
    ``notifications/resources/updated`` is sent on it later)."""
    return session._connection


def parse(line: str) -> SessionMessage | Exception:
    """One line from the client; a bad frame becomes the exception the SDK answers with
    an error, as over its own stdio transport."""
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except Exception as exc:
        return exc


def to_message(message: dict[str, Any]) -> SessionMessage:
    return SessionMessage(jsonrpc_message_adapter.validate_python(message, by_name=False))


def dump(out: SessionMessage) -> str:
    """The message as one line of JSON, as the SDK writes it."""
    return out.message.model_dump_json(by_alias=True, exclude_unset=True)


def answer_to(out: SessionMessage) -> Any:
    """The request id ``out`` answers (a result or an error), or None for anything else."""
    message = out.message
    if isinstance(message, JSONRPCResponse | JSONRPCError):
        return message.id
    return None


def is_request(out: SessionMessage) -> bool:
    return isinstance(out.message, JSONRPCRequest)


async def run_lowlevel(server: MCPServer[Any], read: Any, write: Any) -> None:
    """Serve ``server`` (its lifespan included) on a pair of memory streams."""
    low = lowlevel(server)
    await low.run(read, write, low.create_initialization_options())


async def serve_in_memory(server: MCPServer[Any], read: Any, write: Any) -> None:
    """Serve ``server``'s request handling without its lifespan (for the handshake)."""
    low = lowlevel(server)
    await serve_dual_era_loop(low, read, write, lifespan_state=None,
                              init_options=low.create_initialization_options())


def loads(out: SessionMessage) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(dump(out))
    return value
