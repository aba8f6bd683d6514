"""The startup section's targets (issue 27, and issue 38's one-shot lexical search: at
most 4x its floor, at most 0.8x qmd's ``qmd search`` where qmd is installed), each
beside the figure of the same run it is measured against."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ._targets import Results, Target, _dig


def _startup(*keys: str, scale: float = 1000.0) -> Callable[[Results], float | None]:
    def value(r: Results) -> float | None:
        found = _dig(r, "startup", *keys)
        return None if found is None else round(float(found) * scale, 1)
    return value


def _startup_floor(*keys: str) -> Callable[[Results], str]:
    def note(r: Results) -> str:
        floor = _dig(r, "startup", "floors", *keys)
        return "" if floor is None else f"floor in this run: {float(floor) * 1000:,.0f} ms"
    return note


def _versus(other: str, how: str = "median_s") -> Callable[[Results], float | None]:
    """The one-shot lexical search's median over ``other``'s, taking turns with it (None:
    ``other`` was not run)."""
    def value(r: Results) -> float | None:
        ours, theirs = (_dig(r, "startup", "versus", name, how) for name in ("rifflux", other))
        return None if not ours or not theirs else round(float(ours) / float(theirs), 2)
    return value


def _versus_note(other: str) -> Callable[[Results], str]:
    def note(r: Results) -> str:
        v = _dig(r, "startup", "versus") or {}
        if other not in v:
            return str(v.get("qmd_not_run", ""))
        ours, theirs = v["rifflux"], v[other]
        name = (v.get("qmd_version") or "qmd") if other == "qmd" else "the floor"
        return (f"{ours['median_s'] * 1000:,.0f} ms vs {name} {theirs['median_s'] * 1000:,.0f}"
                f" ms (CPU x{_versus(other, 'cpu_median_s')(r)}), {v['runs']} rounds taking "
                "turns")
    return note


STARTUP_TARGETS: tuple[Target, ...] = (
    Target("startup: import rifflux (median)", "<=", 150, " ms",
           _startup("import_rifflux", "median_s"), _startup_floor("python_s", "median_s")),
    Target("startup: rifflux --help (median)", "<=", 150, " ms",
           _startup("help", "median_s"), _startup_floor("python_s", "median_s")),
    Target("startup: rifflux search --mode lexical, one-shot (median)", "<=", 250, " ms",
           _startup("lexical_cli", "median_s"), _startup_floor("sqlite_fts_s", "median_s")),
    Target("startup: rifflux search --mode lexical, one-shot / its floor (medians)", "<=", 4,
           "x", _versus("floor"), _versus_note("floor")),
    Target("startup: rifflux search --mode lexical / qmd search, one-shot (medians)", "<=",
           0.8, "x", _versus("qmd"), _versus_note("qmd")),
    Target("startup: rifflux search --mode lexical, peak RSS", "<=", 100, " MiB",
           _startup("lexical_cli", "peak_rss_mib", scale=1.0)),
    Target("startup: rifflux search hybrid, one-shot, no server (median)", "<=", 1000, " ms",
           _startup("hybrid_cli", "median_s"), _startup_floor("model", "total_s")),
    Target("startup: rifflux search hybrid, a server running (median)", "<=", 150, " ms",
           _startup("hybrid_cli_server", "median_s"), _startup_floor("python_s", "median_s")),
    Target("startup: rifflux mcp first lexical call after initialize", "<=", 100, " ms",
           _startup("mcp", "first_lexical_s"),
           _startup_floor("import_library_s", "median_s")),
    Target("startup: rifflux mcp first hybrid call", "<=", 1000, " ms",
           _startup("mcp", "first_hybrid_s"), _startup_floor("model", "total_s")),
    Target("startup: rifflux mcp lexical p50 while the model loads / warm p50", "<=", 2, "x",
           _startup("mcp", "during_load_vs_warm", scale=1.0),
           lambda r: f"{_dig(r, 'startup', 'mcp', 'lexical_during_load_calls')} calls during "
                     "the load"),
    Target("startup: library first lexical search after open", "<=", 50, " ms",
           _startup("library", "first_lexical_s"), _startup_floor("sqlite_fts_s", "median_s")),
)
#: (FAIL with why when the startup section failed, never pass)
STARTUP_TARGETS = tuple(replace(t, section="startup") for t in STARTUP_TARGETS)
