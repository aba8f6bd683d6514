"""Search filters: what the caller may say, checked once, and how a file is tested.

Filters narrow a search to a set of files before either branch ranks anything
(filter first, then rank). Every check here is pure: ``make_filters`` turns the
caller's values into a ``Filters`` (or an ``InvalidArgumentError`` that says what
to fix), and ``FileEntry.matches`` tests one stored file.

- ``paths``: globs relative to the root, as in ``.gitignore`` (``docs/**``,
  ``**/adr-*.md``, ``notes/2026-*``; a glob without a ``/`` matches at any depth);
  a file matches if any glob does.
- ``root``: one indexed root (resolved against the index by the caller).
- ``tags``: every tag must be present (front matter and inline ``#tags``, case
  insensitive; a nested ``a/b`` also counts as ``a``).
- ``frontmatter``: ``{key: value}`` equality; a list field matches when it contains
  the value; a list of values needs all of them; values compare as JSON, or else as
  text without regard to case (``"true"`` matches ``true``, ``"3"`` matches ``3``).
- ``modified_after`` (inclusive) / ``modified_before`` (exclusive): on the file's
  mtime; an ISO date or datetime (without a zone: local time) or a relative ``7d``,
  ``2w``, ``3m`` (months, 30 days), ``1y`` (365 days) before now.
- ``near`` and ``depth``: a note (its indexed path) and the notes at most ``depth``
  links away from it, either way (``core.graph``); the catalog resolves them.
- ``langs``: chunks in these languages (``core.language``; ``catalog.Allowed.langs``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from ..errors import InvalidArgumentError
from ..limits import MAX_DEPTH
from .frontmatter import normalise_tag

Scalar = str | int | float | bool
FrontmatterValue = Scalar | tuple[Scalar, ...]

#: An age: 7d, 2w, 3m (30-day months), 1y; -7d the same (7 days before now).
_RELATIVE = re.compile(r"^\s*-?\s*(\d+)\s*([dwmy])\s*$", re.IGNORECASE)
_DAYS = {"d": 1, "w": 7, "m": 30, "y": 365}


@dataclass(frozen=True, slots=True)
class FileEntry:
    """What filters look at, for one stored file."""

    id: int
    root_id: int
    rel_path: str
    mtime_ns: int
    tags: frozenset[str]  # as the filter sees them: nested tags with every parent level
    frontmatter: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    kind: str = "markdown"  # which extractor read it (core.extract: markdown, text, pdf...)
    langs: frozenset[str] = frozenset()  # the languages of its chunks (core.language)
    #: How many of its chunks' languages are not told yet (they are found after the file
    #: is committed, as vectors are): 0 once told.
    langs_pending: int = 0


def tag_levels(tags: Sequence[str]) -> frozenset[str]:
    """``["a/b/c"]`` -> ``{"a", "a/b", "a/b/c"}``."""
    out: set[str] = set()
    for tag in tags:
        parts = normalise_tag(tag).split("/")
        out.update("/".join(parts[: i + 1]) for i in range(len(parts)) if parts[0])
    return frozenset(out)


@dataclass(frozen=True, slots=True)
class Filters:
    paths: tuple[str, ...] = ()
    root: str | None = None
    tags: tuple[str, ...] = ()
    frontmatter: tuple[tuple[str, FrontmatterValue], ...] = ()
    modified_after: float | None = None  # seconds since the epoch, inclusive
    modified_before: float | None = None  # exclusive
    near: str | None = None  # a note's path: it and its neighbours ...
    depth: int = 1  # ... at most this many links away
    kinds: tuple[str, ...] = ()  # files of these kinds only (pdf, code, ...)
    langs: tuple[str, ...] = ()  # chunks in these languages only (en, de, ...)

    @property
    def active(self) -> bool:
        return self != NO_FILTERS

    def describe(self) -> dict[str, Any]:
        """The filters applied, as a caller would read them back."""
        out: dict[str, Any] = {}
        if self.paths:
            out["paths"] = list(self.paths)
        if self.root is not None:
            out["root"] = self.root
        if self.tags:
            out["tags"] = list(self.tags)
        if self.frontmatter:
            out["frontmatter"] = {k: list(v) if isinstance(v, tuple) else v
                                  for k, v in self.frontmatter}
        for name in ("modified_after", "modified_before"):
            when = getattr(self, name)
            if when is not None:
                out[name] = datetime.fromtimestamp(when, UTC).isoformat()
        if self.near is not None:
            out["near"], out["depth"] = self.near, self.depth
        out.update({k: list(v) for k, v in (("kinds", self.kinds), ("lang", self.langs)) if v})
        return out


NO_FILTERS = Filters()


def make_filters(
    *,
    paths: Sequence[str] | str | None = None,
    root: str | None = None,
    tags: Sequence[str] | str | None = None,
    frontmatter: Mapping[str, Any] | None = None,
    modified_after: str | date | None = None,
    modified_before: str | date | None = None,
    near: str | None = None,
    depth: int | None = None,
    kinds: Sequence[str] | str | None = None,
    lang: Sequence[str] | str | None = None,
    now: datetime | None = None,
) -> Filters:
    """Check what a caller passed; raises ``InvalidArgumentError`` saying what to fix."""
    return Filters(
        paths=_globs(paths),
        root=_root(root),
        tags=_tags(tags),
        frontmatter=_frontmatter(frontmatter),
        modified_after=_when("modified_after", modified_after, now),
        modified_before=_when("modified_before", modified_before, now),
        near=_near(near, depth),
        depth=check_depth(depth),
        kinds=_kinds(kinds),
        langs=_langs(lang),
    )



def _kinds(kinds: Sequence[str] | str | None) -> tuple[str, ...]:
    """Kinds of file by name: a kind no extractor reads is an error that names those that
    exist (a misspelt kind would match nothing, and say nothing)."""
    given = tuple(dict.fromkeys(k.lower() for k in _strings("kinds", kinds)))
    if not given:
        return ()
    from ..kinds import KIND_GLOBS, known_kinds

    if any(k not in KIND_GLOBS for k in given):
        known = known_kinds()  # (an installed extractor's kind?)
        for kind in given:
            if kind not in known:
                raise InvalidArgumentError(f"kinds: no kind of file is called {kind!r}; "
                                           f"give some of {', '.join(known)}")
    return given


def _langs(lang: Sequence[str] | str | None) -> tuple[str, ...]:
    given = _strings("lang", lang)
    if not given:
        return ()
    from .language import check_languages  # (the model's labels: only when filtered)

    return check_languages("lang", given)


def _strings(name: str, value: Sequence[str] | str | None) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(v, str) for v in items):
        raise InvalidArgumentError(f"{name} must be a list of strings, not {value!r}")
    if any(not v.strip() for v in items):  # a value that was meant, and came out blank
        raise InvalidArgumentError(f"{name}: {value!r} holds a blank value; leave {name} "
                                   "out (or give an empty list) for no filter")
    return tuple(v.strip() for v in items)


def _globs(paths: Sequence[str] | str | None) -> tuple[str, ...]:
    given = _strings("paths", paths)
    if not given:
        return ()  # (no filter: pathspec is not imported)
    for glob in given:
        if _on_disk(glob):
            raise InvalidArgumentError(
                f"paths: {glob!r} is a place on disk, and globs are relative to the indexed "
                "folder (as results' `path` gives them): write 'sub/**' for the files under "
                "FOLDER/sub, and root=FOLDER when several indexed folders have one")
    globs = tuple(g.lstrip("/").removeprefix("./") for g in given)
    if "" in globs:
        raise InvalidArgumentError(f"paths: {paths!r} holds a glob that names no file ('/' "
                                   "or './'); globs are relative to the root: 'docs/**', "
                                   "or '**' for every file")
    import pathspec  # (a filter by path needs it; a plain search does not)

    try:
        spec = pathspec.GitIgnoreSpec.from_lines(globs)
    except Exception as exc:  # pathspec's own errors vary by version
        raise InvalidArgumentError(f"paths: cannot read glob ({exc}); use globs such as "
                                   "'docs/**' or '**/adr-*.md'") from exc
    for glob, pattern in zip(globs, spec.patterns, strict=True):
        # pathspec reads a comment, or a glob it cannot compile (an unclosed '['), as no
        # pattern at all: the filter would match nothing and say nothing
        if pattern.regex is None:
            why = ("starts with '#', which makes it a comment in .gitignore syntax: write "
                   "'\\#' for a name that starts with '#' (tags go in tags)"
                   if glob.startswith("#") else
                   "is not a glob (an unclosed '['?): write '\\[' for a '[' in a name")
            raise InvalidArgumentError(f"paths: {glob!r} {why}; globs look like 'docs/**' "
                                       "or '**/adr-*.md'")
    return globs


def _on_disk(glob: str) -> bool:
    """Whether ``glob`` is an absolute (or home) path that exists, such as
    ``/home/me/notes/**``, rather than a glob anchored at the root (``/docs/**``)."""
    if glob.startswith("~/"):
        return True
    if not glob.startswith("/"):
        return False
    literal = re.split(r"[*?\[]", glob, maxsplit=1)[0].rstrip("/")
    return literal.count("/") >= 2 and os.path.exists(os.path.expanduser(literal))


def check_depth(depth: object) -> int:
    """A number of links: 1 (the notes linked to or from one) up to ``MAX_DEPTH``."""
    if depth is None:
        return 1
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise InvalidArgumentError(
            f"depth must be a whole number from 1 to {MAX_DEPTH}, not {depth!r}: 1 is the "
            "notes linked to or from the note, 2 adds the notes linked to or from those")
    return depth


def _near(near: str | None, depth: int | None) -> str | None:
    if near is None:
        if depth is not None:
            raise InvalidArgumentError("depth goes with near: give near=PATH (a note's path "
                                       "as search results give it) to search its neighbourhood")
        return None
    if not isinstance(near, str) or not near.strip():
        raise InvalidArgumentError(f"near must be a note's path as search results give it, "
                                   f"not {near!r}")
    return near.strip()


def _root(root: str | None) -> str | None:
    if root is None:
        return None
    if not isinstance(root, str) or not root.strip():
        raise InvalidArgumentError(f"root must be an indexed folder (path or name), not "
                                   f"{root!r}")
    return root.strip()


def _tags(tags: Sequence[str] | str | None) -> tuple[str, ...]:
    out = tuple(dict.fromkeys(normalise_tag(t) for t in _strings("tags", tags)))
    if any(not t for t in out):
        raise InvalidArgumentError(f"tags: {tags!r} holds an empty tag")
    return out


def _scalar(key: str, value: object) -> Scalar:
    if isinstance(value, str) and not value.strip():
        raise InvalidArgumentError(f"frontmatter[{key!r}]: {value!r} is blank; give the value "
                                   f"to compare the field with, or leave {key!r} out")
    if isinstance(value, str | int | float | bool):
        return value
    raise InvalidArgumentError(
        f"frontmatter[{key!r}]: {value!r} is not a string, number or boolean (or a list of "
        "them); give the value to compare the field with"
    )


def _frontmatter(fm: Mapping[str, Any] | None) -> tuple[tuple[str, FrontmatterValue], ...]:
    if fm is None:
        return ()
    if not isinstance(fm, Mapping):
        raise InvalidArgumentError(f"frontmatter must be an object of field: value, not {fm!r}")
    out: list[tuple[str, FrontmatterValue]] = []
    for key, value in sorted(fm.items()):
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(f"frontmatter: {key!r} is not a field name")
        if isinstance(value, list | tuple):
            out.append((key, tuple(_scalar(key, v) for v in value)))
        else:
            out.append((key, _scalar(key, value)))
    return tuple(out)


def _when(name: str, value: str | date | None, now: datetime | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, str) and not value.strip():
        raise InvalidArgumentError(f"{name} is blank; give a date (2026-11-01) or an age "
                                   f"(7d), or leave {name} out for no bound")
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        relative = _RELATIVE.match(value)
        if relative:
            days = int(relative.group(1)) * _DAYS[relative.group(2).lower()]
            try:
                return ((now or datetime.now().astimezone()) - timedelta(days=days)).timestamp()
            except OverflowError:
                raise InvalidArgumentError(
                    f"{name}: {value!r} reaches back before the year 1; give a shorter "
                    f"age, or leave {name} out for no bound") from None
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise InvalidArgumentError(
                f"{name}: cannot read {value!r} as a date; use an ISO date or datetime "
                "(2026-11-01, 2026-11-01T09:30, 2026-11-01T09:30+01:00) or a relative "
                "age (7d, 2w, 3m for months, 1y)"
            ) from None
    else:
        raise InvalidArgumentError(f"{name} must be a date string such as 2026-11-01 or 7d")
    try:
        if moment.tzinfo is None:
            moment = moment.astimezone()  # a date or datetime without a zone: local time
        return moment.timestamp()
    except (OverflowError, ValueError, OSError):
        raise InvalidArgumentError(
            f"{name}: {value!r} is outside the dates this machine can compare; give a "
            f"later date, or leave {name} out for no bound") from None


def bound_seconds(name: str, value: str | date | None) -> float | None:
    """A bound as the filters read it (an ISO date or datetime, local time without a
    zone, or an age such as ``7d``), in seconds since the epoch; None for none. For
    the history's ``since`` and ``before``."""
    return _when(name, value, None)
