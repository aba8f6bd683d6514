"""Pure, synchronous building blocks: no event loop, no threads, no scheduling.

Everything in here can be called from a test or a worker thread as plain
functions: chunking markdown, turning user text into FTS5 queries, fusing ranked
lists, scoring vectors and embedding text. The packages above (``store``,
``actors``, the surfaces) import from here; nothing here imports from them.
"""
