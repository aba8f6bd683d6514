"""anyio actors: each owns its state and one inbox (a union of messages), and ends
with it. ``supervisor`` wires them:

    watcher -> debouncer -> feeder -> JobQueue --JobsQueued--> indexer
    model loader --ModelLoaded--> indexer --ModelAdopted / EmbedWanted--> embedder
    embedder --VectorsEmbedded--> indexer (the only writer)
    indexer --IndexChanged / VectorsReset--> query <--SearchRequested / ReadRequested-- api

Every buffer is bounded. The facade holds one handle (``service.Service``).
"""
