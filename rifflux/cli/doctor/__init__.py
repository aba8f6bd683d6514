"""``rifflux doctor``: everything Rifflux needs, checked and explained, each problem with
its fix. One module per thing checked: ``install`` (version, Python, packages),
``model`` (it loads, and how fast it embeds here), ``index`` (it opens, its integrity,
counts, pending vectors, folders, a server on it), ``system`` (the watcher's inotify
limits, disk space beside the index), ``postgres`` (a PostgreSQL URL reached, its
extensions) and ``clients`` (each MCP client's configuration, as ``rifflux setup
--list`` sees it); ``checks`` holds what a check answers, ``command`` runs them and
prints the report. Only ``rifflux doctor`` imports this package. It never changes
anything: the index is opened read-only, a damaged one is not moved aside.
"""
