"""YAML front matter at the top of a markdown file -> :class:`FileMetadata`."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)



@functools.cache
def _yaml_loader() -> type[Any]:
    """libyaml's safe loader when PyYAML was built with it (ten times faster than the pure
    Python one, which took 14% of parsing time on a corpus where most files have front
    matter); the same safe subset of YAML either way. (yaml is imported by the first
    front matter read: a process that only searches reads none.)"""
    import yaml

    loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return loader


@dataclass(frozen=True, slots=True, kw_only=True)
class FileMetadata:
    #: Front-matter ``title`` (or ``name``), else the first H1; None when neither exists.
    title: str | None = None
    #: Front-matter tags and inline ``#tags``, normalised (see :func:`normalise_tag`).
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    #: The whole front matter, as JSON-safe values (dates become ISO strings).
    frontmatter: Mapping[str, Any] = field(default_factory=dict)

    def with_body(self, first_h1: str | None, inline_tags: Iterable[str]) -> FileMetadata:
        """What the body adds: a title when the front matter gave none, inline tags."""
        tags = tuple(dict.fromkeys([*self.tags, *(normalise_tag(t) for t in inline_tags)]))
        return replace(self, title=self.title or first_h1, tags=tuple(t for t in tags if t))


def normalise_tag(tag: str) -> str:
    """``#Project/Alpha`` -> ``project/alpha``: no ``#``, lower case, no empty levels (tags
    match case-insensitively, as in Obsidian)."""
    return "/".join(p for p in tag.strip().lstrip("#").lower().split("/") if p)


def front_matter_end(text: str) -> int:
    """Where a front matter block at the top of ``text`` ends (0: there is none), whether
    or not its YAML is valid: an edit after the front matter goes there."""
    match = _FRONT_MATTER.match(text)
    return match.end() if match else 0


def split_front_matter(text: str) -> tuple[FileMetadata, str]:
    """YAML front matter -> metadata; invalid YAML stays in the body (nothing is lost)."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return FileMetadata(), text
    import yaml

    try:
        data = yaml.load(match.group(1) or "", Loader=_yaml_loader())
    except yaml.YAMLError:
        return FileMetadata(), text
    if data is not None and not isinstance(data, dict):
        return FileMetadata(), text
    data = data or {}
    title = data.get("title") or data.get("name")
    tags = (normalise_tag(t) for t in _str_tuple(data.get("tags")))
    return (
        FileMetadata(
            title=str(title) if title is not None else None,
            tags=tuple(dict.fromkeys(t for t in tags if t)),
            # an alias is a name, spaces and all: a string holds several only by commas
            aliases=_str_tuple(data.get("aliases", data.get("alias")), r","),
            frontmatter=_json_safe(data),
        ),
        text[match.end() :],
    )


def _json_safe(data: dict[Any, Any]) -> dict[str, Any]:
    """Keys as strings, dates and anything else JSON lacks as strings."""
    safe: dict[str, Any] = json.loads(json.dumps({str(k): v for k, v in data.items()},
                                                 default=str))
    return safe


def _str_tuple(value: object, separators: str = r"[,\s]+") -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in re.split(separators, value) if v.strip())
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value if v is not None)
    return (str(value),)
