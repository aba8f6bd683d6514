"""YAML front matter at the top of a markdown file -> :class:`FileMetadata`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)

#: libyaml's safe loader when PyYAML was built with it (ten times faster than the pure
#: Python one, which took 14% of parsing time on a corpus where most files have
#: front matter); the same safe subset of YAML either way.
_YAML_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True, kw_only=True)
class FileMetadata:
    title: str | None = None
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()


def split_front_matter(text: str) -> tuple[FileMetadata, str]:
    """YAML front matter -> metadata; invalid YAML stays in the body (nothing is lost)."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return FileMetadata(), text
    try:
        data = yaml.load(match.group(1) or "", Loader=_YAML_LOADER)
    except yaml.YAMLError:
        return FileMetadata(), text
    if data is not None and not isinstance(data, dict):
        return FileMetadata(), text
    data = data or {}
    title = data.get("title") or data.get("name")
    return (
        FileMetadata(
            title=str(title) if title is not None else None,
            tags=_str_tuple(data.get("tags")),
            aliases=_str_tuple(data.get("aliases")),
        ),
        text[match.end() :],
    )


def _str_tuple(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value if v is not None)
    return (str(value),)
