"""The exceptions Rifflux raises. Every message says what to do next."""

from __future__ import annotations


class RiffluxError(Exception):
    """Base class of every error Rifflux raises on purpose."""


class InvalidArgumentError(RiffluxError, ValueError):
    """A caller passed a value Rifflux cannot use (unknown mode, top_k < 1, ...)."""


class NotFoundError(InvalidArgumentError):
    """The index holds no note at that path (an argument a caller can fix, so also an
    ``InvalidArgumentError``; the HTTP API answers it 404)."""


class IndexDatabaseError(RiffluxError):
    """The index (an SQLite file or a PostgreSQL database) cannot be opened, read or
    written."""


class IndexBusyError(IndexDatabaseError):
    """Another process holds a lock on the index longer than the busy timeout."""


class IndexDamagedError(IndexDatabaseError):
    """The index file is damaged: it is moved aside and rebuilt at the next open."""


class IndexUnreachableError(IndexDatabaseError):
    """The PostgreSQL server holding the index cannot be reached (down, restarting, or
    the network): searches fail with it until the server is back."""


class SchemaVersionError(IndexDatabaseError):
    """The index was written by an incompatible version of Rifflux."""


class ReadOnlyError(RiffluxError):
    """The index is open read-only (``rifflux serve --read-only``, another index searched
    by ``db_path``): it is searched, never written, so a reindex, a forget or a note
    cannot be made through it."""


class EmbeddingError(RiffluxError):
    """The embedding model could not be loaded or run."""


class OtherModelError(EmbeddingError):
    """The index's vectors were made by another model than this process's, and this
    process may not re-embed the index (read-only, a reading command, a fallback model):
    its vectors are left as they are and its semantic search is off, saying so."""


class EmbeddingUnavailableError(EmbeddingError):
    """The embedding server cannot answer now (down, overloaded, timing out, refusing the
    request, or answering something that is not the embeddings it should): nothing
    stored is lost, lexical search goes on, and embedding resumes by itself when it
    answers again. ``retry_after``: the seconds the server asked to wait (``Retry-After``),
    when it said."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class LeaseLostError(RiffluxError):
    """The embedding lease this batch was embedded under is no longer this process's (its
    session ended unseen: a server restart; another process may hold it and embed the
    same texts now): the batch's vectors were not stored, and this process stops
    embedding until it holds the lease again."""


class RerankError(RiffluxError):
    """A reranker could not score a search's hits: a search keeps its fused order then
    (and its answer says why); raised only where a reranker is loaded or asked alone."""


class HistoryOffError(RiffluxError):
    """The git history is not kept here: turned off (``--no-history``), or the index is a
    PostgreSQL database (it is kept in SQLite indexes only, for now)."""


class JobNotFoundError(RiffluxError):
    """No background job has that id (it may have aged out of the bounded history)."""


class ClosedError(RiffluxError):
    """The Rifflux instance is not open: use it inside ``async with Rifflux(...)``."""


class InternalError(RiffluxError):
    """Something failed that Rifflux did not expect (a bug, or a library failing in a new
    way). The request it belongs to failed; the instance keeps serving, and the log has
    the traceback."""


class NotAnIndexError(IndexDatabaseError):
    """The index path holds something that is not a Rifflux index (it is never touched)."""


class NotWritableError(InvalidArgumentError):
    """A note may not be written there: writing is off (no writable folder), or the path
    leaves the writable folder, is not a markdown note, or is one the index leaves out."""


class NoteConflictError(RiffluxError):
    """The note is not what the caller last read (``if_match``), or already exists: nothing
    was written. ``current_sha256`` is the note's sha256 now (None: there is no note)."""

    def __init__(self, message: str, *, path: str, current_sha256: str | None) -> None:
        super().__init__(message)
        self.path = path
        self.current_sha256 = current_sha256
