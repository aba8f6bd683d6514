"""The targets of issue 5 (and of later issues), checked against a run's results.

A target over work that was not done never passes: when its section failed (its corpus
missing, its index short of what it aimed for), or its point of the scale curve did,
it is FAIL with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._memory import lost_or_torn

Results = dict[str, Any]


def _dig(results: Results, *keys: str) -> Any:
    node: Any = results
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _serve_gap(r: Results, stat: str) -> float | None:
    http = _dig(r, "serve", "c1", "http", "modes", "hybrid", stat)
    local = _dig(r, "serve", "c1", "in_process", "modes", "hybrid", stat)
    return None if http is None or local is None else float(http - local)


def _serve_note(r: Results, stat: str) -> str:
    return (f"{_dig(r, 'serve', 'c1', 'http', 'modes', 'hybrid', stat)} ms over HTTP vs "
            f"{_dig(r, 'serve', 'c1', 'in_process', 'modes', 'hybrid', stat)} ms in process, "
            f"{_dig(r, 'serve', 'backend')} backend")


def _hybrid_margin(r: Results) -> float | None:
    m = _dig(r, "cranfield", "metrics")
    if not m:
        return None
    return float(m["hybrid"]["ndcg@10"] - max(m["lexical"]["ndcg@10"], m["semantic"]["ndcg@10"]))


def _gain(r: Results, metric: str) -> float | None:
    table = _dig(r, "quality", "collections", "cranfield", "table")
    if not table:
        return None
    return round(float(table["hybrid: fused, pool, exact copies once, question's language "
                             "preferred (default)"][metric]
                       - table["hybrid: rrf, 2 x top_k (before)"][metric]), 4)


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    op: str  # "<=", ">=" or ">"
    threshold: float
    unit: str
    value: Callable[[Results], float | None]
    note: Callable[[Results], str] = lambda r: ""
    #: The section whose work the figure measures (results[section]).
    section: str = ""
    #: Why the work behind the figure was not done (None: it was), from the results and
    #: the failed sections' errors; by default, why its section failed.
    invalid: Callable[[Results, dict[str, str]], str | None] | None = None

    def check(self, results: Results, errors: dict[str, str] | None = None) -> dict[str, Any]:
        """The figure against its goal. When the work behind it was not done (its section
        failed, or its point of the curve did), it is FAIL with why, never pass."""
        errors = errors or {}
        reason = (self.invalid(results, errors) if self.invalid is not None
                  else failure(errors, self.section))
        value = None if reason else self.value(results)
        if reason:
            status = "FAIL"
        elif value is None:
            status = "not run"
        elif self.op == "<=":
            status = "pass" if value <= self.threshold else "FAIL"
        elif self.op == ">=":
            status = "pass" if value >= self.threshold else "FAIL"
        else:
            status = "pass" if value > self.threshold else "FAIL"
        return {
            "name": self.name,
            "target": f"{self.op} {self.threshold:g}{self.unit}",
            "measured": None if value is None else round(value, 4),
            "unit": self.unit,
            "status": status,
            "note": reason or (self.note(results) if value is not None else ""),
        }


def failure(errors: dict[str, str], section: str) -> str | None:
    """Why ``section`` failed, in one line (None: it did not)."""
    error = errors.get(section)
    return error.strip().splitlines()[-1] if error else None


def _backend_note(section: str, *path: str) -> Callable[[Results], str]:
    def note(r: Results) -> str:
        backend = _dig(r, section, *path)
        return f"{backend} backend" if backend else ""
    return note


def _point(r: Results, size: int) -> dict[str, Any] | None:
    point = _dig(r, "scale", "points", str(size))
    return point if isinstance(point, dict) else None


def _at(size: int, name: str, op: str, threshold: float, unit: str,
        figure: Callable[[dict[str, Any]], float | None]) -> Target:
    """A target on the ``size``-chunk point of the scale curve: FAIL with why when that
    point failed, "not run" when the curve did not include it."""
    def value(r: Results) -> float | None:
        point = _point(r, size)
        return None if point is None or point.get("error") else figure(point)

    def note(r: Results) -> str:
        point = _point(r, size) or {}
        return (f"{_dig(point, 'index', 'chunks')} chunks, "
                f"{_dig(point, 'index', 'backend')} vectors")

    def invalid(r: Results, errors: dict[str, str]) -> str | None:
        point = _point(r, size)
        if point is not None:
            return point.get("error")
        aimed = _dig(r, "scale", "sizes")  # (None: the section failed before saying)
        return failure(errors, "scale") if aimed is None or size in aimed else None

    return Target(f"{name} at {size:,} chunks", op, threshold, unit, value, note,
                  section="scale", invalid=invalid)


def _peak(point: dict[str, Any]) -> float | None:
    """The stricter figure: the larger of the indexing and the serving process's peaks
    (None: the index was reused, its peak not measured)."""
    indexing = point["index"].get("peak_rss_mib")
    if indexing is None:
        return None
    return float(max(indexing, point["serve"]["peak_rss_lifetime_mib"]))


def _ratio(point: dict[str, Any], name: str) -> float | None:
    """A figure of the point over its floor in the same run (None: no floor measured)."""
    found = (point.get("ratios") or {}).get(name)
    return None if found is None else float(found)


#: The sizes the PostgreSQL section's figures beside SQLite's are aimed at: issue 25's
#: 100,000 chunks (its RSS at most half), issue 32's million (a team's index: the
#: latency ratios, its RSS at most a quarter). A run at another size prints them in the
#: section's table, and their targets are "not run".
PG_SIZES = (100_000, 1_000_000)


def _pg_at(size: int, figure: Callable[[Results], Any]) -> Callable[[Results], float | None]:
    """``figure`` of a PostgreSQL run aimed at ``size`` chunks: from that many to the next
    of ``PG_SIZES`` (the grown corpus holds a little more than asked); None otherwise."""
    bigger = [s for s in PG_SIZES if s > size]

    def value(r: Results) -> float | None:
        found, chunks = figure(r), int(_dig(r, "postgres", "chunks") or 0)
        if found is None or chunks < size or (bigger and chunks >= bigger[0]):
            return None
        return float(found)

    return value


def _pg_ratio(mode: str, limit: float) -> Target:
    """PostgreSQL's p50 of ``mode`` beside SQLite's, in the same run, at a million."""
    value = _pg_at(PG_SIZES[1], lambda r: _dig(r, "postgres", "ratios", mode))

    def note(r: Results) -> str:
        timed = f"{mode}_c1"
        return (f"{_dig(r, 'postgres', 'postgres', 'timed', timed, 'p50_ms')} ms vs "
                f"{_dig(r, 'postgres', 'sqlite', 'timed', timed, 'p50_ms')} ms at "
                f"{_dig(r, 'postgres', 'chunks')} chunks")

    return Target(f"PostgreSQL {mode} p50 / SQLite's, concurrency 1, at {PG_SIZES[1]:,} "
                  "chunks", "<=", limit, "x", value, note, section="postgres")


def _pg_rss(size: int, limit: float) -> Target:
    """A PostgreSQL search process's RSS beside SQLite's, in the same run, at ``size``."""
    return Target(
        f"PostgreSQL search process RSS / SQLite's, at {size:,} chunks", "<=", limit, "x",
        _pg_at(size, lambda r: _dig(r, "postgres", "rss_ratio")),
        lambda r: f"{_dig(r, 'postgres', 'postgres', 'rss_after_queries_mib')} MiB vs "
                  f"{_dig(r, 'postgres', 'sqlite', 'rss_after_queries_mib')} MiB at "
                  f"{_dig(r, 'postgres', 'chunks')} chunks", section="postgres")


def _pg_after(what: str) -> Target:
    """The lexical answers after a restart, a crash or a restore: none empty, and once
    the BM25 index is built again, every top 10 as before."""
    def value(r: Results) -> float | None:
        after = _dig(r, "postgres", "durability", what)
        if not after:
            return None
        return float(after["rebuilt_as_before"] - after["empty"])

    def note(r: Results) -> str:
        after = _dig(r, "postgres", "durability", what) or {}
        return (f"first answer in {after.get('first_lexical_answer_s')} s (all 20 in "
                f"{after.get('first_lexical_answers_s')} s), "
                f"{after.get('empty')} empty, {after.get('same_top10')} of 20 as before "
                f"and {after.get('same_as_sqlite')} as SQLite's FTS5 (before: "
                f"{after.get('before_as_sqlite')}) while the BM25 index is rebuilt "
                f"({after.get('rebuild_s')} s)")

    return Target(f"PostgreSQL lexical answers after a {what}: none empty, as before once "
                  "rebuilt (of 20)", ">=", 20, "", value, note, section="postgres")


#: The scale curve's targets: the everyday size, issue 5's 100,000 and issue 24's million.
SCALE_TARGETS: tuple[Target, ...] = (
    _at(10_000, "hybrid p50", "<=", 15, " ms", lambda p: p["serve"]["modes"]["hybrid"]["p50_ms"]),
    _at(100_000, "hybrid p50", "<=", 40, " ms",
        lambda p: p["serve"]["modes"]["hybrid"]["p50_ms"]),
    _at(100_000, "peak RSS (indexing or serving)", "<=", 1024, " MiB", _peak),
    _at(1_000_000, "hybrid p50", "<=", 50, " ms",
        lambda p: p["serve"]["modes"]["hybrid"]["p50_ms"]),
    _at(1_000_000, "hybrid p95", "<=", 150, " ms",
        lambda p: p["serve"]["modes"]["hybrid"]["p95_ms"]),
    _at(1_000_000, "lexical p50", "<=", 20, " ms",
        lambda p: p["serve"]["modes"]["lexical"]["p50_ms"]),
    _at(1_000_000, "semantic p50, query embedding excluded", "<=", 30, " ms",
        lambda p: p["serve"]["semantic_without_query_embedding"]["p50_ms"]),
    # issue 39: over numkong's int8 scan of a million rows on one core, measured in the
    # same run (a machine 1.5-2x slower moves both alike; a search scans on every core:
    # the report gives semantic over that scan too, what is not the scan)
    _at(1_000_000, "semantic p50, query embedding excluded / int8 scan", "<=", 1.5, "x",
        lambda p: _ratio(p, "semantic_p50")),
    _at(1_000_000, "hybrid p50 / int8 scan", "<=", 2.5, "x", lambda p: _ratio(p, "hybrid_p50")),
    _at(1_000_000, "hybrid p95 / int8 scan", "<=", 4, "x", lambda p: _ratio(p, "hybrid_p95")),
    _at(1_000_000, "serving RSS after load", "<=", 1024, " MiB",
        lambda p: p["serve"]["rss_after_load_mib"]),
    _at(1_000_000, "indexing peak RSS", "<=", 1536, " MiB",
        lambda p: p["index"].get("peak_rss_mib")),  # (None: a reused index)
    _at(1_000_000, "open-to-ready, lexical", "<=", 5, " s",
        lambda p: p["serve"]["lexical_ready_s"]),
    _at(1_000_000, "open-to-ready, semantic (every vector in memory)", "<=", 5, " s",
        lambda p: p["serve"]["semantic_ready_s"]),
    _at(1_000_000, "cold lexical indexing rate", ">=", 3000, " chunks/s",
        lambda p: p["index"].get("lexical_chunks_per_s")),
    _at(1_000_000, "no-op reindex (median)", "<=", 3, " s",
        lambda p: p["index"].get("noop_median_s")),
)

TARGETS: tuple[Target, ...] = (
    Target("hybrid p50, in process", "<=", 15, " ms",
           lambda r: _dig(r, "latency", "modes", "hybrid", "p50_ms"),
           _backend_note("latency", "backend"), section="latency"),
    Target("lexical p50, in process", "<=", 2, " ms",
           lambda r: _dig(r, "latency", "modes", "lexical", "p50_ms"), section="latency"),
    Target("semantic p50, in process", "<=", 10, " ms",
           lambda r: _dig(r, "latency", "modes", "semantic", "p50_ms"),
           _backend_note("latency", "backend"), section="latency"),
    Target("folder-filtered hybrid p50 / unfiltered hybrid p50", "<=", 1.2, "x",
           lambda r: _dig(r, "filters", "ratio_p50", "folder"),
           lambda r: f"paths={','.join(_dig(r, 'filters', 'folder', 'paths') or [])}, "
                     f"{_dig(r, 'filters', 'backend')} backend", section="filters"),
    Target("tag-filtered hybrid p50 / unfiltered hybrid p50", "<=", 1.2, "x",
           lambda r: _dig(r, "filters", "ratio_p50", "tag"),
           lambda r: f"tag {_dig(r, 'filters', 'tag', 'tag')} "
                     f"({_dig(r, 'filters', 'tag', 'files')} files), "
                     f"{_dig(r, 'filters', 'backend')} backend", section="filters"),
    Target("neighbors(depth=2) p50, 2,000-note vault", "<=", 5, " ms",
           lambda r: _dig(r, "links", "neighbors", "p50_ms"),
           lambda r: f"{_dig(r, 'links', 'links')} links; notes found: median "
                     f"{_dig(r, 'links', 'neighbors_found', 'median')}, max "
                     f"{_dig(r, 'links', 'neighbors_found', 'max')}", section="links"),
    Target("MCP handshake, cold server (median)", "<=", 1, " s",
           lambda r: _dig(r, "mcp", "handshake", "median_s"),
           lambda r: "first search answered after "
                     f"{_dig(r, 'mcp', 'handshake', 'first_search_median_s')} s",
           section="mcp"),
    Target("MCP top-10 answer with content='snippet' (largest)", "<=", 4000, " chars",
           lambda r: _dig(r, "mcp", "answer_chars", "snippet", "max"),
           lambda r: f"median {_dig(r, 'mcp', 'answer_chars', 'snippet', 'median')}, "
                     f"{_dig(r, 'mcp', 'answer_chars', 'snippet', 'over_4000')} of "
                     f"{_dig(r, 'mcp', 'answer_chars', 'snippet', 'queries')} over; whole "
                     f"contents: median {_dig(r, 'mcp', 'answer_chars', 'full', 'median')}; "
                     "SPEC's required fields alone: median "
                     f"{_dig(r, 'mcp', 'answer_chars', 'spec_floor', 'median')}, max "
                     f"{_dig(r, 'mcp', 'answer_chars', 'spec_floor', 'max')}", section="mcp"),
    Target("no-op reindex (median)", "<=", 0.04, " s",
           lambda r: _dig(r, "noop", "median_s"), section="noop"),
    Target("lexically searchable after cold start", "<=", 3, " s",
           lambda r: _dig(r, "cold", "lexically_searchable_s"), section="cold"),
    Target("embedding pipeline / raw model rate", ">=", 0.9, "x",
           lambda r: _dig(r, "cold", "pipeline_vs_raw"),
           _backend_note("cold", "backend"), section="cold"),
    *SCALE_TARGETS,
    Target("three processes' CPU / one process's, cold index of 100 files", "<=", 1.3, "x",
           lambda r: _dig(r, "processes", "cpu_ratio"),
           lambda r: f"{_dig(r, 'processes', 'three', 'cpu_s')} s vs "
                     f"{_dig(r, 'processes', 'one', 'cpu_s')} s, "
                     f"{_dig(r, 'processes', 'backend')} backend", section="processes"),
    Target("edit -> lexical hit in all three processes (median)", "<=", 0.5, " s",
           lambda r: _dig(r, "processes", "lexical_median_s"), section="processes"),
    Target("vector stored -> semantic hit in all three processes (median)", "<=", 1, " s",
           lambda r: _dig(r, "processes", "semantic_after_vector_median_s"),
           section="processes"),
    Target("serve: HTTP hybrid p50 - in-process p50, concurrency 1", "<=", 3, " ms",
           lambda r: _serve_gap(r, "p50_ms"), lambda r: _serve_note(r, "p50_ms"),
           section="serve"),
    Target("serve: HTTP hybrid p95 - in-process p95, concurrency 1", "<=", 3, " ms",
           lambda r: _serve_gap(r, "p95_ms"), lambda r: _serve_note(r, "p95_ms"),
           section="serve"),
    Target("serve: errors in 8 clients x 50 searches during a reindex", "<=", 0, "",
           lambda r: (_dig(r, "serve", "during_reindex", "errors")
                      if _dig(r, "serve", "during_reindex", "all_during") else None),
           lambda r: f"{_dig(r, 'serve', 'during_reindex', 'searches_during')} of "
                     f"{_dig(r, 'serve', 'during_reindex', 'requests')} searches while the "
                     f"forced reindex ran; p95 {_dig(r, 'serve', 'during_reindex', 'p95_ms')} ms",
           section="serve"),
    Target("serve: one serve + 5 bridges RSS / 5 stdio servers RSS", "<=", 0.4, "x",
           lambda r: _dig(r, "serve", "agents", "ratio"),
           lambda r: f"{_dig(r, 'serve', 'agents', 'shared_mib')} MiB vs "
                     f"{_dig(r, 'serve', 'agents', 'five_stdio_mib')} MiB", section="serve"),
    Target("serve: one warm server's RSS", "<=", 250, " MiB",
           lambda r: _dig(r, "serve", "warm_rss_mib"),
           lambda r: f"{_dig(r, 'serve', 'chunks')} chunks, {_dig(r, 'serve', 'backend')} "
                     f"backend; {_dig(r, 'serve', 'end_rss_mib')} MiB after every search "
                     f"and the reindex, peak {_dig(r, 'serve', 'peak_rss_mib')} MiB",
           section="serve"),
    Target("note write -> lexical hit p50 (100 writes)", "<=", 50, " ms",
           lambda r: _dig(r, "memory", "lexical", "p50_ms"),
           lambda r: f"p95 {_dig(r, 'memory', 'lexical', 'p95_ms')} ms; write -> semantic hit "
                     f"p50 {_dig(r, 'memory', 'semantic', 'p50_ms')} ms "
                     f"({_dig(r, 'memory', 'backend')})", section="memory"),
    Target("concurrent note edits with if_match: torn files", "<=", 0, "",
           lambda r: lost_or_torn(r.get("memory") or {}, "torn_files"),
           lambda r: f"{_dig(r, 'memory', 'concurrent', 'accepted')} edits accepted, "
                     f"{_dig(r, 'memory', 'concurrent', 'conflicts')} conflicts", section="memory"),
    Target("concurrent note edits with if_match: lost updates", "<=", 0, "",
           lambda r: lost_or_torn(r.get("memory") or {}, "lost_updates"),
           lambda r: f"phantom edits {_dig(r, 'memory', 'concurrent', 'phantom_edits')}",
           section="memory"),
    Target("Cranfield hybrid nDCG@10", ">=", 0.45, "",
           lambda r: _dig(r, "cranfield", "metrics", "hybrid", "ndcg@10"),
           _backend_note("cranfield", "backend"), section="cranfield"),
    Target("Cranfield hybrid - best single mode nDCG@10", ">", 0, "",
           _hybrid_margin, section="cranfield"),
    Target("Cranfield hybrid nDCG@10, default rule - the rule before", ">=", 0, "",
           lambda r: _gain(r, "ndcg@10"), section="quality"),
    Target("Cranfield hybrid recall@100, default rule - the rule before", ">=", 0, "",
           lambda r: _gain(r, "recall@100"), section="quality"),
    Target("the library's hybrid answers are the default rule's, Cranfield", ">=", 1, "",
           lambda r: _dig(r, "quality", "collections", "cranfield", "default_agrees"),
           section="quality"),
    Target("int8 matrix top-10 agreement with exact float32, Cranfield", ">=", 0.98, "",
           lambda r: _dig(r, "vectors", "cranfield", "top10_agreement", "feedback"),
           _backend_note("vectors", "backend"), section="vectors"),
    Target("int8 matrix top-10 agreement with exact float32, corpus", ">=", 0.98, "",
           lambda r: _dig(r, "vectors", "corpus", "top10_agreement", "feedback"),
           _backend_note("vectors", "backend"), section="vectors"),
    Target("semantic branch p50 at 1M hash vectors (no query embedding)", "<=", 30, " ms",
           lambda r: _dig(r, "vectors", "scale", "semantic_ms", "total", "p50_ms"),
           lambda r: f"{_dig(r, 'vectors', 'scale', 'vectors')} vectors", section="vectors"),
    Target("vector matrix RSS after load at 1M (matrix process alone)", "<=", 1024, " MiB",
           lambda r: _dig(r, "vectors", "scale", "rss_after_load_mib"),
           lambda r: f"{_dig(r, 'vectors', 'scale', 'vectors')} vectors", section="vectors"),
    Target("PostgreSQL lexical top-10 agreement with SQLite, awesome-copilot", ">=", 0.9, "",
           lambda r: _dig(r, "postgres", "agreement_corpus", "lexical"),
           lambda r: f"ranking {_dig(r, 'postgres', 'lexical_ranking')}; at "
                     f"{_dig(r, 'postgres', 'chunks')} chunks: "
                     f"{_dig(r, 'postgres', 'agreement_grown', 'lexical')}", section="postgres"),
    Target("PostgreSQL semantic top-10 agreement with SQLite, awesome-copilot", ">=", 0.9, "",
           lambda r: _dig(r, "postgres", "agreement_corpus", "semantic"),
           lambda r: f"{_dig(r, 'postgres', 'corpus_chunks')} chunks, hash vectors; at "
                     f"{_dig(r, 'postgres', 'chunks')} chunks (HNSW): "
                     f"{_dig(r, 'postgres', 'agreement_grown', 'semantic')}", section="postgres"),
    *(_pg_ratio(mode, limit) for mode, limit in (("hybrid", 1.5), ("lexical", 2.0),
                                                  ("semantic", 2.0))),
    Target("PostgreSQL ingest (rifflux migrate), chunks/s", ">=", 2000, "",
           lambda r: _dig(r, "postgres", "ingest", "total_chunks_per_s"),
           lambda r: f"{_dig(r, 'postgres', 'chunks')} chunks", section="postgres"),
    *(_pg_after(what) for what in ("restart", "crash", "restore")),
    Target("PostgreSQL replica: a primary's note found there, p50", "<=", 2, " s",
           lambda r: _dig(r, "postgres", "replica", "found_p50_s"),
           lambda r: f"{_dig(r, 'postgres', 'replica', 'looks_per_s')} looks/s of "
                     f"{_dig(r, 'postgres', 'replica', 'one_look_ms')} ms", section="postgres"),
    *(_pg_rss(size, limit) for size, limit in zip(PG_SIZES, (0.5, 0.25), strict=True)),
)
