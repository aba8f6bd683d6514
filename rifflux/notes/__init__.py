"""Agents keep notes: ``Rifflux``'s note operations, composed onto the facade
(``Rifflux`` holds a ``Notes`` and a ``NoteDesk`` and hands each note method to them).

Writing is off unless folders are named writable (``Rifflux(writable=...)``,
``--writable``, ``RIFFLUX_WRITABLE``). Each operation:

1. checks the path (``core.note_paths``, then the disk in a worker thread:
   ``files.note_file``);
2. holds this process's lock on each path it changes (``desk.NoteDesk.holding``: two
   calls on one note run one after the other, index included);
3. reads, checks ``if_match``, writes and renames in a worker thread under the
   folder's lock, which other processes take too (``ops``, ``files``);
4. hands the paths to the indexer as an urgent job (``Service.submit_note``: it runs
   before queued jobs, and between two transactions of a running one) and returns once
   it is committed. So the note's text is found by a lexical search as soon as the call
   returns, its links and backlinks are current, and the answer says whether its
   vectors are stored yet (``vector_stored``; ``wait_for_job(job_id)`` waits for them).
   The watcher's event for the same bytes finds them indexed already: a no-op.

The rooms: ``desk`` (the writable folders, the globs a note's path must pass, this
process's lock per path), ``operations`` (``Notes``: each operation's checks, locks
and index job), ``ops`` (each operation on disk, under the folder's lock) and
``files`` (the one place that writes notes: atomic writes, the lock, the trash,
sweeping temporary files). ``ops`` and ``files`` (and yaml with them) load with the
first note written, never with a search.
"""

from .desk import NoteDesk
from .operations import Notes

__all__ = ["NoteDesk", "Notes"]
