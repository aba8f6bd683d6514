"""The skill file shipped with the package (``rifflux/skill/SKILL.md``: front matter with
``name`` and ``description``, as Claude's skills are loaded) and where a client looks
for it: Claude Code reads personal skills from ``~/.claude/skills/NAME/SKILL.md``
(https://code.claude.com/docs/en/skills)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from .clients import Place

__all__ = ["SKILL_NAME", "skill_folder", "skill_text"]

SKILL_NAME = "rifflux"


def skill_text() -> str:
    """The skill as shipped."""
    return files("rifflux").joinpath("skill", "SKILL.md").read_text(encoding="utf-8")


def skill_folder(place: Place, folder: str | None = None) -> Path:
    """The skill's own folder, which holds ``SKILL.md``: in the skills folder ``folder``
    (``--dir``: ``.claude/skills`` for a project's), else in Claude Code's personal
    skills folder (in ``$CLAUDE_CONFIG_DIR`` when that is set)."""
    if folder:
        return Path(folder).expanduser().absolute() / SKILL_NAME
    raw = place.env.get("CLAUDE_CONFIG_DIR", "")
    base = Path(raw) if raw else Path(place.home) / ".claude"
    return base / "skills" / SKILL_NAME
