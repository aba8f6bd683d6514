"""Agents (and people) keep notes from the command line (issue 26): ``rifflux write-note``,
``edit-note``, ``move-note``, ``delete-note``, ``restore-note`` and ``recent``."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from rifflux.core.note_text import sha256

from .helpers import REPO, cli_env, rifflux_cli


def notes_cli(tmp_path: Path, *args: str, stdin: str | None = None,
              ) -> subprocess.CompletedProcess[str]:
    """``rifflux ARGS`` with ``tmp_path/notes`` writable (RIFFLUX_WRITABLE)."""
    env = cli_env(tmp_path, RIFFLUX_WRITABLE=str(tmp_path / "notes"),
                  RIFFLUX_DB_PATH=str(tmp_path / "i.db"))
    if stdin is None:
        return rifflux_cli(tmp_path, *args, env=env)
    return subprocess.run([sys.executable, "-m", "rifflux", *args], cwd=tmp_path, env=env,
                          input=stdin, capture_output=True, text=True, timeout=120,
                          check=False)


def test_every_note_command_changes_the_note_and_the_index_follows(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    wrote = notes_cli(tmp_path, "write-note", "ideas/bird.md", "# Bird\n\nThe hoopoe.\n",
                      "--title", "Birds", "--tag", "idea", "--json")
    assert wrote.returncode == 0, wrote.stderr
    answer = json.loads(wrote.stdout)
    assert answer["sha256"] == sha256((notes / "ideas/bird.md").read_bytes())
    found = notes_cli(tmp_path, "search", "hoopoe", "--mode", "lexical", "--json")
    assert [h["path"] for h in json.loads(found.stdout)["results"]] == ["ideas/bird.md"]

    edited = notes_cli(tmp_path, "edit-note", "ideas/bird.md", "--append", "-",
                       "--if-match", answer["sha256"], stdin="Seen twice in May.\n")
    assert edited.returncode == 0, edited.stderr
    assert "; lines 9 written;" in edited.stdout and (notes / "ideas/bird.md").read_text().endswith(
        "The hoopoe.\n\nSeen twice in May.\n")
    stale = notes_cli(tmp_path, "edit_note", "ideas/bird.md", "--find", "May",
                      "--replace", "June", "--if-match", answer["sha256"])
    now = sha256((notes / "ideas/bird.md").read_bytes())
    assert stale.returncode == 1 and now in stale.stderr and "nothing was written" in \
        stale.stderr
    # (in the command line's words, not the library's: `rifflux show`, not get_file)
    assert stale.stderr.endswith(f"Read it again (`rifflux show`), make the change to what "
                                 f"it says now and pass --if-match {now}\n")
    taken = notes_cli(tmp_path, "write-note", "ideas/bird.md", "again")
    assert taken.returncode == 1 and "Edit it with `rifflux edit-note`, or replace it with " \
        f"--overwrite or --if-match {now}" in taken.stderr

    notes_cli(tmp_path, "write-note", "index.md", "See [[bird]].\n")
    moved = notes_cli(tmp_path, "move-note", "ideas/bird.md", "birds/hoopoe.md")
    assert moved.returncode == 0, moved.stderr
    assert "index.md:1: [[bird]] -> [[hoopoe]]" in moved.stdout
    assert (notes / "index.md").read_text() == "See [[hoopoe]].\n"

    deleted = notes_cli(tmp_path, "delete-note", "birds/hoopoe.md")
    assert deleted.returncode == 0 and ".rifflux-trash/" in deleted.stdout
    gone = notes_cli(tmp_path, "search", "twice", "--mode", "lexical")
    assert gone.returncode == 1  # no results
    restored = notes_cli(tmp_path, "restore-note", "birds/hoopoe.md")
    assert restored.returncode == 0, restored.stderr

    recent = notes_cli(tmp_path, "recent", "--limit", "5", "--json")
    assert {n["path"] for n in json.loads(recent.stdout)} == {"index.md", "birds/hoopoe.md"}
    listed = notes_cli(tmp_path, "recent")
    assert "birds/hoopoe.md  Birds" in listed.stdout


def test_note_commands_without_a_writable_folder_say_how_to_name_one(tmp_path: Path) -> None:
    refused = rifflux_cli(tmp_path, "--db", str(tmp_path / "i.db"), "write-note", "a.md", "x")
    assert refused.returncode == 2
    assert "--writable DIR" in refused.stderr and not (tmp_path / "a.md").exists()
    named = rifflux_cli(tmp_path, "--db", str(tmp_path / "i.db"), "--writable",
                        str(tmp_path / "n"), "write-note", "a.md", "x")
    assert named.returncode == 0, named.stderr
    assert (tmp_path / "n" / "a.md").read_text() == "x\n"  # (its last line ends)


def test_writable_is_read_from_the_environment_separated_like_watch_paths(
    tmp_path: Path,
) -> None:
    code = ("from rifflux.cli import entry; import sys; "
            "print(entry.parse(sys.argv[1:])[1].writable)")
    env = cli_env(tmp_path, RIFFLUX_WRITABLE=os.pathsep.join(["/a", "/b"]))
    out = subprocess.run([sys.executable, "-c", code, "mcp"], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "(PosixPath('/a'), PosixPath('/b'))"


#: Run the command line, then say which of the model's modules (and the watcher's) loaded.
_THEN_MODULES = ("import json, sys\n"
                 "from rifflux.cli.launch import main\n"
                 "code = main(sys.argv[1:])\n"
                 "heavy = ('numpy', 'onnxruntime', 'tokenizers', 'rifflux.core.embedders', "
                 "'watchfiles')\n"
                 "sys.stderr.write('MODULES ' + json.dumps([m for m in heavy "
                 "if m in sys.modules]) + '\\n')\n"
                 "raise SystemExit(code)\n")


def test_a_note_command_waits_for_its_vectors_and_then_exits_cleanly(tmp_path: Path) -> None:
    # with the real model: a write must not exit while the model loads (onnxruntime
    # aborts a process that ends during its load), and is found by meaning afterwards
    env = cli_env(tmp_path, RIFFLUX_WRITABLE=str(tmp_path / "notes"),
                  RIFFLUX_DB_PATH=str(tmp_path / "i.db"), RIFFLUX_EMBEDDING_BACKEND="onnx")
    for i, text in enumerate(["The lighthouse keeper logs the storm.",
                              "Sourdough needs a warm kitchen."]):
        wrote = rifflux_cli(tmp_path, "write-note", f"n{i}.md", text, env=env)
        assert wrote.returncode == 0, wrote.stderr
        assert "vectors stored" in wrote.stdout
    found = rifflux_cli(tmp_path, "search", "baking bread", "--mode", "semantic", "--json",
                        "--no-server", env=env)
    assert json.loads(found.stdout)["results"][0]["path"] == "n1.md"
    deleted = rifflux_cli(tmp_path, "delete-note", "n0.md", env=env)
    assert deleted.returncode == 0 and "vectors" not in deleted.stdout, deleted.stderr


def test_with_rifflux_writable_set_a_search_neither_watches_nor_loads_the_model(
    tmp_path: Path,
) -> None:
    # RIFFLUX_WRITABLE is there for the servers; a one-shot read leaves the folder alone
    notes_cli(tmp_path, "write-note", "a.md", "The heron note.\n")
    env = cli_env(tmp_path, RIFFLUX_WRITABLE=str(tmp_path / "notes"),
                  RIFFLUX_DB_PATH=str(tmp_path / "i.db"), RIFFLUX_EMBEDDING_BACKEND="onnx")
    for command in (["search", "heron", "--mode", "lexical", "--no-server"], ["recent"]):
        done = subprocess.run([sys.executable, "-c", _THEN_MODULES, *command], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 0 and "a.md" in done.stdout, done.stderr
        line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
        assert json.loads(line.removeprefix("MODULES ")) == [], command


def test_a_note_named_like_a_call_keeps_its_name_in_errors(tmp_path: Path) -> None:
    assert notes_cli(tmp_path, "write-note", "edit_note.md", "named after a call").returncode == 0
    again = notes_cli(tmp_path, "write-note", "edit_note.md", "again")
    assert again.returncode == 1
    assert again.stderr.startswith("rifflux: error: edit_note.md already exists"), again.stderr
    assert "Edit it with `rifflux edit-note`" in again.stderr  # (the advice, translated)


def test_every_note_error_names_the_command_lines_own_flags_and_commands() -> None:
    # Every message a note operation can raise (read from the source, each placeholder a
    # word), as a note command prints it: no library call or argument name is left
    # (replace_all, if_match, get_file, ...), and the words that are flags are flags.
    from rifflux.cli.note_commands import cli_words

    sources = [*sorted((REPO / "rifflux" / "notes").glob("*.py")),
               *(REPO / "rifflux" / "core" / f"{name}.py"
                 for name in ("note_edits", "note_paths", "note_text", "relink"))]
    messages: list[str] = []
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) \
                    and node.exc.args:
                messages.append(_rendered(node.exc.args[0]))
    assert len(messages) > 40
    library = re.compile(r"\b(?:[a-z]+_[a-z_]+|overwrite=\w+|title and tags)\b")
    for message in messages:
        said = cli_words(message)
        assert not library.findall(said), f"{said!r} names {library.findall(said)}"
    flags = {"replace_all": "--all", "replace_section": "--replace-section"}
    for message in messages:
        for name, flag in flags.items():
            if name in message:
                assert flag in cli_words(message), message


def _rendered(node: ast.expr) -> str:
    """A message expression as text, each placeholder a plain word (``value``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(p.value if isinstance(p, ast.Constant) and isinstance(p.value, str)
                       else "value" for p in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _rendered(node.left) + _rendered(node.right)
    if isinstance(node, ast.IfExp):
        return _rendered(node.body)
    return "value"


def test_edit_note_with_several_matches_says_to_pass_all(tmp_path: Path) -> None:
    notes_cli(tmp_path, "write-note", "sync.md", "Sync here. Sync there.")
    many = notes_cli(tmp_path, "edit-note", "sync.md", "--find", "Sync", "--replace", "SYNC")
    assert many.returncode == 2
    assert "pass --all to replace every one" in many.stderr, many.stderr
    assert "replace_all" not in many.stderr
