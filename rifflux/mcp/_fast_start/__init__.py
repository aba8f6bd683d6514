"""The fast start of ``rifflux mcp``: the handshake answered before the MCP SDK loads.

Kept apart from the server because it depends on the SDK's private attributes
(through ``rifflux.mcp.sdk``) and on what it answers byte for byte: ``front``
(standard library only) answers ``initialize``, ``tools/list`` and ``ping`` from a
snapshot (``handshake.json``, or a cache made at run time) while the SDK imports;
``handoff`` hands the connection to the SDK server and keeps the snapshot
current. Nothing is imported here: ``front`` must load within milliseconds.
"""
