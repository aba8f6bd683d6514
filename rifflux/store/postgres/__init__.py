"""The PostgreSQL store: the index in a database, through asyncpg, searched inside the
database (BM25 by ``pg_textsearch``, nearest vectors by a pgvector HNSW index).

Imported only when the index's location is a ``postgresql://`` URL. Every asyncpg
error is translated to a :mod:`rifflux.errors` class here, at the boundary
(``connection.mapped_errors``).
"""
