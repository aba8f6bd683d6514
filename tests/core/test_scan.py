from __future__ import annotations

import os
from pathlib import Path

from rifflux.config import DEFAULT_EXCLUDE, DEFAULT_INCLUDE
from rifflux.core.scan import Globs, scan_root

GLOBS = Globs(DEFAULT_INCLUDE, DEFAULT_EXCLUDE)


def touch(root: Path, rel: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("# x\n")


def test_default_globs_take_notes_kinds_and_skip_tool_folders_at_any_depth(
        tmp_path: Path) -> None:
    for rel in [
        "a.md",
        "sub/b.markdown",
        "c.txt",
        "paper.pdf",
        "talk.pptx",
        "report.docx",
        "code.py",  # (source code only when asked)
        "image.png",
        ".git/d.md",
        "x/node_modules/e.md",
        "deep/er/.venv/f.md",
        "y/__pycache__/g.md",
        "z/h.md",
    ]:
        touch(tmp_path, rel)
    got = [f.rel_path for f in scan_root(tmp_path, GLOBS).files]
    assert got == ["a.md", "c.txt", "paper.pdf", "report.docx", "sub/b.markdown", "talk.pptx",
                   "z/h.md"]


def test_custom_globs_with_paths(tmp_path: Path) -> None:
    for rel in ["docs/a.md", "notes/b.md", "docs/drafts/c.md"]:
        touch(tmp_path, rel)
    globs = Globs(("docs/*.md",), ("drafts",))
    assert [f.rel_path for f in scan_root(tmp_path, globs).files] == ["docs/a.md"]


def test_file_link_inside_root_is_indexed_once(tmp_path: Path) -> None:
    touch(tmp_path, "real.md")
    os.symlink(tmp_path / "real.md", tmp_path / "alias.md")
    assert [f.rel_path for f in scan_root(tmp_path, GLOBS).files] == ["real.md"]


def test_link_leaving_the_root_is_indexed_under_its_own_path(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    touch(outside, "o.md")
    root.mkdir()
    os.symlink(outside / "o.md", root / "link.md")
    os.symlink(outside, root / "dirlink")
    got = sorted(f.rel_path for f in scan_root(root, GLOBS).files)
    assert got == ["dirlink/o.md", "link.md"]


def test_directory_link_loop_ends(tmp_path: Path) -> None:
    touch(tmp_path, "a/a.md")
    os.symlink(tmp_path, tmp_path / "a" / "loop")
    os.symlink(tmp_path / "a" / "self", tmp_path / "a" / "self")  # dangling self-loop
    result = scan_root(tmp_path, GLOBS)
    assert [f.rel_path for f in result.files] == ["a/a.md"]


def test_links_that_leave_the_root_and_loop_outside_or_back_above_it_end(tmp_path: Path) -> None:
    root, outside = tmp_path / "top" / "root", tmp_path / "outside"
    touch(root, "r.md")
    touch(outside, "sub/o.md")
    os.symlink(outside, root / "out")  # followed: it leaves the root
    os.symlink(outside, outside / "sub" / "again")  # a loop outside the root
    os.symlink(tmp_path / "top", outside / "up")  # back above the root, which holds it
    got = sorted(f.rel_path for f in scan_root(root, GLOBS).files)
    assert got == ["out/sub/o.md", "r.md"]


def test_broken_link_is_reported_not_fatal(tmp_path: Path) -> None:
    touch(tmp_path, "ok.md")
    os.symlink(tmp_path / "missing.md", tmp_path / "broken.md")
    result = scan_root(tmp_path, GLOBS)
    assert [f.rel_path for f in result.files] == ["ok.md"]
    assert [p.path for p in result.problems] == ["broken.md"]
