"""The commands that read the index: ``show`` (lines of a file, a chunk, or a commit:
``cli.history``), ``links``,
``neighbors``, ``tags`` and ``files``.

``tags`` and ``files`` on an SQLite index are answered directly (``tags_directly``,
``files_directly``: ``rifflux.direct``, no actors, no event loop), with the same words;
the library (``Rifflux``) and anyio are imported by the commands that open it."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..core.filters import check_depth
from ..exits import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from ..history_types import SHORTEST_HASH
from .common import (
    Holding,
    check_index,
    count,
    local_file,
    named_path,
    note_path,
    require_index,
    write_json,
)
from .entry import CommandError
from .plain import display_path, link_lines, on_terminal, print_files, shown
from .results import out

if TYPE_CHECKING:
    from ..config import Settings
    from ..direct import DirectIndex
    from ..types import (
        ChunkDetail,
        FileLines,
        FileRecord,
        IndexedFile,
        Neighbor,
        NoteLinks,
        TagCount,
    )

#: PATH:START-END, PATH:LINE.
_LOCATION = re.compile(r"^(?P<path>.+?):(?P<start>\d+)(?:-(?P<end>\d+))?$")
#: PATH:WHATEVER, when PATH is a file and WHATEVER no range (PATH:abc, PATH:5-).
_NOT_A_RANGE = re.compile(r"^(?P<path>.+):(?P<range>[^:/\\]*)$")
_CHUNK_ID = re.compile(r"^[0-9a-f]{20}$")
#: What may be a commit's hash, or a chunk id cut short (or too long): hex digits only.
_PART_OF_AN_ID = re.compile(rf"^[0-9a-f]{{{SHORTEST_HASH},40}}$")


class _Showing(Holding, Protocol):
    """What ``show`` asks of the index (``Rifflux``, or ``DirectIndex``)."""

    async def get_file(self, path: str, *, root: str | None = None,
                       start_line: int | None = None, end_line: int | None = None,
                       page: int | None = None, end_page: int | None = None,
                       ) -> FileRecord | FileLines | None: ...
    async def get_chunk(self, chunk_id: str) -> ChunkDetail | None: ...


#: How a command opens the index it reads, and finds a note's path in it.
_Opened = Callable[[], AbstractAsyncContextManager[_Showing]]
_Named = Callable[[Holding, str, str | None], Awaitable[str]]


async def show(args: argparse.Namespace, settings: Settings) -> int:
    import anyio

    from ..api import Rifflux

    await require_index(settings)
    on_disk = await anyio.Path(args.target).exists()
    if (done := await _commit(args, settings, on_disk)) is not None:
        return done
    return await _show(args, on_disk, lambda: Rifflux(settings=settings), note_path)


async def _commit(args: argparse.Namespace, settings: Settings, on_disk: bool) -> int | None:
    """A commit of the history, when the target is a hash's digits that are no chunk id
    and no file, and a commit starts so (``cli.history``); else None."""
    target = args.target
    if (on_disk or not settings.history or not _PART_OF_AN_ID.match(target)
            or _CHUNK_ID.match(target)):
        return None
    from .history import show_commit

    return await show_commit(target, settings, as_json=args.json, missing_ok=True)


async def show_directly(args: argparse.Namespace, settings: Settings,
                        index: DirectIndex) -> int:
    """``show``, answered by an index read directly."""
    check_index(settings)
    return await _show(args, _exists(args.target), lambda: nullcontext(index), _named_here)


def show_takes_directly(args: argparse.Namespace) -> bool:
    """Whether ``show`` is answered directly: not for what may be a commit's hash (the
    history is read by the library), a word of hex digits that is no chunk id or file."""
    target = args.target
    return not (_PART_OF_AN_ID.match(target) and not _CHUNK_ID.match(target)
                and not _exists(target))


def _exists(target: str) -> bool:
    return Path(target).exists()


async def _named_here(rf: Holding, path: str, root: str | None) -> str:
    """``note_path``, the working directory looked at in this thread."""
    return await named_path(rf, path, root, local_file(path))


async def _show(args: argparse.Namespace, on_disk: bool, opened: _Opened,
                named: _Named) -> int:
    target = args.target
    if _CHUNK_ID.match(target) and not on_disk:
        return await _show_chunk(target, opened, as_json=args.json)
    path, start, end, ranged = target, 1, None, False
    if (m := _LOCATION.match(target)) and not on_disk:
        path, start, ranged = m.group("path"), int(m.group("start")), True
        end = int(m.group("end")) if m.group("end") else start
    async with opened() as rf:
        path = await named(rf, path, args.root)
        found: FileRecord | FileLines | None
        if ranged and _unit_of(path) != "line":  # paper.pdf:14 is page 14
            found = await rf.get_file(path, root=args.root, page=start, end_page=end)
        else:
            found = await rf.get_file(path, root=args.root, start_line=start, end_line=end)
        if found is None and not on_disk and (asked := _NOT_A_RANGE.match(target)):
            file = asked["path"]
            if await _known(rf, file, args.root, named):
                raise CommandError(f"{asked['range']!r} is not a range of lines: write "
                                   f"{file}:START-END, {file}:LINE or {file} (lines count "
                                   "from 1)", EXIT_USAGE)
    if found is None or "text" not in found:
        if _PART_OF_AN_ID.match(target) and not on_disk:
            raise CommandError(f"{target} is neither an indexed file, nor a chunk id, nor "
                               "an indexed commit: a chunk id has 20 hex digits, all of them "
                               "(as `rifflux search --json` prints it); a commit, at least "
                               f"the first {SHORTEST_HASH} of its hash (as `rifflux history` "
                               "prints it)")
        if on_disk:  # (skipped: too large, not text, unreadable, left out by the globs)
            raise CommandError(f"{target} is not in the index, though the file is there: "
                               f"`rifflux index {target}` reads it, or says why it is left out")
        raise CommandError(f"{path} is not in the index: give a path as `rifflux search` "
                           "prints it, or index its folder first")
    if args.json:
        write_json(found)
        return EXIT_OK
    lines = out()
    where = shown(Path(found["root"]) / found["path"])
    if "start_page" in found:  # paper.pdf page 3 (of 14): lines 45-65 of 870
        unit, first, last = found.get("unit", "page"), found["start_page"], found["end_page"]
        pages = f"{unit} {first}" if first == last else f"{unit}s {first}-{last}"
        lines.print(f"{where} {pages} (of {found['total_pages']}): lines "
                    f"{found['start_line']}-{found['end_line']} of {found['total_lines']}",
                    style="bold cyan", markup=False)
    else:
        lines.print(f"{where}:{found['start_line']}-{found['end_line']} "
                    f"(of {found['total_lines']} lines)", style="bold cyan", markup=False)
    width = len(str(found["end_line"]))
    for n, line in enumerate(found["text"].split("\n"), found["start_line"]):
        lines.print(f"{n:>{width}} │ {line}", markup=False)
    if found.get("changed_since_indexed"):
        sys.stderr.write(f"rifflux: {path} changed since it was indexed: these are its lines "
                         "now, and line numbers from search may point at other text; "
                         "`rifflux index` its folder, then search again\n")
    return EXIT_OK


def _unit_of(path: str) -> str:
    from ..core.extract.reading import unit_of  # (a file read by lines or by pages)

    return unit_of(path)


async def _known(rf: Holding, path: str, root: str | None, named: _Named) -> bool:
    """Whether ``path`` names an indexed file (as ``note_path`` reads it)."""
    try:
        return await rf.get_file(await named(rf, path, root), root=root) is not None
    except CommandError:
        return False


async def _show_chunk(chunk_id: str, opened: _Opened, *, as_json: bool) -> int:
    async with opened() as rf:
        chunk = await rf.get_chunk(chunk_id)
    if chunk is None:
        raise CommandError(f"no chunk {chunk_id!r} in the index (ids change when a file is "
                           "edited: search again)")
    if as_json:
        write_json(chunk)
        return EXIT_OK
    lines = out()
    lines.print(f"{display_path(chunk)}  {chunk['heading_path']}".rstrip(),
                style="bold cyan", markup=False)
    lines.print(chunk["content"], markup=False)
    return EXIT_OK


async def links(args: argparse.Namespace, settings: Settings) -> int:
    from ..api import Rifflux

    await require_index(settings)
    async with Rifflux(settings=settings) as rf:
        found = await rf.links(await note_path(rf, args.path, args.root), root=args.root)
    return _links_said(args, found)


async def links_directly(args: argparse.Namespace, settings: Settings,
                         index: DirectIndex) -> int:
    """``links``, answered by an index read directly."""
    check_index(settings)
    found = await index.links(await _named_here(index, args.path, args.root), root=args.root)
    return _links_said(args, found)


def _links_said(args: argparse.Namespace, found: NoteLinks) -> int:
    if args.json:
        write_json(found)
    elif on_terminal():
        from .terminal import print_links, stdout_console

        print_links(stdout_console(), found)
    else:
        lines = out()
        for pieces in link_lines(found):
            lines.print("".join(text for text, _ in pieces))
    return EXIT_OK


async def neighbors(args: argparse.Namespace, settings: Settings) -> int:
    from ..api import Rifflux

    check_depth(args.depth)  # (before anything is opened: exit 2, whichever side it is)
    await require_index(settings)
    async with Rifflux(settings=settings) as rf:
        found = await rf.neighbors(await note_path(rf, args.path, args.root),
                                   depth=args.depth, root=args.root)
    return _neighbors_said(args, found)


async def neighbors_directly(args: argparse.Namespace, settings: Settings,
                             index: DirectIndex) -> int:
    """``neighbors``, answered by an index read directly."""
    check_depth(args.depth)
    check_index(settings)
    found = await index.neighbors(await _named_here(index, args.path, args.root),
                                  depth=args.depth, root=args.root)
    return _neighbors_said(args, found)


def _neighbors_said(args: argparse.Namespace, found: list[Neighbor]) -> int:
    if args.json:
        write_json(found)
    else:
        lines = out()
        for near in found:
            where = shown(Path(near["root"]) / near["path"])
            lines.print(f"{near['distance']}  {where}  {near['title']}", markup=False)
    if not found:
        sys.stderr.write(f"rifflux: no note within {count(args.depth, 'link')} of "
                         f"{args.path} (`rifflux links` shows its unresolved links)\n")
        return EXIT_FAILURE
    return EXIT_OK


async def tags(args: argparse.Namespace, settings: Settings) -> int:
    from ..api import Rifflux

    await require_index(settings)
    async with Rifflux(settings=settings) as rf:
        found = await rf.list_tags(args.path_globs)
    return _tags_said(args, found)


async def tags_directly(args: argparse.Namespace, settings: Settings,
                        index: DirectIndex) -> int:
    """``tags``, answered by an index read directly."""
    check_index(settings)
    return _tags_said(args, await index.list_tags(args.path_globs))


def _tags_said(args: argparse.Namespace, found: list[TagCount]) -> int:
    if args.json:
        write_json(found)
    else:
        lines = out()
        width = len(f"{found[0]['files']:,}") if found else 0
        for tag in found:
            lines.print(f"{tag['files']:>{width},}  {tag['tag']}", markup=False)
    if not found:
        where = " matching --path" if args.path_globs else ""
        sys.stderr.write(f"rifflux: no tags in the indexed files{where} (front matter "
                         "`tags:` or #inline tags)\n")
        return EXIT_FAILURE
    return EXIT_OK


async def files(args: argparse.Namespace, settings: Settings) -> int:
    from ..api import Rifflux

    await require_index(settings)
    async with Rifflux(settings=settings) as rf:
        found = await rf.files(args.root)
    return _files_said(args, found)


async def files_directly(args: argparse.Namespace, settings: Settings,
                         index: DirectIndex) -> int:
    """``files``, answered by an index read directly."""
    check_index(settings)
    return _files_said(args, await index.files(args.root))


def _files_said(args: argparse.Namespace, found: list[IndexedFile]) -> int:
    if args.json:
        write_json(found)
    else:
        print_files(out(), found)
    if not found:
        sys.stderr.write("rifflux: the index holds no files"
                         f"{' under ' + args.root if args.root else ''} yet: "
                         "`rifflux index PATH` first\n")
        return EXIT_FAILURE
    return EXIT_OK

