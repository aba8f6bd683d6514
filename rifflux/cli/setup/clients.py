"""The MCP clients ``rifflux setup`` knows: where each keeps its configuration on Linux,
macOS and Windows, in which format, under which key, and how it writes a server it
starts (stdio) or one it reaches over HTTP.

Each location is the one the client documents (``source``), looked up on
2026-11-29; where a client documents no location for a platform (Claude Desktop has
no Linux build: the community builds read the XDG path given here), that is said.
``locations`` is a pure function of a ``Place`` (platform, home, environment, working
directory), so that every platform's paths are tested on any machine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Literal

__all__ = ["CLIENTS", "Client", "Format", "HttpStyle", "Place", "client_named", "here"]

#: How a client's file is written: strict JSON (a plain JSON parser reads it, so no
#: comments), JSONC (comments and trailing commas), or TOML.
Format = Literal["json", "jsonc", "toml"]
#: How a client writes a server it reaches over Streamable HTTP: ``{"type": "http",
#: "url": U}``, ``{"url": U}``, ``{"serverUrl": U}``, ``{"httpUrl": U}``; None: it only
#: starts servers (stdio), so an HTTP endpoint is reached through the bridge
#: (``rifflux mcp --connect URL``).
HttpStyle = Literal["type", "url", "serverUrl", "httpUrl"] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Place:
    """Where the command runs: what the locations depend on."""

    platform: str  # sys.platform: "linux", "darwin", "win32"
    home: PurePath
    env: Mapping[str, str]
    cwd: PurePath

    def config_home(self) -> PurePath:
        """Linux's ``$XDG_CONFIG_HOME`` (``~/.config`` when unset)."""
        raw = self.env.get("XDG_CONFIG_HOME", "")
        return type(self.home)(raw) if raw else self.home / ".config"

    def appdata(self) -> PurePath:
        """Windows' ``%APPDATA%`` (``~\\AppData\\Roaming`` when unset)."""
        raw = self.env.get("APPDATA", "")
        return type(self.home)(raw) if raw else self.home / "AppData" / "Roaming"

    def per_platform(self, *, linux: PurePath, darwin: PurePath, win32: PurePath
                     ) -> PurePath:
        return {"darwin": darwin, "win32": win32}.get(self.platform, linux)


def here() -> Place:
    """This machine, this user, this working directory."""
    import os
    import sys

    return Place(platform=sys.platform, home=Path.home(), env=dict(os.environ),
                 cwd=Path.cwd())


@dataclass(frozen=True, slots=True, kw_only=True)
class Client:
    key: str  # as `rifflux setup KEY` names it
    name: str
    format: Format
    servers: str  # the key the servers are under
    http: HttpStyle
    stdio_type: bool  # the entry says "type": "stdio" too
    source: str  # where the location and the shape are documented
    location: Callable[[Place], PurePath]
    #: A folder whose presence says the client is installed (default: the file's folder).
    marker: Callable[[Place], PurePath] | None = None
    #: What to do after the file changed, for the client to see it.
    restart: str = "restart it"

    def path(self, place: Place) -> PurePath:
        return self.location(place)

    def installed_marker(self, place: Place) -> PurePath:
        return self.marker(place) if self.marker else self.location(place).parent


def _claude_desktop(p: Place) -> PurePath:
    # modelcontextprotocol.io/quickstart/user: macOS and Windows; no Linux build (the
    # community builds, e.g. claude-desktop-debian, read $XDG_CONFIG_HOME/Claude)
    name = "claude_desktop_config.json"
    return p.per_platform(
        linux=p.config_home() / "Claude" / name,
        darwin=p.home / "Library" / "Application Support" / "Claude" / name,
        win32=p.appdata() / "Claude" / name)


def _claude_code(p: Place) -> PurePath:
    # code.claude.com/docs/en/mcp: user scope is ~/.claude.json's top-level mcpServers
    # (in $CLAUDE_CONFIG_DIR when that is set), on every platform
    raw = p.env.get("CLAUDE_CONFIG_DIR", "")
    return (type(p.home)(raw) if raw else p.home) / ".claude.json"


def _claude_code_marker(p: Place) -> PurePath:
    raw = p.env.get("CLAUDE_CONFIG_DIR", "")
    return type(p.home)(raw) if raw else p.home / ".claude"


def _vscode(p: Place) -> PurePath:
    # code.visualstudio.com/docs/copilot/reference/mcp-configuration: mcp.json in the
    # user profile folder (the default profile's: Code/User)
    return p.per_platform(
        linux=p.config_home() / "Code" / "User" / "mcp.json",
        darwin=p.home / "Library" / "Application Support" / "Code" / "User" / "mcp.json",
        win32=p.appdata() / "Code" / "User" / "mcp.json")


def _zed(p: Place) -> PurePath:
    # zed.dev/docs/configuring-zed: ~/.config/zed/settings.json ($XDG_CONFIG_HOME on
    # Linux), %APPDATA%\Zed\settings.json on Windows; zed.dev/docs/ai/mcp: context_servers
    return p.per_platform(
        linux=p.config_home() / "zed" / "settings.json",
        darwin=p.home / ".config" / "zed" / "settings.json",
        win32=p.appdata() / "Zed" / "settings.json")


def _codex(p: Place) -> PurePath:
    # github.com/openai/codex docs/config.md: [mcp_servers.NAME] in $CODEX_HOME/config.toml
    # (~/.codex by default), on every platform
    raw = p.env.get("CODEX_HOME", "")
    return (type(p.home)(raw) if raw else p.home / ".codex") / "config.toml"


CLIENTS: tuple[Client, ...] = (
    Client(key="claude-desktop", name="Claude Desktop", format="json", servers="mcpServers",
           http=None, stdio_type=False, location=_claude_desktop,
           source="https://modelcontextprotocol.io/quickstart/user",
           restart="quit Claude Desktop (from the menu bar or tray) and open it again"),
    Client(key="claude-code", name="Claude Code", format="json", servers="mcpServers",
           http="type", stdio_type=True, location=_claude_code, marker=_claude_code_marker,
           source="https://code.claude.com/docs/en/mcp (user scope)",
           restart="start a new `claude` session (`/mcp` lists the servers)"),
    Client(key="cursor", name="Cursor", format="jsonc", servers="mcpServers", http="url",
           stdio_type=False, location=lambda p: p.home / ".cursor" / "mcp.json",
           source="https://docs.cursor.com/context/mcp (global ~/.cursor/mcp.json)",
           restart="Cursor picks the change up (Settings > MCP shows it)"),
    Client(key="vscode", name="VS Code (user)", format="jsonc", servers="servers",
           http="type", stdio_type=True, location=_vscode,
           source="https://code.visualstudio.com/docs/copilot/reference/mcp-configuration",
           restart="VS Code picks the change up (MCP: List Servers shows it)"),
    Client(key="vscode-workspace", name="VS Code (this workspace)", format="jsonc",
           servers="servers", http="type", stdio_type=True,
           location=lambda p: p.cwd / ".vscode" / "mcp.json",
           marker=lambda p: p.cwd / ".vscode",
           source="https://code.visualstudio.com/docs/copilot/reference/mcp-configuration",
           restart="VS Code picks the change up (MCP: List Servers shows it)"),
    Client(key="windsurf", name="Windsurf", format="json", servers="mcpServers",
           http="serverUrl", stdio_type=False,
           location=lambda p: p.home / ".codeium" / "windsurf" / "mcp_config.json",
           source="https://docs.windsurf.com/windsurf/cascade/mcp",
           restart="press Refresh in Cascade's MCP panel"),
    Client(key="zed", name="Zed", format="jsonc", servers="context_servers", http=None,
           stdio_type=False, location=_zed, source="https://zed.dev/docs/ai/mcp",
           restart="Zed picks the change up (the Agent Panel's settings list it)"),
    Client(key="codex", name="Codex CLI", format="toml", servers="mcp_servers", http="url",
           stdio_type=False, location=_codex,
           source="https://github.com/openai/codex/blob/main/docs/config.md#mcp_servers",
           restart="start a new `codex` session (`/mcp` lists the servers)"),
    Client(key="gemini", name="Gemini CLI", format="jsonc", servers="mcpServers",
           http="httpUrl", stdio_type=False,
           location=lambda p: p.home / ".gemini" / "settings.json",
           source="https://github.com/google-gemini/gemini-cli/blob/main/docs/tools/"
                  "mcp-server.md",
           restart="start a new `gemini` session (`/mcp` lists the servers)"),
)


def client_named(key: str) -> Client:
    return next(c for c in CLIENTS if c.key == key)
