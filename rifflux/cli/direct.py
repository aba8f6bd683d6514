"""The one-shot commands answered directly: on an SQLite index read in this thread
(``rifflux.direct``), with no actors and no event loop, so that a command that is one
read of the index imports what that read needs and no more.

Each command here is the same command as the one ``commands`` runs, handed the index
read directly in place of the library: the same checks, the same answer, the same
printing. Where it cannot answer exactly as the library would (``takes``: a search by
meaning, near a note; an index ``direct.open_index`` leaves to the library), ``run``
says None and the launcher runs the command as usual. Failures end as ``entry.run``
ends them (``entry.failed``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from ..config import Settings
from ..exits import EXIT_INTERRUPTED, configure_logging

__all__ = ["run"]


@dataclass(frozen=True, slots=True)
class _Direct:
    #: Whether it answers these arguments.
    takes: Callable[[argparse.Namespace], bool]
    #: The command, given the index (``DirectIndex``) besides.
    command: Callable[..., Coroutine[Any, Any, int]]


def _direct(name: str) -> _Direct:
    """The command ``name`` as it is answered directly (its module imported now: a search
    imports no reading command's, nor they the search's)."""
    if name == "search":
        from .search import search_directly, takes_directly

        return _Direct(takes_directly, search_directly)
    from . import reading

    return _Direct(_always, {"show": reading.show_directly, "links": reading.links_directly,
                             "neighbors": reading.neighbors_directly,
                             "files": reading.files_directly,
                             "tags": reading.tags_directly}[name])


def _always(args: argparse.Namespace) -> bool:
    return True


#: The commands that may be answered directly (their modules are imported by ``run``).
NAMES = frozenset({"search", "show", "links", "neighbors", "files", "tags"})


def run(args: argparse.Namespace, settings: Settings) -> int | None:
    """The exit code of the command ``args`` names, answered directly; None: it is one to
    run with the library (nothing has been printed)."""
    if args.command not in NAMES:
        return None
    direct = _direct(args.command)
    if not direct.takes(args):
        return None
    from ..direct import open_index, run_now
    from . import entry

    configure_logging(settings.log_level)
    try:
        with open_index(settings) as index:
            if index is None:
                return None
            return run_now(direct.command(args, settings, index))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BaseException as exc:  # the boundary, as entry.run's
        return entry.failed(exc)
