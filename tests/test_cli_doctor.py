"""``rifflux doctor``: a healthy install says so and exits 0; a damaged index, an
unreachable PostgreSQL URL, a low inotify limit and a broken client entry each exit 1
with the fix. The limits are read from a /proc laid out in the test (RIFFLUX_PROCFS):
the machine itself is never changed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from rifflux.cli.doctor.system import check_watcher

from .helpers import cli_env, otters_and_bread, rifflux_cli
from .postgres import PostgresServer


def procfs(tmp_path: Path, watches: int, instances: int = 128) -> Path:
    """A /proc with only the inotify limits in it."""
    inotify = tmp_path / "proc" / "sys" / "fs" / "inotify"
    inotify.mkdir(parents=True, exist_ok=True)
    (inotify / "max_user_watches").write_text(f"{watches}\n")
    (inotify / "max_user_instances").write_text(f"{instances}\n")
    return tmp_path / "proc"


def doctor_env(tmp_path: Path, watches: int = 524_288) -> dict[str, str]:
    env = cli_env(tmp_path, HOME=str(tmp_path / "home"),
                  XDG_CONFIG_HOME=str(tmp_path / "home" / ".config"),
                  RIFFLUX_PROCFS=str(procfs(tmp_path, watches)))
    for name in ("APPDATA", "CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        env.pop(name, None)
    return env


def doctor(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return rifflux_cli(tmp_path, "--db", str(tmp_path / "index.db"), "doctor", *args,
                       env=env or doctor_env(tmp_path))


def checked(tmp_path: Path, *args: str, env: dict[str, str] | None = None
            ) -> tuple[int, dict[str, Any]]:
    done = doctor(tmp_path, "--json", *args, env=env)
    report: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, report


def by_area(report: dict[str, Any], area: str) -> list[dict[str, Any]]:
    return [c for c in report["checks"] if c["area"] == area]


def healthy(tmp_path: Path) -> Path:
    """An index of two notes, and Claude Desktop configured to run this installation."""
    kb = otters_and_bread(tmp_path / "kb")
    env = doctor_env(tmp_path)
    assert rifflux_cli(tmp_path, "--db", str(tmp_path / "index.db"), "index", str(kb),
                       env=env).returncode == 0
    (tmp_path / "home" / ".config" / "Claude").mkdir(parents=True)
    assert rifflux_cli(tmp_path, "setup", "claude-desktop", "--db", str(tmp_path / "index.db"),
                       env=env).returncode == 0
    return kb


def test_a_healthy_install_is_all_well_and_exits_0(tmp_path: Path) -> None:
    kb = healthy(tmp_path)
    done = doctor(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("rifflux doctor: all is well\n")
    assert "FIX" not in done.stdout
    code, report = checked(tmp_path)
    assert code == 0 and report["ok"] is True
    [index] = by_area(report, "index")
    assert index["status"] == "ok" and (index["files"], index["pending_embeddings"]) == (2, 0)
    assert by_area(report, "folder")[0]["path"] == str(kb)
    assert by_area(report, "watcher")[0]["status"] == "ok"
    assert by_area(report, "disk")[0]["status"] == "ok"
    assert by_area(report, "install")[0]["status"] == "ok"
    assert by_area(report, "model")[0]["status"] == "note"  # (the hash backend, as set)
    [client] = [c for c in by_area(report, "client") if c.get("client") == "claude-desktop"]
    assert client["status"] == "ok" and " mcp --db " in client["summary"]


def test_a_damaged_index_is_reported_with_its_fix_and_left_where_it_is(tmp_path: Path) -> None:
    kb = healthy(tmp_path)
    db = tmp_path / "index.db"
    with sqlite3.connect(db) as conn:  # (the pages of the chunks, and of their FTS index)
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = [r[0] for r in conn.execute("SELECT rootpage FROM sqlite_master WHERE name IN "
                                            "('chunks', 'chunks_fts_data')")]
    assert len(pages) == 2
    raw = bytearray(db.read_bytes())
    for page in pages:
        raw[(page - 1) * size:page * size] = b"\x5a" * size
    db.write_bytes(bytes(raw))
    before = sorted(p.name for p in tmp_path.iterdir())
    done = doctor(tmp_path)
    assert done.returncode == 1
    assert "FIX   index" in done.stdout and "is damaged" in done.stdout
    code, report = checked(tmp_path)
    [index] = by_area(report, "index")
    assert index["status"] == "attention"
    assert index["fix"].startswith(f"rifflux --db {db} index {kb} ")
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # (nothing moved aside)


def test_an_unreachable_postgresql_url_says_so_and_how_to_check(tmp_path: Path) -> None:
    env = doctor_env(tmp_path)
    done = rifflux_cli(tmp_path, "--db", "postgresql://rifflux:secret@127.0.0.1:9/notes",
                       "doctor", "--json", env=env)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    [database] = by_area(report, "postgresql")
    assert database["status"] == "attention" and database["reachable"] is False
    assert "127.0.0.1:9" in database["summary"] and "secret" not in done.stdout
    assert "pg_isready" in database["fix"]
    [index] = by_area(report, "index")
    assert index["status"] == "attention" and "cannot be reached" in index["summary"]


def test_a_low_inotify_limit_is_reported_with_the_command_that_raises_it(
    tmp_path: Path
) -> None:
    kb = healthy(tmp_path)
    for i in range(30):
        (kb / f"folder-{i}").mkdir()
    done = doctor(tmp_path, env=doctor_env(tmp_path, watches=20))
    assert done.returncode == 1
    assert "FIX   watcher" in done.stdout
    code, report = checked(tmp_path, env=doctor_env(tmp_path, watches=20))
    [watcher] = by_area(report, "watcher")
    assert watcher["status"] == "attention" and watcher["max_user_watches"] == 20
    assert "sudo sysctl fs.inotify.max_user_watches=524288" in watcher["fix"]
    assert "/etc/sysctl.d/" in watcher["fix"]
    code, report = checked(tmp_path, env=doctor_env(tmp_path, watches=100))
    assert code == 0 and by_area(report, "watcher")[0]["folders"] == 31


def test_a_client_entry_whose_command_is_gone_needs_setup_again(tmp_path: Path) -> None:
    healthy(tmp_path)
    config = tmp_path / "home" / ".cursor" / "mcp.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"mcpServers": {"rifflux": {
        "command": "/old/venv/bin/rifflux", "args": ["mcp"]}}}), encoding="utf-8")
    code, report = checked(tmp_path)
    assert code == 1
    [cursor] = [c for c in by_area(report, "client") if c.get("client") == "cursor"]
    assert cursor["status"] == "attention" and cursor["fix"] == "rifflux setup cursor"
    assert "/old/venv/bin/rifflux is not there" in cursor["details"][0]


def test_a_postgresql_index_is_reached_and_its_extensions_named(
    tmp_path: Path, new_postgres_index: Any, postgres: PostgresServer
) -> None:
    url = new_postgres_index()
    kb = otters_and_bread(tmp_path / "kb")
    env = doctor_env(tmp_path)
    assert rifflux_cli(tmp_path, "--db", url, "index", str(kb), env=env).returncode == 0
    done = rifflux_cli(tmp_path, "--db", url, "doctor", "--json", env=env)
    report = json.loads(done.stdout)
    [database] = by_area(report, "postgresql")
    assert database["status"] == "ok", database
    assert set(database["extensions"]) == {"vector", "pg_textsearch"}
    [index] = by_area(report, "index")
    assert index["status"] == "ok" and index["files"] == 2 and "postgresql" in index["summary"]


@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_the_watcher_has_no_limit_to_check_off_linux(platform: str, tmp_path: Path) -> None:
    check = check_watcher([str(tmp_path)], platform=platform, procfs=procfs(tmp_path, 1))
    assert check.status == "ok" and platform in check.summary
