"""Rifflux benchmarks: ``python -m benchmarks`` (see ``benchmarks/README.md``).

Layout: ``_cli`` parses options and runs the sections in order; each section is
one module (``_indexing``, ``_freshness``, ``_latency``, ``_mcp``, ``_ripgrep``,
``_scale`` with its worker ``_scale_child``, ``_cranfield``) taking the shared
``State`` of ``_context``; ``_targets`` checks the issue's targets and
``_report`` renders the markdown. Everything goes through rifflux's public API
(``rifflux.Rifflux``), plus the chunker and embedders for the reference rates.
"""

from ._cli import SECTIONS, main

__all__ = ["SECTIONS", "main"]
