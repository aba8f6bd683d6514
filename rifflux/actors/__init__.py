"""anyio actors: each owns its state and one inbox (a union of messages), and ends
with it. ``supervisor`` wires them:

    watcher -> debouncer -> feeder -> JobQueue --JobsQueued--> indexer
    model loader --ModelLoaded--> indexer --ModelAdopted / EmbedWanted--> embedder
    embedder's timer --BackoffEnded--> embedder (an embedding server asked again)
    embedder --VectorsEmbedded--> indexer (the only writer)
    indexer --IndexChanged / VectorsReset--> query <--SearchRequested / ChunkRequested ...-- api
    timer --Ticked--> indexer (it looks at the change log: other processes' commits)
    heartbeat: this process's row in ``processes``, on a connection of its own

Each request to the query actor (a search, or one of the reads: chunk, file, lines,
links, neighbours, tags, counts, roots, root counts, processes) is a message of its
own with a typed reply. Every buffer is bounded. The facade holds one handle
(``service.Service``), and a ``jobs.JobHandle`` for each job it submits: ``Job``
itself is private to the actors.
"""
