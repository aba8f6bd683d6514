"""Filters tested against the files: ``CompiledFilters`` (``Filters`` with its root
resolved and its path globs fused into one expression) tests one stored file at a time,
as the catalog does for every file when a search's filters are new."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .filters import FileEntry, Filters, FrontmatterValue, Scalar


@dataclass(frozen=True, slots=True)
class CompiledFilters:
    """``Filters`` made ready to test many files (the root already resolved to its id)."""

    filters: Filters
    root_id: int | None
    _path_matches: Callable[[str], bool] | None
    near: frozenset[int] | None = None  # the files of ``near``'s neighbourhood

    @classmethod
    def compile(cls, filters: Filters, root_id: int | None,
                near: frozenset[int] | None = None) -> CompiledFilters:
        return cls(filters, root_id, _path_matcher(filters.paths) if filters.paths else None,
                   near)

    def matches(self, entry: FileEntry) -> bool:
        f = self.filters
        if self.root_id is not None and entry.root_id != self.root_id:
            return False
        if self.near is not None and entry.id not in self.near:
            return False
        if self._path_matches is not None and not self._path_matches(entry.rel_path):
            return False
        if f.tags and not all(t in entry.tags for t in f.tags):
            return False
        if (f.kinds and entry.kind not in f.kinds) or (
                f.langs and entry.langs.isdisjoint(f.langs)):  # (a file holding any)
            return False
        mtime = entry.mtime_ns / 1e9
        if f.modified_after is not None and mtime < f.modified_after:
            return False
        if f.modified_before is not None and mtime >= f.modified_before:
            return False
        return all(_field_matches(entry.frontmatter.get(k), v) for k, v in f.frontmatter)


def _path_matcher(globs: tuple[str, ...]) -> Callable[[str], bool]:
    """One regular expression for all the globs (pathspec's, fused): a file is tested in
    one ``match`` instead of one per glob. With a negated glob, pathspec decides."""
    import pathspec

    spec = pathspec.GitIgnoreSpec.from_lines(globs)
    regexes = [getattr(p, "regex", None) for p in spec.patterns]
    if any(getattr(p, "include", None) is not True for p in spec.patterns) or None in regexes:
        return spec.match_file
    fused = "|".join(re.sub(r"\(\?P<\w+>", "(?:", r.pattern) for r in regexes if r)
    match = re.compile(fused).match
    return lambda rel: match(rel) is not None


def _field_matches(field_value: object, wanted: FrontmatterValue) -> bool:
    if isinstance(wanted, tuple):
        return all(_field_matches(field_value, w) for w in wanted)
    if isinstance(field_value, list):
        return any(_same(item, wanted) for item in field_value)
    return _same(field_value, wanted)


def _same(value: object, wanted: Scalar) -> bool:
    if value is None:
        return False
    if type(value) is type(wanted) or (_number(value) and _number(wanted)):
        return value == wanted
    return _text(value) == _text(wanted)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip().lower()
