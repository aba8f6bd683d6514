"""The snapshot the front answers the handshake from: what this SDK and these tools answer
to ``initialize``, ``tools/list`` and ``ping`` at every handshake protocol version, for
one key (the versions of Rifflux, the SDK and pydantic, the tools' source, and whether
the server writes notes). It is shipped as seeds (``handshake.json``,
``handshake-writes.json``) and, for any other key, captured at run time by
``handoff.refresh_snapshot`` and cached. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["SEED", "SEED_WRITES", "answer", "cache_path", "load_snapshot", "negotiate",
           "snapshot_key", "tool_schema"]

SEED = Path(__file__).with_name("handshake.json")
#: The server with a writable folder lists the note tools that write: its own snapshot.
SEED_WRITES = Path(__file__).with_name("handshake-writes.json")


#: The modules whose source defines what ``initialize`` and ``tools/list`` answer (in
#: ``rifflux.mcp``: the tools, the instructions, the capabilities resources and prompts
#: give).
_TOOL_SOURCES = ("server.py", "tools.py", "params.py", "schemas.py", "note_tools.py",
                 "instructions.py", "resources.py", "prompts.py", "../limits.py")

#: Distributions whose code shapes the SDK's answers (dist-info spelling).
_DISTRIBUTIONS = ("rifflux", "mcp", "mcp_types", "pydantic", "pydantic_core")


def snapshot_key(writes: bool = False) -> dict[str, str]:
    """What a snapshot is valid for: the versions of Rifflux, the SDK and pydantic, the
    tool definitions' source (so an edited checkout never gets a stale answer), and
    whether the server writes notes (``writes``: it then lists more tools).

    Read from the dist-info folder names on ``sys.path`` (as importlib.metadata
    does, without its 50 ms of imports); a distribution not found is "unknown".
    """
    key = dict.fromkeys(_DISTRIBUTIONS, "unknown")
    seen: set[str] = set()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if not name.endswith(".dist-info"):
                continue
            dist, _, version = name[: -len(".dist-info")].partition("-")
            dist = dist.lower().replace("-", "_").replace(".", "_")
            if dist in key and dist not in seen:  # the first on sys.path wins, as for imports
                seen.add(dist)
                key[dist] = version
    try:
        digest = hashlib.sha256()
        for name in _TOOL_SOURCES:
            digest.update((Path(__file__).parent.parent / name).read_bytes())
        key["tools"] = digest.hexdigest()[:16]
    except OSError:
        key["tools"] = "unknown"
    key["writes"] = "yes" if writes else "no"
    return key


def cache_path(key: dict[str, str]) -> Path:
    """Where a snapshot captured at run time is kept, one file per key."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return Path(base) / "rifflux" / f"mcp-handshake-{digest}.json"


def load_snapshot(key: dict[str, str] | None = None, *,
                  writes: bool = False) -> dict[str, Any] | None:
    """The handshake answers for this key (by default, of a server that writes notes or
    not): the run-time cache, else the shipped seed for the key's kind of server. A file
    made for another key, incomplete or unreadable, is ignored (None: the SDK answers
    everything itself)."""
    key = key or snapshot_key(writes)
    seed = SEED_WRITES if key.get("writes") == "yes" else SEED
    for path in (cache_path(key), seed):
        try:
            snapshot = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(snapshot, dict) and _usable(snapshot, key):
            return snapshot
    return None


def _usable(snapshot: dict[str, Any], key: dict[str, str]) -> bool:
    """Made for this key, with every answer the front may need."""
    if "unknown" in key.values() or snapshot.get("key") != key or "ping" not in snapshot:
        return False
    handshake, results = snapshot.get("handshake_versions"), snapshot.get("results")
    if not isinstance(handshake, list) or not handshake or not isinstance(results, dict):
        return False
    needed = {"initialize", "tools/list"}
    return all(isinstance(results.get(v), dict) and needed <= results[v].keys()
               for v in handshake)


def answer(snapshot: dict[str, Any], method: str, version: str | None) -> Any:
    """The snapshot's result for ``method`` at a negotiated protocol ``version``."""
    if method == "ping":
        return snapshot["ping"]
    return snapshot["results"][version][method]


def negotiate(snapshot: dict[str, Any], requested: object) -> str:
    """The protocol version the SDK picks: the client's if it knows it, else its latest."""
    versions: list[str] = snapshot["handshake_versions"]
    return requested if isinstance(requested, str) and requested in versions else versions[-1]


def tool_schema(snapshot: dict[str, Any], version: str, name: str) -> dict[str, Any] | None:
    """The input schema ``tools/list`` publishes for the tool ``name`` at ``version``, as
    the client was given it (None: no such tool)."""
    tools = snapshot["results"][version]["tools/list"].get("tools", [])
    found = next((t.get("inputSchema") for t in tools if t.get("name") == name), None)
    return found if isinstance(found, dict) else None
