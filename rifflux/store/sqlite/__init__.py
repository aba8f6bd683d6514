"""The SQLite store: one index file through aiosqlite (the embedded default).

Every sqlite3 error is translated to a :mod:`rifflux.errors` class here, at the
boundary (``sql.mapped_errors``).
"""
