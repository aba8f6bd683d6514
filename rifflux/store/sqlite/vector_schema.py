"""The vectors' tables: each text's float32 vector of a model, and the same vector as
the in-memory matrix holds it (``core/codes.py``: its float32 scale, then its int8
codes; 388 bytes at 384 dimensions), written with it so that a load reads those in
their order and converts nothing: at a million vectors, reading 1.5 GB of float32 in
the chunks' order and converting it took 5.5 s, reading the compact rows 1.9 s
(``python -m benchmarks --sections scale``). A vector stored before ``embedding_codes``
existed has no compact row: a load converts its float32 vector instead, and the writer
fills them in the background (``codes_fill``). Created with the other tables when a
writer opens the index: nothing to upgrade.
"""

#: The ``meta`` key set to ``complete`` once every vector has its compact row
#: (``codes_fill``).
CODES_MARK = "vector_codes"

VECTORS_SCHEMA = f"""
-- A rowid table: the 1.5 KB vectors live in the table's pages, so the index that
-- answers "has this text a vector?" stays small and fast.
CREATE TABLE IF NOT EXISTS embeddings(
    id INTEGER PRIMARY KEY,
    content_hash TEXT NOT NULL,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    UNIQUE(content_hash, model)
);
CREATE TABLE IF NOT EXISTS embedding_codes(
    id INTEGER PRIMARY KEY,  -- the vector's row in embeddings
    model TEXT NOT NULL,
    codes BLOB NOT NULL
);
CREATE TRIGGER IF NOT EXISTS embeddings_ad AFTER DELETE ON embeddings BEGIN
    DELETE FROM embedding_codes WHERE id = old.id;
END;
-- nothing for codes_fill.py to fill in an index made with the table
INSERT OR IGNORE INTO meta(key, value) SELECT '{CODES_MARK}', 'complete'
WHERE NOT EXISTS (SELECT 1 FROM embeddings);
"""
