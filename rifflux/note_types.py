"""What the note operations return (``write_note`` ... ``recent``), as ``TypedDict``s.

The companion of ``rifflux.types`` (the contract's other shapes), kept apart so that
each stays a readable size; docs/CONTRACT.md describes every field.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict


class LinkUpdate(TypedDict):
    """A link ``move_note`` rewrote: in which note, on which line, before and after."""

    path: str
    line: int
    before: str
    after: str


class NoteChange(TypedDict):
    """A note written, edited, moved, deleted or restored, once the index holds it."""

    path: str  # relative to ``folder``
    folder: str  # the writable folder (absolute)
    sha256: str | None  # the note's bytes now (None: deleted)
    previous_sha256: str | None  # before (None: there was no note)
    #: The lines the change wrote, ``[first, last]`` (1-based, inclusive), in order.
    lines: list[list[int]]
    #: Whether every text of the change has its vector (it is found semantically too).
    vector_stored: bool
    job_id: str  # the index job (``job``/``wait_for_job``: when its vectors are stored)
    moved_from: NotRequired[str]
    trash_path: NotRequired[str]  # where a deleted note is, relative to ``folder``
    links_updated: NotRequired[list[LinkUpdate]]
    #: Notes whose links to the moved note could not be rewritten, and why.
    links_not_updated: NotRequired[list[dict[str, str]]]


class RecentNote(TypedDict):
    """A note among those changed most recently (by anyone)."""

    path: str
    root: str
    title: str
    modified: str  # ISO 8601 UTC
    tags: list[str]
