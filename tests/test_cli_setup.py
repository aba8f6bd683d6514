"""``rifflux setup``: a client's real configuration file, as the client writes it, gets one
``rifflux`` entry that starts this installation's server, and loses nothing of what was
there; a second run changes nothing; ``--remove`` gives the file back as it was."""

from __future__ import annotations

import json
import os
import stat
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import anyio
import pytest

from rifflux.cli.setup.clients import CLIENTS, Place, client_named

from .helpers import REPO, TOOLS, cli_env, rifflux_cli, server_env

# ---------------------------------------------------------------- files as clients write them


@dataclass(frozen=True)
class Written:
    """A client's file as the client writes it, and texts in it that must survive whole."""

    client: str
    text: str
    kept: tuple[str, ...]


_FILESYSTEM = """\
    "filesystem": {
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
      "command": "npx"
    }"""

FILES = [
    Written("claude-desktop", '{\n  "globalShortcut": "Ctrl+Space",\n  "mcpServers": {\n'
            + _FILESYSTEM + '\n  },\n  "isUsingBuiltInNodeForMcp": true\n}\n',
            (_FILESYSTEM, '"isUsingBuiltInNodeForMcp": true')),
    Written("claude-code", json.dumps({
        "numStartups": 41, "installMethod": "npm",
        "projects": {"/home/me/app": {"allowedTools": [], "mcpServers": {}}},
        "mcpServers": {"sentry": {"type": "http", "url": "https://mcp.sentry.dev/mcp"}},
        "oauthAccount": {"emailAddress": "me@example.org"}}, indent=2),
        ('"sentry": {\n      "type": "http",\n      "url": "https://mcp.sentry.dev/mcp"\n    }',
         '"projects": {\n    "/home/me/app": {\n      "allowedTools": [],\n      '
         '"mcpServers": {}\n    }\n  }')),
    Written("cursor", '{\n  "mcpServers": {\n    "linear": {\n      "url": '
            '"https://mcp.linear.app/sse"\n    }\n  }\n}', ('"linear": {\n      "url": '
                                                         '"https://mcp.linear.app/sse"\n    }',)),
    Written("vscode", '{\n\t// my servers\n\t"inputs": [\n\t\t{\n\t\t\t"type": "promptString",\n'
            '\t\t\t"id": "gh-token",\n\t\t\t"password": true\n\t\t}\n\t],\n\t"servers": {\n'
            '\t\t"github": {\n\t\t\t"url": "https://api.githubcopilot.com/mcp/",\n'
            '\t\t\t"type": "http", /* the hosted one */\n\t\t},\n\t},\n}\n',
            ('\t\t"github": {\n\t\t\t"url": "https://api.githubcopilot.com/mcp/",\n'
             '\t\t\t"type": "http", /* the hosted one */\n\t\t},', '// my servers')),
    Written("vscode-workspace", '{\r\n  "servers": {\r\n    "memory": {\r\n      "command": '
            '"npx",\r\n      "args": ["-y", "@modelcontextprotocol/server-memory"]\r\n    }\r\n'
            '  }\r\n}\r\n', ('    "memory": {\r\n      "command": "npx",\r\n      "args": '
                             '["-y", "@modelcontextprotocol/server-memory"]\r\n    }',)),
    Written("windsurf", '{"mcpServers":{"git":{"command":"uvx","args":["mcp-server-git"],'
            '"disabled":true}}}', ('"git":{"command":"uvx","args":["mcp-server-git"],'
                                   '"disabled":true}',)),
    Written("zed", "// Zed settings\n//\n// For information on how to configure Zed, see the Zed\n"
            "// documentation: https://zed.dev/docs/configuring-zed\n{\n  \"ui_font_size\": 16,"
            "\n  \"context_servers\": {\n    \"kagi\": {\n      \"source\": \"custom\",\n"
            "      \"command\": \"uvx\",\n      \"args\": [\"kagimcp\"],\n      \"env\": {},\n"
            "    },\n  },\n  \"theme\": {\n    \"mode\": \"system\",\n    \"dark\": \"One Dark\""
            "\n  }\n}\n", ("// For information on how to configure Zed, see the Zed",
                          '"kagi": {\n      "source": "custom",\n      "command": "uvx",\n'
                          '      "args": ["kagimcp"],\n      "env": {},\n    },')),
    Written("codex", '# Codex settings\nmodel = "o4-mini"  # the default model\n'
            'approval_policy = "on-request"\n\n[mcp_servers.docs]\nargs = ["-y", "docs-mcp"]\n'
            'command = "npx"\nenv = { "DOCS_TOKEN" = "x" }  # keep this\n\n[profiles.fast]\n'
            'model = "gpt-5-mini"\n', ('[mcp_servers.docs]\nargs = ["-y", "docs-mcp"]\n'
                                       'command = "npx"\nenv = { "DOCS_TOKEN" = "x" }  # keep '
                                       'this\n', '[profiles.fast]\nmodel = "gpt-5-mini"\n')),
    Written("gemini", '{\n  "theme": "Dracula",\n  "selectedAuthType": "gemini-api-key",\n'
            '  "mcpServers": {\n    "github": {\n      "httpUrl": '
            '"https://api.githubcopilot.com/mcp/",\n      "timeout": 5000\n    }\n  }\n}\n',
            ('"github": {\n      "httpUrl": "https://api.githubcopilot.com/mcp/",\n'
             '      "timeout": 5000\n    }', '"selectedAuthType": "gemini-api-key"')),
]


def setup_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """``cli_env`` with a home of its own, where each client's file is looked for."""
    env = cli_env(tmp_path, HOME=str(tmp_path / "home"),
                  XDG_CONFIG_HOME=str(tmp_path / "home" / ".config"), **extra)
    for name in ("APPDATA", "CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        env.pop(name, None)
    return env


def client_file(tmp_path: Path, key: str) -> Path:
    """Where ``rifflux setup KEY`` looks in the test's home (the working directory:
    ``tmp_path``)."""
    place = Place(platform=sys.platform, home=tmp_path / "home",
                  env={"XDG_CONFIG_HOME": str(tmp_path / "home" / ".config")}, cwd=tmp_path)
    return Path(client_named(key).path(place))


def setup(tmp_path: Path, *args: str) -> Any:
    return rifflux_cli(tmp_path, "setup", *args, env=setup_env(tmp_path))


def written(tmp_path: Path, case: Written, raw: bytes | None = None) -> Path:
    path = client_file(tmp_path, case.client)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw if raw is not None else case.text.encode("utf-8"))
    return path


def entry_in(key: str, text: str) -> dict[str, Any]:
    """The rifflux entry as the client would read it."""
    client = client_named(key)
    if client.format == "toml":
        data: dict[str, Any] = tomllib.loads(text)
    else:
        from rifflux.cli.setup.jsonc import parse

        data = parse(text.lstrip("\ufeff")).value
    entry: dict[str, Any] = data[client.servers]["rifflux"]
    return entry


# ---------------------------------------------------------------- every client


@pytest.mark.parametrize("case", FILES, ids=[c.client for c in FILES])
def test_setup_adds_one_entry_keeps_everything_else_and_remove_gives_the_file_back(
    tmp_path: Path, case: Written
) -> None:
    path = written(tmp_path, case)
    done = setup(tmp_path, case.client, "--db", str(tmp_path / "index.db"))
    assert done.returncode == 0, done.stderr
    text = path.read_bytes().decode("utf-8")
    for kept in case.kept:
        assert kept in text, f"{kept!r} was changed:\n{text}"
    entry = entry_in(case.client, text)
    assert Path(entry["command"]).is_absolute() and entry["args"][:1] == ["mcp"]
    assert entry["args"][1:] == ["--db", str(tmp_path / "index.db")]
    backup = path.with_name(path.name + ".rifflux.bak")
    assert backup.read_bytes().decode("utf-8") == case.text
    assert "added a rifflux entry" in done.stdout and "rifflux doctor" in done.stdout

    again = setup(tmp_path, case.client, "--db", str(tmp_path / "index.db"))
    assert again.returncode == 0 and "nothing changed" in again.stdout
    assert path.read_bytes().decode("utf-8") == text

    removed = setup(tmp_path, "--remove", case.client)
    assert removed.returncode == 0, removed.stderr
    assert path.read_bytes() == case.text.encode("utf-8")
    assert "nothing changed" in setup(tmp_path, "--remove", case.client).stdout


@pytest.mark.anyio
@pytest.mark.parametrize("key", [c.key for c in CLIENTS])
async def test_the_entry_setup_writes_starts_a_server_that_lists_the_tools(
    tmp_path: Path, key: str
) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    done = await anyio.to_thread.run_sync(lambda: setup(
        tmp_path, key, "--db", str(tmp_path / "index.db")))
    assert done.returncode == 0, done.stderr
    entry = entry_in(key, client_file(tmp_path, key).read_bytes().decode("utf-8"))
    params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                   env=server_env(tmp_path), cwd="/")
    with (tmp_path / "server.stderr").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write_), \
                ClientSession(read, write_) as session:
            with anyio.fail_after(60):
                await session.initialize()
                tools = await session.list_tools()
    assert TOOLS <= {tool.name for tool in tools.tools}


# ---------------------------------------------------------------- what files can be


def test_a_bom_and_crlf_line_ends_are_kept(tmp_path: Path) -> None:
    case = next(c for c in FILES if c.client == "vscode-workspace")
    original = b"\xef\xbb\xbf" + case.text.encode("utf-8")
    path = written(tmp_path, case, original)
    assert setup(tmp_path, "vscode-workspace").returncode == 0
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and b"\n" not in raw.replace(b"\r\n", b"")
    assert entry_in("vscode-workspace", raw.decode("utf-8"))["type"] == "stdio"
    assert setup(tmp_path, "--remove", "vscode-workspace").returncode == 0
    assert path.read_bytes() == original


def test_crlf_toml_stays_crlf(tmp_path: Path) -> None:
    case = next(c for c in FILES if c.client == "codex")
    crlf = case.text.replace("\n", "\r\n").encode("utf-8")
    path = written(tmp_path, case, crlf)
    assert setup(tmp_path, "codex").returncode == 0
    raw = path.read_bytes()
    assert b"[mcp_servers.rifflux]\r\n" in raw and b"\n" not in raw.replace(b"\r\n", b"")
    assert setup(tmp_path, "--remove", "codex").returncode == 0
    assert path.read_bytes() == crlf


@pytest.mark.parametrize(("key", "text", "where"), [
    ("claude-desktop", '{\n  "mcpServers": {\n    "a": {"command": "x"}\n  \n}\n', "line 6"),
    ("vscode", '{\n\t"servers": {\n\t\t"a": {"command": "x" "args": []}\n\t}\n}\n',
     "line 3, column 24"),
    ("claude-code", '{\n  // a comment\n  "mcpServers": {}\n}\n', "line 2, column 3"),
    ("codex", '[mcp_servers.docs]\ncommand = "npx\n', "line 2"),
])
def test_a_file_that_cannot_be_read_is_refused_saying_where_and_left_alone(
    tmp_path: Path, key: str, text: str, where: str
) -> None:
    path = client_file(tmp_path, key)
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    for args in ([key], [key, "--dry-run"], ["--remove", key]):
        done = setup(tmp_path, *args)
        assert done.returncode == 1, done
        assert where in done.stderr and "nothing was changed" in done.stderr, done.stderr
    assert path.read_bytes().decode("utf-8") == text
    assert not path.with_name(path.name + ".rifflux.bak").exists()
    listed = json.loads(setup(tmp_path, "--list", "--json").stdout)
    assert where in next(s for s in listed if s["client"] == key)["problem"]


def test_a_read_only_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    case = FILES[0]
    path = written(tmp_path, case)
    path.chmod(0o444)
    done = setup(tmp_path, case.client)
    assert done.returncode == 1 and "read-only" in done.stderr and "chmod u+w" in done.stderr
    assert path.read_bytes().decode("utf-8") == case.text
    assert stat.S_IMODE(path.stat().st_mode) == 0o444


def test_a_symlinked_file_is_changed_where_it_is_and_stays_a_link(tmp_path: Path) -> None:
    case = next(c for c in FILES if c.client == "zed")
    dotfiles = tmp_path / "dotfiles" / "zed.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text(case.text, encoding="utf-8")
    link = client_file(tmp_path, "zed")
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    assert setup(tmp_path, "zed").returncode == 0
    assert link.is_symlink() and link.resolve() == dotfiles.resolve()
    assert entry_in("zed", dotfiles.read_bytes().decode("utf-8"))["args"] == ["mcp"]
    assert dotfiles.with_name("zed.json.rifflux.bak").exists()


def test_dry_run_prints_the_diff_and_writes_nothing(tmp_path: Path) -> None:
    case = next(c for c in FILES if c.client == "gemini")
    path = written(tmp_path, case)
    done = setup(tmp_path, "gemini", "--dry-run", "--connect", "auto")
    assert done.returncode == 0 and "was not changed" in done.stderr
    assert done.stdout.startswith(f"--- {path}\n+++ {path}\n")
    added = [line for line in done.stdout.splitlines() if line.startswith("+ ")]
    assert any('"rifflux": {' in line for line in added)
    assert any('"--connect", "auto"' in line for line in added)
    assert path.read_bytes().decode("utf-8") == case.text


def test_an_entry_a_person_extended_keeps_their_keys_when_updated(tmp_path: Path) -> None:
    path = client_file(tmp_path, "gemini")
    path.parent.mkdir(parents=True)
    old = {"mcpServers": {"rifflux": {"command": "/old/venv/bin/rifflux", "args": ["mcp"],
                                      "env": {"RIFFLUX_LOG_LEVEL": "INFO"}, "trust": True}}}
    path.write_text(json.dumps(old, indent=2), encoding="utf-8")
    listed = json.loads(setup(tmp_path, "--list", "--json").stdout)
    gemini = next(s for s in listed if s["client"] == "gemini")
    assert gemini["configured"] and "/old/venv/bin/rifflux is not there" in gemini["stale"]
    done = setup(tmp_path, "gemini", "--writable", str(tmp_path / "notes"))
    assert done.returncode == 0 and "updated the rifflux entry" in done.stdout
    entry = entry_in("gemini", path.read_bytes().decode("utf-8"))
    assert list(entry) == ["command", "args", "env", "trust"]
    assert entry["env"] == {"RIFFLUX_LOG_LEVEL": "INFO"} and entry["trust"] is True
    assert entry["args"] == ["mcp", "--writable", str(tmp_path / "notes")]


def test_url_is_written_as_each_client_reaches_http_and_through_the_bridge_otherwise(
    tmp_path: Path
) -> None:
    url = "http://127.0.0.1:7474/mcp"
    expected = {"claude-code": {"type": "http", "url": url}, "cursor": {"url": url},
                "vscode": {"type": "http", "url": url}, "windsurf": {"serverUrl": url},
                "codex": {"url": url}, "gemini": {"httpUrl": url}}
    for key in [c.key for c in CLIENTS if c.key != "vscode-workspace"]:
        assert setup(tmp_path, key, "--url", url).returncode == 0
        entry = entry_in(key, client_file(tmp_path, key).read_bytes().decode("utf-8"))
        if key in expected:
            assert entry == expected[key], key
        else:  # Claude Desktop and Zed start commands only
            assert entry["args"][-3:] == ["mcp", "--connect", url], key
    switched = setup(tmp_path, "cursor")  # back to stdio: the url goes
    assert switched.returncode == 0
    cursor = client_file(tmp_path, "cursor").read_bytes().decode("utf-8")
    assert set(entry_in("cursor", cursor)) == {"command", "args"}


def test_list_says_which_clients_are_here_and_which_run_rifflux(tmp_path: Path) -> None:
    (tmp_path / "home" / ".cursor").mkdir(parents=True)
    written(tmp_path, FILES[0])
    assert setup(tmp_path, "claude-desktop").returncode == 0
    listed = json.loads(setup(tmp_path, "--list", "--json").stdout)
    by_key = {s["client"]: s for s in listed}
    assert by_key["claude-desktop"]["configured"] and by_key["claude-desktop"]["stale"] is None
    assert " mcp" in by_key["claude-desktop"]["runs"]
    assert by_key["cursor"]["installed"] and not by_key["cursor"]["configured"]
    assert not by_key["windsurf"]["installed"]
    plain = setup(tmp_path, "--list").stdout
    assert "claude-desktop    configured" in plain and "cursor            not configured" in plain
    assert "windsurf          not installed" in plain


def test_print_gives_a_block_to_paste_without_touching_any_file(tmp_path: Path) -> None:
    done = setup(tmp_path, "--print", "--db", "postgresql://me@db/notes")
    block = json.loads(done.stdout)
    assert block["mcpServers"]["rifflux"]["args"] == ["mcp", "--db", "postgresql://me@db/notes"]
    toml = tomllib.loads(setup(tmp_path, "codex", "--print").stdout)
    assert toml["mcp_servers"]["rifflux"]["args"] == ["mcp"]
    assert not (tmp_path / "home").exists()


def test_setup_skill_installs_the_shipped_skill_once(tmp_path: Path) -> None:
    done = setup(tmp_path, "skill")
    path = tmp_path / "home" / ".claude" / "skills" / "rifflux" / "SKILL.md"
    assert done.returncode == 0 and str(path) in done.stdout
    text = path.read_bytes().decode("utf-8")
    front = text.split("---\n")[1]
    assert "name: rifflux\n" in front and "description: " in front
    assert text == (REPO / "rifflux" / "skill" / "SKILL.md").read_text(encoding="utf-8")
    assert "nothing changed" in setup(tmp_path, "skill").stdout
    project = setup(tmp_path, "skill", "--dir", str(tmp_path / "proj" / ".claude" / "skills"))
    assert project.returncode == 0
    assert (tmp_path / "proj" / ".claude" / "skills" / "rifflux" / "SKILL.md").exists()


# ---------------------------------------------------------------- where files are


@pytest.mark.parametrize(("platform", "key", "expected"), [
    ("darwin", "claude-desktop",
     "/Users/me/Library/Application Support/Claude/claude_desktop_config.json"),
    ("win32", "claude-desktop", r"C:\Users\me\AppData\Roaming\Claude\claude_desktop_config.json"),
    ("linux", "claude-desktop", "/home/me/.config/Claude/claude_desktop_config.json"),
    ("darwin", "vscode", "/Users/me/Library/Application Support/Code/User/mcp.json"),
    ("win32", "vscode", r"C:\Users\me\AppData\Roaming\Code\User\mcp.json"),
    ("linux", "vscode", "/home/me/.config/Code/User/mcp.json"),
    ("win32", "zed", r"C:\Users\me\AppData\Roaming\Zed\settings.json"),
    ("darwin", "zed", "/Users/me/.config/zed/settings.json"),
    ("win32", "cursor", r"C:\Users\me\.cursor\mcp.json"),
    ("linux", "windsurf", "/home/me/.codeium/windsurf/mcp_config.json"),
    ("win32", "codex", r"C:\Users\me\.codex\config.toml"),
    ("darwin", "claude-code", "/Users/me/.claude.json"),
    ("linux", "gemini", "/home/me/.gemini/settings.json"),
])
def test_each_client_is_looked_for_where_it_documents_its_file(
    platform: str, key: str, expected: str
) -> None:
    home = {"darwin": PurePosixPath("/Users/me"), "linux": PurePosixPath("/home/me"),
            "win32": PureWindowsPath(r"C:\Users\me")}[platform]
    env = {"APPDATA": r"C:\Users\me\AppData\Roaming"} if platform == "win32" else {}
    place = Place(platform=platform, home=home, env=env, cwd=home)
    assert str(client_named(key).path(place)) == expected


def test_environment_variables_move_the_files_as_the_clients_do() -> None:
    place = Place(platform="linux", home=PurePosixPath("/home/me"), cwd=PurePosixPath("/w"),
                  env={"XDG_CONFIG_HOME": "/cfg", "CODEX_HOME": "/codex",
                       "CLAUDE_CONFIG_DIR": "/claude"})
    assert str(client_named("zed").path(place)) == "/cfg/zed/settings.json"
    assert str(client_named("codex").path(place)) == "/codex/config.toml"
    assert str(client_named("claude-code").path(place)) == "/claude/.claude.json"
    assert str(client_named("vscode-workspace").path(place)) == "/w/.vscode/mcp.json"


def test_config_names_another_file_and_a_new_one_is_private(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "mcp.json"
    done = setup(tmp_path, "cursor", "--config", str(target))
    assert done.returncode == 0, done.stderr
    assert entry_in("cursor", target.read_bytes().decode("utf-8"))["args"] == ["mcp"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert not client_file(tmp_path, "cursor").exists()
    assert os.listdir(target.parent) == ["mcp.json"]  # (no temporary file left behind)
