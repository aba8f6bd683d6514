"""The index's store: what the actors need from it, as typed protocols
(``protocols``), and two stores that implement them: ``sqlite`` (one file through
aiosqlite, the embedded default) and ``postgres`` (a database through asyncpg).
``opening.open_store`` opens the one an index's location names. What the two share
is written once here, on what each supplies (``statements``: its spellings, and its
connection or pool running the shared statements): the roots' cache and rules
(``roots``), what reads return (``records``, ``link_records``), the counts and lists
(``listings``), and which links a change resolves again (``relinking``).

``store`` may use ``core``; it knows nothing of actors. Every driver error is
translated to a :mod:`rifflux.errors` class in the store, at the boundary.
"""
