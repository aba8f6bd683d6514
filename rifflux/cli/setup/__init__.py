"""``rifflux setup``: Rifflux added to (or taken out of) an MCP client's configuration.

One module per responsibility: ``clients`` (which clients, where each keeps its file on
Linux, macOS and Windows, and in which shape), ``entry`` (the entry written: this
installation's ``rifflux`` by absolute path, or an HTTP endpoint), ``jsonc`` and
``json_edit`` (JSON and JSONC read with positions and changed as splices), ``document``
(a client's file in its own format, TOML through tomlkit), ``files`` (read, refuse,
write atomically with a backup, diff), ``states`` (what ``--list`` and ``doctor``
report), ``skill`` (the shipped SKILL.md and where it goes) and ``command`` (the
command). Only ``rifflux setup`` and ``rifflux doctor`` import this package.
"""
