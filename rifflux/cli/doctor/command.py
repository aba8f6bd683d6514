"""``rifflux doctor``: every check, one report (``--json`` for programs); exit 0 when all
is well, 1 when something needs attention."""

from __future__ import annotations

import argparse
import json
import sys

import anyio

from ...config import Settings
from ...exits import EXIT_FAILURE, EXIT_OK
from ...location import DatabaseUrl
from ..setup.clients import here
from .checks import Check
from .clients import check_clients
from .index import check_index
from .install import check_install
from .model import check_model
from .postgres import check_postgres
from .system import check_disk, check_watcher

__all__ = ["doctor", "report"]

_MARKS = {"ok": "ok", "note": "note", "attention": "FIX"}


async def doctor(args: argparse.Namespace, settings: Settings) -> int:
    checks = await run_checks(settings)
    if args.json:
        sys.stdout.write(json.dumps({
            "ok": not _needs_attention(checks), "checks": [c.as_json() for c in checks]},
            indent=2) + "\n")
    else:
        sys.stdout.write(report(checks))
    return EXIT_FAILURE if _needs_attention(checks) else EXIT_OK


async def run_checks(settings: Settings) -> list[Check]:
    checks = [check_install(), await check_model(settings)]
    reachable = True
    if isinstance(settings.db_path, DatabaseUrl):
        database = await check_postgres(settings.db_path)
        reachable = bool(database.data.get("reachable", True))
        checks.append(database)
    found = await check_index(settings, reachable=reachable)
    checks += found
    roots = [str(c.data["path"]) for c in found  # (those still there: os.walk skips others)
             if c.area == "folder"]
    checks.append(await anyio.to_thread.run_sync(check_watcher, roots))
    checks.append(await anyio.to_thread.run_sync(check_disk, settings.db_path))
    checks += await anyio.to_thread.run_sync(check_clients, here())
    return checks


def _needs_attention(checks: list[Check]) -> bool:
    return any(c.status == "attention" for c in checks)


def report(checks: list[Check]) -> str:
    """The checks as lines a person reads: a mark, the area, what was seen, the fix."""
    wrong = sum(c.status == "attention" for c in checks)
    lines = [f"rifflux doctor: {'all is well' if not wrong else _things(wrong)}", ""]
    width = max(len(c.area) for c in checks)
    pad = " " * (6 + width)
    for check in checks:
        lines.append(f"{_MARKS[check.status]:<4}  {check.area:<{width}}  {check.summary}")
        lines += [f"{pad}  {detail}" for detail in check.details]
        if check.fix and check.status != "ok":
            lines.append(f"{pad}  fix: {check.fix}")
    return "\n".join(lines) + "\n"


def _things(n: int) -> str:
    return f"{n} thing{'s' if n != 1 else ''} need{'s' if n == 1 else ''} attention (FIX)"
