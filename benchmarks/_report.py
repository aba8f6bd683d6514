"""The run's JSON -> a markdown report (targets first, then one table per section)."""

from __future__ import annotations

import os
from typing import Any

from ._formats_report import report as formats_report
from ._memory import render_memory
from ._postgres import report as postgres_report
from ._vectors import report as vectors_report


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) < 1 else f"{value:,.{max(digits - 2, 1)}f}"
    return str(value)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    return out + [""]


def _targets(targets: list[dict[str, Any]]) -> list[str]:
    rows = [[t["name"], t["target"],
             "–" if t["measured"] is None else f"{_fmt(t['measured'], 4)}{t['unit']}",
             t["status"], t["note"]] for t in targets]
    return _table(["target", "goal", "measured", "status", "note"], rows)


def _cold(c: dict[str, Any]) -> list[str]:
    ref = c["reference"]
    rows = [
        ["files / chunks / embedded texts",
         f"{c['files']} / {c['chunks']} / {c['embedded_texts']}"],
        ["open (model loads in background)", f"{c['open_s']} s"],
        ["lexically searchable", f"{c['lexically_searchable_s']} s"],
        ["fully embedded", f"{c['fully_embedded_s']} s"],
        ["indexing rate (chunks / searchable time)", f"{c['index_chunks_per_s']} chunks/s"],
        ["embedding phase rate", f"{c['embed_texts_per_s']} texts/s"],
        [f"raw {ref['backend']} rate ({ref['sample']} texts, batches of {ref['batch']})",
         f"{ref['texts_per_s']} texts/s"],
        ["pipeline / raw", f"{c['pipeline_vs_raw']}x"],
        ["end to end (texts / fully embedded time) / raw", f"{c['end_to_end_vs_raw']}x"],
    ]
    return [f"### Cold full index ({c['backend']}: {c['model']})", ""] + _table(
        ["measure", "value"], rows)


def _noop(n: dict[str, Any]) -> list[str]:
    rows = [["no-op reindex, median", f"{n['median_s']} s"],
            ["no-op reindex, min", f"{n['min_s']} s"],
            ["runs", ", ".join(str(r) for r in n["runs_s"])],
            ["files re-indexed by no-op runs (expect 0)", n["files_reindexed"]],
            ["forced full reindex (vectors reused)", f"{n['forced_reindex_s']} s"]]
    return ["### Reindex", ""] + _table(["measure", "value"], rows)


def _watch(w: dict[str, Any]) -> list[str]:
    rows = [["edit -> lexical hit", _fmt(w["lexical_median_s"]), "s"],
            ["edit -> hybrid hit with semantic_rank", _fmt(w["semantic_median_s"]), "s"],
            ["delete -> gone from lexical", _fmt(w["delete_median_s"]), "s"]]
    head = [f"### Edit to searchable through the watcher ({w['backend']}, "
            f"median of {w['repetitions']}, {w['timeouts']} timeouts)", ""]
    return head + _table(["step", "median", "unit"], rows)


def _processes(p: dict[str, Any]) -> list[str]:
    one, three = p["one"], p["three"]
    rows = [[f"{run['processes']} process{'es' if run['processes'] > 1 else ''}",
             _fmt(run["cpu_s"]), _fmt(run["indexed_s"]), str(run["embeddings"]),
             "; ".join(",".join(r) for r in run["roles"])] for run in (one, three)]
    head = [f"### Processes on one index ({p['files']} files, {p['backend']}, cold)", ""]
    edits = ["", f"Three processes: edit -> lexical hit in all, median "
             f"{_fmt(p['lexical_median_s'])} s; vector stored -> semantic hit in all, median "
             f"{_fmt(p['semantic_after_vector_median_s'])} s ({len(three['edits'])} edits)."]
    return head + _table(["run", "CPU s", "indexed in s", "vectors", "roles"], rows) + edits


def _serve(s: dict[str, Any]) -> list[str]:
    c1 = s["c1"]
    rows = [[mode, c1["in_process"]["modes"][mode]["p50_ms"],
             c1["in_process"]["modes"][mode]["p95_ms"], c1["http"]["modes"][mode]["p50_ms"],
             c1["http"]["modes"][mode]["p95_ms"]] for mode in ("lexical", "semantic", "hybrid")]
    c8, busy, agents = s["c8"], s["during_reindex"], s["agents"]
    head = [f"### rifflux serve ({s['backend']}, {s['chunks']} chunks)", "",
            f"Concurrency 1, {c1['http']['queries_per_mode']} distinct queries per mode and "
            "surface, in-process and HTTP calls taking turns:", ""]
    lines = head + _table(["mode", "in-process p50 ms", "p95 ms", "HTTP p50 ms", "p95 ms"],
                          rows)
    lines += ["", f"Concurrency {c8['clients']} (hybrid): {c8['requests']} searches, p50 "
              f"{c8['p50_ms']} ms, p95 {c8['p95_ms']} ms, {c8['requests_per_s']} searches/s, "
              f"{c8['errors']} errors.",
              f"During a forced reindex ({busy['reindex_status']}, {busy['reindex_files']} "
              f"files): {busy['requests']} searches by {busy['clients']} clients, "
              f"{busy['searches_during']} of them while it ran, {busy['errors']} errors, p50 "
              f"{busy['p50_ms']} ms, p95 {busy['p95_ms']} ms.",
              f"Server RSS: {s['warm_rss_mib']} MiB warm (after 5 searches per mode), "
              f"{s['end_rss_mib']} MiB after everything, peak {s['peak_rss_mib']} MiB; exit "
              f"code after SIGTERM {s['exit_code']}.",
              f"Five agents: five stdio servers {agents['five_stdio_mib']} MiB "
              f"({', '.join(map(str, agents['stdio_each_mib']))}); one serve "
              f"{agents['serve_mib']} MiB + five bridges "
              f"({', '.join(map(str, agents['bridges_each_mib']))}) = {agents['shared_mib']} "
              f"MiB: {agents['ratio']}x.", ""]
    return lines


def _latency(results: dict[str, Any]) -> list[str]:
    inproc = results.get("latency") or {}
    mcp = results.get("mcp") or {}
    rg = results.get("ripgrep") or {}
    rows = []
    for mode in ("lexical", "semantic", "hybrid"):
        ip = inproc.get("modes", {}).get(mode, {})
        mc = mcp.get("modes", {}).get(mode, {})
        rq = rg.get("by_query_list", {}).get(mode, {})
        ratio = rg.get("rifflux_over_rg_p50", {}).get(mode)
        rows.append([mode, ip.get("p50_ms"), ip.get("p95_ms"), mc.get("p50_ms"),
                     mc.get("p95_ms"), rq.get("p50_ms"), ratio])
    n = inproc.get("queries_per_mode") or mcp.get("queries_per_mode")
    head = [f"### Query latency, top_k=10, {n} distinct queries per mode, each timed once "
            f"({inproc.get('backend', '?')}, {inproc.get('chunks', '?')} chunks)", ""]
    table = _table(["mode", "in-process p50 ms", "p95 ms", "MCP stdio p50 ms", "p95 ms",
                    "rg p50 ms (same queries)", "rifflux / rg"], rows)
    note = []
    if mcp.get("handshake"):
        hs = mcp["handshake"]
        note += [f"MCP handshake (spawn to `tools/list` answered, cold server, median of "
                 f"{len(hs['runs'])}): {hs['median_s']} s; first `search_rifflux` answered "
                 f"after {hs['first_search_median_s']} s.", ""]
    if mcp.get("answer_chars"):
        sizes = mcp["answer_chars"]
        note += [f"A top-10 hybrid `search_rifflux` answer, as text: median "
                 f"{sizes['full']['median']} characters (max {sizes['full']['max']}) with whole "
                 f"contents, {sizes['snippet']['median']} (max {sizes['snippet']['max']}) with "
                 f"`content='snippet'`, {sizes['snippet'].get('over_4000', '?')} of "
                 f"{sizes['snippet']['queries']} over 4,000 "
                 f"({sizes['snippet'].get('over_4000_at_narrowest', '?')} of them with every "
                 "snippet at its narrowest, 80 characters). The fields SPEC requires of "
                 "every answer and hit "
                 f"(`chunk_id`, `path`, `heading_path`, `chunk_index`, `score_breakdown`) "
                 f"alone take median {sizes['spec_floor']['median']} (max "
                 f"{sizes['spec_floor']['max']}): no first look can be smaller.", ""]
    if rg:
        note += [f"ripgrep: {rg['version']}, one whole process per query; all queries "
                f"p50 {rg['all']['p50_ms']} ms, p95 {rg['all']['p95_ms']} ms.", ""]
    return head + table + note


def _filters(f: dict[str, Any]) -> list[str]:
    labels = {"unfiltered": "unfiltered",
              "folder": f"folder: paths={','.join(f['folder']['paths'])} "
                        f"({f['folder']['files']} files)",
              "tag": f"tag: tags=[{f['tag']['tag']}] ({f['tag']['files']} files)"}
    rows = [[labels[k], m["p50_ms"], m["p95_ms"], f["ratio_p50"].get(k, 1.0),
             f["ratio_p95"].get(k, 1.0), m["mean_results"], m["empty_results"],
             m["results_not_matching"]] for k, m in f["kinds"].items()]
    head = [f"### Filtered hybrid search, top_k={f['top_k']}, {f['queries']} queries, each "
            f"searched three ways, interleaved ({f['backend']}, {f['chunks']} chunks, "
            f"{f['files']} files)", ""]
    table = _table(["search", "p50 ms", "p95 ms", "p50 / unfiltered", "p95 / unfiltered",
                    "mean results", "empty", "results not matching the filter"], rows)
    same = ("the latency section's hybrid queries" if f["same_queries_as_latency"]
            else "the latency section's hybrid list (same seeded helper)")
    note = [f"Queries: {same}. Every filtered result matches its filter: "
            f"{'yes' if f['all_filtered_results_match'] else 'NO'}.", ""]
    return head + table + note


def _links(k: dict[str, Any]) -> list[str]:
    found = k["neighbors_found"]
    rows = [[f"neighbors(depth={k['depth']})", k["neighbors"]["p50_ms"],
             k["neighbors"]["p95_ms"], k["neighbors"]["max_ms"]],
            ["links()", k["links_read"]["p50_ms"], k["links_read"]["p95_ms"],
             k["links_read"]["max_ms"]]]
    head = [f"### Links ({k['notes']} generated notes, {k['links']} links, indexed in "
            f"{k['index_s']} s; {k['calls']} random notes, each call timed once)", ""]
    note = [f"Notes within {k['depth']} links: min {found['min']}, median "
            f"{found['median']}, max {found['max']}.", ""]
    return head + _table(["call", "p50 ms", "p95 ms", "max ms"], rows) + note


def _scale_rows(p: dict[str, Any]) -> list[Any]:
    """One point of the curve, as a column (what it measured, where it got to)."""
    g, ix, sv = p.get("growth", {}), p.get("index") or {}, p.get("serve") or {}
    modes = sv.get("modes", {})

    def mode(m: str) -> str:
        return (f"{modes[m]['p50_ms']:.1f} / {modes[m]['p95_ms']:.1f}" if m in modes else "–")

    return [
        f"{ix.get('chunks', 0):,}" if ix else "–",
        f"{g.get('files', 0):,}" + (" (reused)" if g.get("reused") else ""),
        f"{ix['lexically_searchable_s']} s" if ix else "–",
        _fmt(ix.get("lexical_chunks_per_s")),
        (f"{ix['cpu_lexical_s']} + {ix['cpu_parse_workers_s']} s" if "cpu_lexical_s" in ix
         else "–"),
        f"{ix['fully_embedded_s']} s" if ix else "–",
        (f"{ix['noop_median_s']} s (CPU {_fmt(ix.get('noop_cpu_median_s'))} s)"
         if ix else "–"),
        f"{ix['peak_rss_lexical_mib']} / {ix['peak_rss_mib']}" if ix else "–",
        (f"{sv['lexical_ready_s']} / {sv['semantic_ready_s']} s (CPU "
         f"{_fmt(sv.get('semantic_ready_cpu_s'))} s)") if sv else "–",
        mode("hybrid"), mode("lexical"), mode("semantic"),
        (f"{sv['semantic_without_query_embedding']['p50_ms']:.1f} "
         f"({sv['query_embedding']['p50_ms']:.2f})") if sv else "–",
        f"{sv['rss_after_load_mib']} / {sv['peak_rss_lifetime_mib']}" if sv else "–",
        _fmt(p.get("db_size_mib")),
        " ".join(p.get("error", "").split()).replace("|", "/")[:300] or "done",
    ]


_SCALE_MEASURES = [
    "chunks indexed", "files", "lexically searchable", "cold lexical rate (chunks/s)",
    "CPU until lexically searchable: indexing process + parse workers",
    "fully embedded", "no-op reindex (median; its CPU)",
    "indexing peak RSS MiB (lexical / all)",
    "open-to-ready: lexical / semantic (CPU until semantic ready, all threads)",
    "hybrid p50 / p95 ms", "lexical p50 / p95 ms",
    "semantic p50 / p95 ms", "semantic p50 without query embedding (embedding) ms",
    "serving RSS MiB (after load / peak)", "database MiB", "outcome",
]


def _scale(s: dict[str, Any], charts: list[tuple[str, str]]) -> list[str]:
    points = s.get("points", {})
    sizes = sorted(points, key=int)
    columns = [_scale_rows(points[size]) for size in sizes]
    rows = [[measure, *(col[i] for col in columns)] for i, measure in enumerate(_SCALE_MEASURES)]
    head = [f"### Scale curve ({s.get('backend')} vectors; each size grown, indexed in one "
            "process, served from another)", ""]
    body = _table(["measure", *(f"{int(size):,} aimed" for size in sizes)], rows)
    drawn = [f"![{title}]({name})" for title, name in charts]
    return head + body + ([*drawn, ""] if drawn else [])


def _cranfield(c: dict[str, Any]) -> list[str]:
    rows = [[mode, m.get("ndcg@10"), m.get("mrr@10"), m.get("recall@100"),
             m.get("served_ndcg@10"), m.get("served_mrr@10"), m.get("served_distinct_docs")]
            for mode, m in c["metrics"].items()]
    head = [f"### Cranfield ({c['docs']} docs, {c['chunks']} chunks, {c['queries']} queries, "
            f"{c['backend']}: {c['model']}, indexed in {c['index_s']} s)", ""]
    tail = ["Documents ranked by their best chunk from `top_k=200`, cut to 100. Served: the "
            "`top_k=10` chunks a user gets, as documents (fewer than 10 when chunks of one "
            f"document crowd in). Hybrid nDCG@10 below the better single mode on "
            f"{c['hybrid_below_best_single_queries']} of {c['queries']} queries.", ""]
    header = ["mode", "nDCG@10", "MRR@10", "Recall@100", "served nDCG@10", "served MRR@10",
              "served distinct docs"]
    return head + _table(header, rows) + tail


def _quality(q: dict[str, Any]) -> list[str]:
    """Each collection's table: nDCG@10 and recall@100 per mode and per hybrid rule."""
    out = [f"### Ranking quality (issue 36; the pool: {q['pool']} per branch, or 2 x top_k)",
           ""]
    sets: list[tuple[str, dict[str, Any]]] = []
    for name, c in q["collections"].items():
        if "not_run" in c:
            out += [f"- {name}: not run ({c['not_run']})", ""]
        elif "sets" in c:
            sets += [(f"{name}, {s}", m) for s, m in c["sets"].items()]
        else:
            sets.append((f"{name} ({c['docs']} docs, {c['chunks']} chunks, {c['model']})", c))
    for title, m in sets:
        rows = [[rule, f["ndcg@10"], f["recall@100"]] for rule, f in m["table"].items()]
        queries = next(iter(m["table"].values()))["queries"]
        out += [f"#### {title}: {queries} queries", ""]
        out += _table(["mode / hybrid rule", "nDCG@10", "recall@100"], rows)
        out += [f"The library's hybrid answers equal the default rule's on "
                f"{m['default_agrees']:.0%} of the queries.", ""]
    corpus = q["corpus"]
    rows = [[rule, f["repeated_places"], f["queries_with_repeats"]]
            for rule, f in corpus["rules"].items()]
    out += [f"#### Repeated texts in the served top ten ({corpus['queries']} corpus queries)",
            ""]
    out += _table(["hybrid rule", "places repeating a text above", "queries with any"], rows)
    return out


def _load(avg: list[float]) -> str:
    return " ".join(f"{x:.2f}" for x in avg)


def _startup(s: dict[str, Any]) -> list[str]:
    """Each first-call figure beside the floor under it, measured in the same run."""
    f, m = s["floors"], s["floors"]["model"]
    fts = f["sqlite_fts_s"]["median_s"]
    model = m["total_s"]
    sdk = f["import_mcp_sdk_s"]["median_s"]
    library = f["import_library_s"]["median_s"]

    def ms(seconds: float | None) -> str:
        return "–" if seconds is None else f"{seconds * 1000:,.0f} ms"

    def timed(figure: dict[str, Any]) -> str:  # wall, and CPU where it was measured
        cpu = figure.get("cpu_median_s")
        return ms(figure["median_s"]) + ("" if cpu is None else f" (cpu {ms(cpu)})")

    mcp, lib = s["mcp"], s["library"]
    rows = [
        ["import rifflux", timed(s["import_rifflux"]), f"python -c pass {timed(f['python_s'])}",
         "<= 150 ms"],
        ["rifflux --help", timed(s["help"]), f"python -c pass {timed(f['python_s'])}", "<= 150 ms"],
        ["search --mode lexical, one-shot", timed(s["lexical_cli"]),
         f"python + sqlite3 FTS5 query {timed(f['sqlite_fts_s'])}", "<= 250 ms"],
        ["  its peak RSS", f"{s['lexical_cli']['peak_rss_mib']} MiB",
         f"python + sqlite3 {f['sqlite_fts_s']['peak_rss_mib']} MiB", "<= 100 MiB"],
        *_versus_rows(s.get("versus")),
        ["search (hybrid), one-shot, no server", timed(s["hybrid_cli"]),
         f"model {ms(model)} (numpy {ms(m['import_numpy_s'])}, onnxruntime "
         f"{ms(m['import_onnxruntime_s'])}, tokenizer {ms(m['tokenizer_s'])}, session "
         f"{ms(m['onnx_session_s'])}, first embedding {ms(m['first_embedding_s'])}) + "
         f"lexical one-shot", "<= 1,000 ms"],
        ["  its peak RSS", f"{s['hybrid_cli']['peak_rss_mib']} MiB", "", ""],
        ["search (hybrid), a rifflux serve running", timed(s["hybrid_cli_server"]),
         f"python -c pass {timed(f['python_s'])}", "<= 150 ms"],
        ["rifflux mcp: first lexical call after initialize", ms(mcp["first_lexical_s"]),
         f"python + import of the library {ms(library)} (answered before the MCP SDK, whose "
         f"import takes {ms(sdk)}, has loaded)", "<= 100 ms"],
        ["rifflux mcp: second lexical call", ms(mcp["second_lexical_s"]), "", ""],
        ["rifflux mcp: first hybrid call (after two lexical)", ms(mcp["first_hybrid_s"]),
         f"model {ms(model)}", "<= 1,000 ms"],
        [f"rifflux mcp: lexical p50 while the model loads ({mcp['lexical_during_load_calls']} "
         "calls)", ms(mcp["lexical_during_load_p50_s"]),
         f"warm p50 {ms(mcp['warm_lexical_p50_s'])} (x{mcp['during_load_vs_warm']})",
         "<= 2x warm"],
        ["library: open (async with Rifflux)", ms(lib["open_s"]), "", ""],
        ["library: first lexical search after open", ms(lib["first_lexical_s"]),
         f"sqlite3 FTS5 query, whole process {ms(fts)}", "<= 50 ms"],
        ["library: first hybrid search after it", ms(lib["first_hybrid_s"]),
         f"model {ms(model)}", ""],
    ]
    head = [f"### Startup ({s['backend']} backend; medians of {s['runs']} fresh processes, "
            "floors measured in this run)", ""]
    if "load_before" in s:
        head += [f"Load average {_load(s['load_before'])} at the section's start, "
                 f"{_load(s['load_after'])} at its end, on {os.cpu_count()} CPUs: the wall "
                 "times include waiting for a core; the CPU times (user + system, every "
                 "thread of the process) much less so. The package's bytecode was compiled "
                 "first, as an install does.", ""]
    return head + _table(["figure", "measured", "floor (same run)", "target"], rows)


def _charts(charts: list[tuple[str, str]] | None, section: str) -> list[tuple[str, str]]:
    """The charts of one section (``<stem>-<section>-<name>.png``)."""
    return [c for c in charts or [] if f"-{section}-" in c[1]]


def _versus_rows(v: dict[str, Any] | None) -> list[list[str]]:
    """The one-shot lexical search, its floor and qmd, taking turns (``_qmd.paired``)."""
    if not v:
        return []

    def timed(name: str) -> str:
        return (f"{v[name]['median_s'] * 1000:,.0f} ms (cpu "
                f"{v[name]['cpu_median_s'] * 1000:,.0f} ms)")

    rows = [[f"  taking turns with its floor ({v['runs']} rounds)", timed("rifflux"),
             f"python + sqlite3 FTS5 query {timed('floor')}: x{_ratio(v, 'floor')}",
             "<= 4x the floor"]]
    if "qmd" in v:
        rows.append([f"  and with {v.get('qmd_version') or 'qmd'} `qmd search` (same files)",
                     f"x{_ratio(v, 'qmd')} of qmd's", f"qmd search {timed('qmd')}, peak RSS "
                     f"{v['qmd'].get('peak_rss_mib', '–')} MiB", "<= 0.8x qmd's"])
    else:
        rows.append(["  and with qmd `qmd search`", "not run", v.get("qmd_not_run", ""),
                     "<= 0.8x qmd's"])
    return rows


def _ratio(v: dict[str, Any], other: str) -> str:
    """rifflux's median over ``other``'s, wall and CPU."""
    return (f"{v['rifflux']['median_s'] / v[other]['median_s']:.2f} (cpu x"
            f"{v['rifflux']['cpu_median_s'] / v[other]['cpu_median_s']:.2f})")


def render(run: dict[str, Any], charts: list[tuple[str, str]] | None = None) -> str:
    """The markdown report; ``charts``: (title, file name) of the charts beside it."""
    meta, results = run["meta"], run["results"]
    lines = [f"# Rifflux benchmarks ({'quick smoke run' if meta['quick'] else 'full run'})", ""]
    lines += [f"{meta['started']}, commit `{meta['commit']}`, {meta['cpus']} CPUs, "
              f"load average {meta['load_before']} before / {meta['load_after']} after, "
              f"Python {meta['python']}, backend {meta['backend']} "
              f"(scale: {meta['scale_backend']}), corpus `{meta['corpus']}`.", ""]
    if meta.get("command"):
        lines += [f"Command: `{meta['command']}`", ""]
    if meta["quick"]:
        lines += ["**Quick run: small subsets and hash vectors; the figures are not "
                  "comparable with the targets.**", ""]
    lines += ["## Targets", ""] + _targets(run["targets"])
    lines += ["## Sections", ""]
    renderers = {"cold": _cold, "noop": _noop, "watch": _watch, "filters": _filters,
                 "links": _links, "scale": lambda s: _scale(s, _charts(charts, "scale")),
                 "formats": lambda f: formats_report(f, _charts(charts, "formats")),
                 "cranfield": _cranfield, "processes": _processes, "serve": _serve,
                 "vectors": vectors_report, "memory": render_memory, "startup": _startup,
                 "postgres": postgres_report, "quality": _quality}
    for name in run["order"]:
        if name in ("latency", "mcp", "ripgrep"):
            if name == next(n for n in run["order"] if n in ("latency", "mcp", "ripgrep")):
                lines += _latency(results)
        elif name in results:
            lines += renderers[name](results[name])
    for name, reason in run["skipped"].items():
        lines += [f"- **{name}** skipped: {reason.splitlines()[0]}"]
    for name, error in run["errors"].items():
        lines += [f"- **{name}** FAILED: {error.strip().splitlines()[-1]}"]
    return "\n".join(lines).rstrip() + "\n"
