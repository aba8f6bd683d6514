"""A PostgreSQL index: its server reached, and the extensions Rifflux uses (pgvector,
needed; pg_textsearch, wanted, and preloaded)."""

from __future__ import annotations

from ...location import DatabaseUrl
from .checks import Check, attention, note, ok

__all__ = ["check_postgres"]

#: How long the server has to answer.
_SECONDS = 5.0


async def check_postgres(where: DatabaseUrl) -> Check:
    from ...errors import RiffluxError
    from ...store.postgres.connection import close, connect

    try:
        conn = await connect(where, seconds=_SECONDS, vectors=False)
    except RiffluxError as exc:
        return attention("postgresql", f"{where.redacted} cannot be reached: {exc}",
                         fix="start the server, or check the URL's host, port, user and "
                             "database (pg_isready -h HOST -p PORT tells whether it answers)",
                         reachable=False)
    try:
        rows = await conn.fetch(
            "SELECT name, installed_version, default_version FROM pg_available_extensions "
            "WHERE name IN ('vector', 'pg_textsearch')")
        preload = str(await conn.fetchval("SELECT current_setting('shared_preload_libraries')"))
        version = str(await conn.fetchval("SHOW server_version"))
    except Exception as exc:  # (whatever the server refuses is what this check reports)
        return attention("postgresql", f"{where.redacted} answers but refuses a look at its "
                         f"extensions ({type(exc).__name__}: {exc})",
                         fix="connect as a role that may read pg_available_extensions")
    finally:
        await close(conn)
    available = {str(r["name"]): (r["installed_version"], r["default_version"]) for r in rows}
    summary = f"{where.redacted} answers (PostgreSQL {version})"
    data = {"reachable": True, "server_version": version,
            "extensions": {k: v[0] for k, v in available.items()}}
    if "vector" not in available:
        return attention("postgresql", summary, "pgvector is not installed on the server",
                         fix="install pgvector 0.8 or later on the server (e.g. the "
                             "postgresql-17-pgvector package); the index needs it", **data)
    if "pg_textsearch" not in available or "pg_textsearch" not in preload:
        why = ("is not installed" if "pg_textsearch" not in available
               else "is not in shared_preload_libraries")
        return note("postgresql", summary, f"pgvector {available['vector'][0] or 'available'};"
                    f" pg_textsearch {why}: lexical search ranks by ts_rank_cd, not BM25",
                    fix="install pg_textsearch, add it to shared_preload_libraries and "
                        "restart the server", **data)
    return ok("postgresql", summary, "pgvector and pg_textsearch (preloaded) are there",
              **data)
