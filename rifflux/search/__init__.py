"""A search, with no actors and no event loop of its own: what it is asked (``asked``:
mode, ``top_k`` and the answer's shape checked once, and what it runs, as ``explain``
reports it) and its ranking (``ranking``: the store's legs side by side, fused, cut per
file, turned into results).

``search`` may use ``core`` and ``store``; the query actor runs it, and so does a
one-shot read in the calling thread (``rifflux.direct``). Nothing is imported here:
each module is imported by name.
"""
