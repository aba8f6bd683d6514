"""Every ```python example of README.md runs as written, over a small folder made here.

A whole program (one that calls ``anyio.run``) runs in a folder of its own holding
``docs/``, as a reader would run it there. A fragment (top-level ``await``, as the
README shows a call in the middle of a program) runs with ``rf`` open on an index of
that folder. So a README edit that breaks an example fails here.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import anyio
import pytest

from rifflux import Rifflux

from .gitrepo import commit, init
from .helpers import CountingEmbedder, write, write_pdf

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
EXAMPLES = _BLOCK.findall(README.read_text(encoding="utf-8"))
PROGRAMS = [e for e in EXAMPLES if "anyio.run(" in e]
FRAGMENTS = [e for e in EXAMPLES if e not in PROGRAMS]

#: What the examples search for and read: an install guide, a decision record tagged
#: ``adr`` whose first words are on line 4 (after front matter: ``line_start - 5`` is
#: before the file's first line), and a project note linking to it.
FOLDER = {
    "docs/install.md": "# Install\n\n## Linux\n\nInstall on Linux with pip, then run the "
                       "installer.\n\n## macOS\n\nInstall with Homebrew.\n",
    "docs/adr-007.md": "---\ntags: [adr]\n---\n# ADR 7: Retry policy\n\nA failed call is "
                       "retried three times, waiting longer each time.\n",
    "projects/alpha.md": "# Alpha\n\nAlpha follows the [[adr-007|retry policy]] for its "
                         "calls.\n\n## Plan\n\nShip in [[Beta]].\n",
}


#: What each example prints over ``FOLDER``, by a phrase of its source: the lines it
#: must print (regular expressions, in order, each matched at a line's start). An example
#: the README gains needs its entry here.
PRINTS: dict[str, list[str]] = {
    'rf.search("install on linux"': [r"install\.md Install > Linux \{'rrf': "],
    "rf.write_note(": [r"decisions/retries\.md [0-9a-f]{12} \[\[1, 7\]\] (True|False)$",
                       r"decisions/retries\.md Retry policy$",
                       r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ decisions/retries\.md Retry policy$"],
    'tags=["adr"], paths=["docs/**"]': [r"---$", r"tags: \[adr\]$", r"---$",
                                        r"# ADR 7: Retry policy$",
                                        r"A failed call is retried three times.* 6$"],
    'rf.links("projects/alpha.md")': [r"3 adr-007 -> docs/adr-007\.md$", r"7 Beta -> None$",
                                      r"1$"],
    'kinds=["pdf"]': [r"pdf 2 Falcons$", r"2 2 Falcons$"],
    "rf.search_history(": [r"[0-9a-f]{10} Grace Hopper Adopt the retry policy$",
                           r"docs/adr-007\.md @@ -0,0 \+1,6 @@$", r"1 \[4, 5, 6\]$"],
}


def _printed(source: str, out: str) -> None:
    """``out`` holds the lines ``PRINTS`` says ``source`` prints, in that order."""
    (expected,) = [lines for phrase, lines in PRINTS.items() if phrase in source]
    printed = out.strip().splitlines()
    at = 0
    for pattern in expected:
        while at < len(printed) and not re.match(pattern, printed[at]):
            at += 1
        assert at < len(printed), f"no line matching {pattern!r} (in order) in:\n{out}"
        at += 1


def _folder(root: Path) -> Path:
    """The folder, a git repository: its decision record committed by Grace Hopper (the
    history's example), the rest by Ada Lovelace."""
    init(root)
    for rel, text in FOLDER.items():
        write(root, rel, text)
        if rel == "docs/adr-007.md":
            commit(root, "Adopt the retry policy", author="Grace Hopper <grace@example.org>")
    write_pdf(root / "papers/birds.pdf", ["Owls\nThe barn owl hunts at dusk.",
                                          "Falcons\nThe kestrel hovers over the verge."],
              outline=["Owls", "Falcons"])
    commit(root, "Add the notes")
    return root


def _label(example: str) -> str:
    return example.strip().splitlines()[0][:40]


def test_the_readme_has_a_program_and_fragments_each_with_what_it_prints() -> None:
    assert PROGRAMS and FRAGMENTS, "the README's ```python blocks were not found"
    for example in EXAMPLES:
        assert sum(phrase in example for phrase in PRINTS) == 1, _label(example)


@pytest.mark.parametrize("source", PROGRAMS, ids=_label)
def test_a_readme_program_runs_as_written(source: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(_folder(tmp_path / "work"))
    exec(compile(source, str(README), "exec"), {"__name__": "__main__"})
    _printed(source, capsys.readouterr().out)


@pytest.mark.anyio
@pytest.mark.parametrize("source", FRAGMENTS, ids=_label)
async def test_a_readme_fragment_runs_as_written(source: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = _folder(tmp_path / "work")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        code = compile(source, str(README), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        ran = eval(code, {"rf": rf, "anyio": anyio})
        if inspect.iscoroutine(ran):
            await ran
    _printed(source, capsys.readouterr().out)
