"""What the machine allows: the watcher's inotify limits on Linux against the folders to
watch, and the disk space beside the index.

The limits are read from ``/proc`` (``RIFFLUX_PROCFS`` names another folder laid out
as ``/proc`` is, as psutil's ``PROCFS_PATH`` does: a container's, or a test's).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from ..common import count
from .checks import Check, attention, note, ok

__all__ = ["check_disk", "check_watcher", "count_folders", "watcher_limits"]

#: The value suggested for max_user_watches (what most distributions' guides give).
SUGGESTED_WATCHES = 524_288
#: Past this share of the limit, watching is likely to fail (other programs watch too).
_TOO_CLOSE = 0.8
#: Free space below this beside the index needs attention.
_LOW_DISK = 1 << 30


def count_folders(roots: Sequence[str], stop: int) -> int:
    """The folders under ``roots`` (each counted; the watcher watches every one), up to
    ``stop`` (enough to tell)."""
    seen = 0
    for root in roots:
        for _ in os.walk(root):  # (symbolic links to folders are not followed)
            seen += 1
            if seen >= stop:
                return seen
    return seen


def watcher_limits(procfs: Path) -> tuple[int | None, int | None]:
    """``max_user_watches`` and ``max_user_instances`` (None: not readable)."""
    def read(name: str) -> int | None:
        try:
            return int((procfs / "sys" / "fs" / "inotify" / name).read_text().strip())
        except (OSError, ValueError):
            return None

    return read("max_user_watches"), read("max_user_instances")


def check_watcher(roots: Sequence[str], platform: str = sys.platform,
                  procfs: Path | None = None) -> Check:
    if not platform.startswith("linux"):
        return ok("watcher", f"{platform}: the watcher has no per-user watch limit here")
    procfs = procfs or Path(os.environ.get("RIFFLUX_PROCFS") or "/proc")
    watches, instances = watcher_limits(procfs)
    if watches is None:
        return note("watcher", f"cannot read {procfs}/sys/fs/inotify/max_user_watches: the "
                    "watcher's limit is unknown")
    folders = count_folders(roots, stop=watches + 1)
    raise_it = (f"sudo sysctl fs.inotify.max_user_watches={SUGGESTED_WATCHES} (now), and "
                f"echo fs.inotify.max_user_watches={SUGGESTED_WATCHES} | sudo tee "
                "/etc/sysctl.d/90-rifflux.conf (after a restart too)")
    data = {"max_user_watches": watches, "max_user_instances": instances, "folders": folders}
    if folders > watches * _TOO_CLOSE:
        return attention(
            "watcher", f"the indexed folders hold {folders:,}{'+' if folders > watches else ''}"
            f" folders and inotify allows {watches:,} watches per user: a watcher "
            "(rifflux watch, serve or mcp --watch) misses changes or fails to start",
            fix=raise_it, **data)
    if instances is not None and instances < 8:
        return attention("watcher", f"inotify allows {instances} watchers per user: each "
                         "process that watches takes one", fix=(
                             "sudo sysctl fs.inotify.max_user_instances=128"), **data)
    return ok("watcher", f"{count(folders, 'folder')} to watch, inotify allows {watches:,} "
              "watches per user", **data)


def check_disk(db: object) -> Check:
    if not isinstance(db, Path):
        return ok("disk", "the index is in PostgreSQL: its server's disk is its own")
    db = db.expanduser().absolute()
    folder = db.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    usage = shutil.disk_usage(folder)
    size = sum(Path(f"{db}{suffix}").stat().st_size for suffix in ("", "-wal")
               if Path(f"{db}{suffix}").exists())
    free = usage.free
    summary = (f"{_gib(free)} free on the disk of {folder} (the index takes "
               f"{_gib(size)})")
    data = {"free_bytes": free, "index_bytes": size}
    if free < max(_LOW_DISK, size):
        return attention("disk", summary, "indexing stops when the disk is full, and the "
                         "index may need as much again to rewrite itself",
                         fix=f"free space on that disk (at least {_gib(max(_LOW_DISK, size))}"
                             "), or move the index elsewhere with --db", **data)
    return ok("disk", summary, **data)


def _gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB" if n >= 2**30 else f"{n / 2**20:,.1f} MiB"
