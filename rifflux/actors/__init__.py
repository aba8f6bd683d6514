"""anyio actors: each owns one resource and one receive stream, and ends with it.

    watcher --FilesChanged--> debouncer --IndexBatch--> jobs queue --> indexer
    indexer --EmbedWanted--> embedder --VectorsReady--> indexer   (the only writer)
    indexer --IndexChanged--> query  (in-memory vector matrix kept current)
    api ----SearchRequested / ReadRequested--> query

The supervisor makes every stream (all bounded), starts consumers before
producers in one task group, and stops them in order.
"""
