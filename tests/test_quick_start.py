"""The README's quick start over a folder holding a PDF and a deck beside a note: each
command runs as written (``.venv/bin/rifflux`` as this Python's ``rifflux``, ``~/papers``
as the folder made here), and each search finds its phrase on its page or slide."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from .helpers import REPO, cli_env, write, write_pdf

README = REPO / "README.md"


def _commands() -> list[list[str]]:
    """The quick start's command line over ``~/papers``, one argv per command."""
    block = re.search(r"```bash\n(\.venv/bin/rifflux index ~/papers.*?)\n```",
                      README.read_text(encoding="utf-8"), re.DOTALL)
    assert block is not None, "the README's quick start lost its ~/papers example"
    return [shlex.split(part) for part in block.group(1).split(" && ")]


def _deck(path: Path) -> None:
    from pptx import Presentation

    deck = Presentation()
    for title, body in (("Agenda", "What we counted"), ("Method", "Night walks"),
                        ("Results", "The owl census rose by a third")):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    deck.save(str(path))


def test_the_quick_start_finds_a_phrase_of_a_pdf_and_of_a_deck(tmp_path: Path) -> None:
    papers = tmp_path / "papers"
    write(papers, "field-notes.md", "# Field notes\n\nSee [[birds.pdf]] and the talk.\n")
    write_pdf(papers / "birds.pdf", ["Owls\nThe barn owl hunts at dusk.",
                                     "Falcons\nThe kestrel hovers over the verge."])
    _deck(papers / "talk.pptx")
    env = cli_env(tmp_path)
    outputs = []
    for argv in _commands():
        assert argv[0] == ".venv/bin/rifflux", argv
        args = [str(papers) if a == "~/papers" else a for a in argv[1:]]
        done = subprocess.run([sys.executable, "-m", "rifflux", *args], env=env,
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
        outputs.append(done.stdout)
    index, pdf_search, deck_search = outputs
    assert "3 files" in index or "indexed 3" in index, index
    assert "birds.pdf:2" in pdf_search.split("\n\n")[0], pdf_search  # the first hit: page 2
    assert "talk.pptx:3" in deck_search, deck_search
    assert "field-notes.md" not in deck_search  # --kind pptx: decks only
