"""The query side of an index, with no actors and no event loop of its own: what a
search is asked (``asked``: mode, ``top_k`` and the answer's shape checked once, and
what it runs, as ``explain`` reports it), its ranking (``ranking``: the store's legs
side by side, fused, cut per file, turned into results), and the reads that need the
catalog of files (``reads``: a file by its path, lines from disk, links, neighbours,
tags, the files); ``together``: calls side by side that fail as one alone would (the
history's searches use it too).

``query`` may use ``core`` and ``store``; the query actor runs it, and so does a
one-shot read in the calling thread (``rifflux.direct``). Nothing is imported here:
each module is imported by name.
"""
