"""What an index job has to do for one root: pure functions of what is on disk and what
is stored.

The indexer actor gathers the inputs (a scan, or a ``stat`` of named paths, and
the stored files of the root) and executes the plan; deciding is done here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from .scan import FileState


class StoredState(NamedTuple):
    """What the index holds of one file: enough to tell whether it changed (a tuple: a
    no-op reindex of a large folder reads one per file)."""

    id: int
    mtime_ns: int
    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Scope:
    """The files of one root a job covers: the named ``paths``, or everything below
    ``prefix`` (the whole root when it is empty)."""

    root_id: int
    prefix: str = ""
    paths: tuple[str, ...] | None = None


@dataclass(slots=True)
class Plan:
    changed: list[FileState] = field(default_factory=list)  # to read and (re)index
    unchanged: list[str] = field(default_factory=list)  # same mtime and size: skipped
    deletes: list[str] = field(default_factory=list)  # stored, gone from disk

    def to_read(self, known: Mapping[str, StoredState]) -> list[tuple[str, str | None]]:
        """(rel_path, stored sha256 or None) of every changed file: a file whose bytes
        turn out unchanged is only touched, not re-chunked."""
        return [(f.rel_path, known[f.rel_path].sha256 if f.rel_path in known else None)
                for f in self.changed]


def plan_scan(
    files: Iterable[FileState], known: Mapping[str, StoredState], *, prefix: str = "",
    force: bool = False, unseen: Collection[str] = (),
) -> Plan:
    """A full scan of a root (or of the part below ``prefix``): stored files that are no
    longer on disk are deleted. ``unseen`` are the paths the scan could not look at (a
    folder it could not list, ``.`` for the root, a file it could not stat): what is
    stored there is kept, since a permission or a mount that comes back is not a delete."""
    plan = Plan()
    present: set[str] = set()
    changed, unchanged = plan.changed, plan.unchanged
    for state in files:  # (the loop of a no-op reindex: one comparison a file)
        rel = state.rel_path
        if not rel.startswith(prefix):
            continue
        present.add(rel)
        stored = known.get(rel)
        if (stored is not None and not force and stored.mtime_ns == state.mtime_ns
                and stored.size == state.size):
            unchanged.append(rel)
        else:
            changed.append(state)
    if "." not in unseen:  # (the root itself unseen: nothing is deleted)
        plan.deletes = [rel for rel in known.keys() - present if rel.startswith(prefix)
                        and not _under(rel, unseen)]
        plan.deletes.sort()
    return plan


def _under(rel: str, paths: Collection[str]) -> bool:
    return any(rel == p or rel.startswith(p + "/") for p in paths)


def plan_named(
    states: Mapping[str, FileState | None], known: Mapping[str, StoredState], *,
    force: bool = False,
) -> Plan:
    """Named paths (watcher events): what is on disk now decides, whatever the event
    said; a stored path that is gone (``None``) is deleted."""
    plan = Plan()
    for rel in sorted(states):
        state = states[rel]
        if state is None:
            if rel in known:
                plan.deletes.append(rel)
        else:
            _classify(plan, state, known, force)
    return plan


def _classify(plan: Plan, state: FileState, known: Mapping[str, StoredState],
              force: bool) -> None:
    stored = known.get(state.rel_path)
    if (stored is not None and not force and stored.mtime_ns == state.mtime_ns
            and stored.size == state.size):
        plan.unchanged.append(state.rel_path)
    else:
        plan.changed.append(state)
