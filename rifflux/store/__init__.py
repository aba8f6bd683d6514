"""SQLite through aiosqlite: the schema, the writer's statements and the readers'.

``store`` may use ``core``; it knows nothing of actors. Every sqlite3 error is
translated to a :mod:`rifflux.errors` class here, at the boundary.
"""
