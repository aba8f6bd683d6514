"""The index's store: what the actors need from it, as typed protocols
(``protocols``), and two stores that implement them: ``sqlite`` (one file through
aiosqlite, the embedded default) and ``postgres`` (a database through asyncpg).
``opening.open_store`` opens the one an index's location names.

``store`` may use ``core``; it knows nothing of actors. Every driver error is
translated to a :mod:`rifflux.errors` class in the store, at the boundary.
"""
