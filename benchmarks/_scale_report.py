"""The scale section's report: the curve (a column per size), with each timed figure
beside its floor measured in the same run (issue 39), and where a search's time goes at
the largest size (``steps``: each step's p50 per mode)."""

from __future__ import annotations

from typing import Any

from ._tables import fmt, table


def _rows(p: dict[str, Any]) -> list[Any]:
    """One point of the curve, as a column (what it measured, where it got to)."""
    g, ix, sv = p.get("growth", {}), p.get("index") or {}, p.get("serve") or {}
    fl, ratio = p.get("floor") or {}, p.get("ratios") or {}
    modes = sv.get("modes", {})

    def mode(m: str) -> str:
        return (f"{modes[m]['p50_ms']:.1f} / {modes[m]['p95_ms']:.1f}" if m in modes else "–")

    def times(*keys: str) -> str:
        found = [ratio.get(k) for k in keys]
        return " / ".join(f"{x:.2f}×" for x in found if x is not None) or "–"

    if ix.get("reused_from"):  # (--scale-index: nothing indexed, nothing timed here)
        indexing = [f"not measured: the index of an earlier run, {ix['reused_from']} "
                    f"(read once before serving, as an indexing run leaves it in the page "
                    f"cache: {ix.get('read_first_s', '–')} s)",
                    *["–"] * 5]
    else:
        indexing = [
            f"{ix['lexically_searchable_s']} s" if ix else "–",
            fmt(ix.get("lexical_chunks_per_s")),
            (f"{ix['cpu_lexical_s']} + {ix['cpu_parse_workers_s']} s"
             if "cpu_lexical_s" in ix else "–"),
            f"{ix['fully_embedded_s']} s" if ix else "–",
            (f"{ix['noop_median_s']} s (CPU {fmt(ix.get('noop_cpu_median_s'))} s)"
             if ix else "–"),
            f"{ix['peak_rss_lexical_mib']} / {ix['peak_rss_mib']}" if ix else "–",
        ]
    return [
        f"{ix.get('chunks', 0):,}" if ix else "–",
        f"{g.get('files', 0):,}" + (" (reused)" if g.get("reused") else ""),
        *indexing,
        (f"{sv['lexical_ready_s']} / {sv['semantic_ready_s']} s (CPU "
         f"{fmt(sv.get('semantic_ready_cpu_s'))} s)") if sv else "–",
        (f"{fl['read_s']} s ({fl['read_mib']} MiB); semantic ready "
         f"{times('semantic_ready')}") if fl else "–",
        (f"{fl['scan_p50_ms']:.1f} ms (before / after serving: "
         f"{' / '.join(str(x) for x in fl.get('scan_p50_before_after_ms', []))})")
        if fl else "–",
        (f"{fl['scan_parts_p50_ms']:.1f} ms in {fl.get('scan_parts')} parts"
         if fl.get("scan_parts_p50_ms") else "–"),
        mode("hybrid"), times("hybrid_p50", "hybrid_p95"), mode("lexical"),
        times("lexical_p50"), mode("semantic"),
        (f"{sv['semantic_without_query_embedding']['p50_ms']:.1f} "
         f"({sv['query_embedding']['p50_ms']:.2f})") if sv else "–",
        times("semantic_p50"), times("semantic_p50_over_parts"),
        f"{sv['rss_after_load_mib']} / {sv['peak_rss_lifetime_mib']}" if sv else "–",
        fmt(p.get("db_size_mib")),
        " ".join(p.get("error", "").split()).replace("|", "/")[:300] or "done",
    ]


_MEASURES = [
    "chunks indexed", "files", "lexically searchable", "cold lexical rate (chunks/s)",
    "CPU until lexically searchable: indexing process + parse workers",
    "fully embedded", "no-op reindex (median; its CPU)",
    "indexing peak RSS MiB (lexical / all)",
    "open-to-ready: lexical / semantic (CPU until semantic ready, all threads)",
    "read floor: the compact rows read with sqlite3 (MiB); open-to-ready semantic / it",
    "scan floor: numkong int8 scan of 1,000,000 × 384 on one core, p50",
    "the same scan split across the cores as a search scans, p50",
    "hybrid p50 / p95 ms", "hybrid p50 / p95 over the scan floor",
    "lexical p50 / p95 ms", "lexical p50 over the scan floor",
    "semantic p50 / p95 ms", "semantic p50 without query embedding (embedding) ms",
    "semantic p50 without query embedding, over the scan floor",
    "semantic p50 without query embedding, over the scan split across the cores",
    "serving RSS MiB (after load / peak)", "database MiB", "outcome",
]


def _steps(size: str, point: dict[str, Any]) -> list[str]:
    """Each step's p50 (and mean) per mode at one size, as the searches timed them
    (``rifflux.core.steps``): a hybrid search's branches run side by side, so their
    steps add up to more than the branches' wall time."""
    found = (point.get("serve") or {}).get("steps") or {}
    if not found:
        return []
    rows = []
    for mode, steps in found.items():
        rows += [[mode, step, f"{t['p50_ms']:.2f}", f"{t['mean_ms']:.2f}"]
                 for step, t in steps.items()]
    head = [f"Where a search's time goes at {int(size):,} chunks (top_k 10; a step's p50 "
            "and mean ms over the mode's queries; in hybrid, `lexical` and the semantic "
            "steps up to `ties by path` run side by side inside `branches`):", ""]
    return head + table(["mode", "step", "p50 ms", "mean ms"], rows)


def report(s: dict[str, Any], charts: list[tuple[str, str]]) -> list[str]:
    points = s.get("points", {})
    sizes = sorted(points, key=int)
    columns = [_rows(points[size]) for size in sizes]
    rows = [[measure, *(col[i] for col in columns)] for i, measure in enumerate(_MEASURES)]
    head = [f"### Scale curve ({s.get('backend')} vectors; each size grown, indexed in one "
            "process, served from another)", ""]
    body = table(["measure", *(f"{int(size):,} aimed" for size in sizes)], rows)
    drawn = [f"![{title}]({name})" for title, name in charts]
    steps = _steps(sizes[-1], points[sizes[-1]]) if sizes else []
    return head + body + steps + ([*drawn, ""] if drawn else [])
