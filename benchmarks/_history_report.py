"""The history section in the report: its targets, each beside the reference measured in
the same run (git log on the same repository), and its figures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._targets import Results, Target, _dig


def _t(name: str, op: str, threshold: float, unit: str, value: Callable[[Results], Any],
       note: Callable[[Results], str]) -> Target:
    return Target(name, op, threshold, unit, value, note, section="history")


def _h(r: Results, *path: str) -> Any:
    return _dig(r, "history", *path)


HISTORY_TARGETS: tuple[Target, ...] = (
    _t("history lexically searchable, commits/s", ">=", 1000, " commits/s",
       lambda r: _h(r, "index", "commits_per_s"),
       lambda r: f"{_h(r, 'index', 'commits')} commits in {_h(r, 'index', 'seconds')} s"),
    _t("history searchable rate / git log --numstat -p's (same repository, same run)", ">=",
       0.5, "x", lambda r: _h(r, "index", "vs_git_log"),
       lambda r: f"git log: {_h(r, 'git_log', 'commits_per_s')} commits/s "
                 f"({_h(r, 'git_log', 'seconds')} s)"),
    _t("a new commit searchable with a watch running", "<=", 1.0, " s",
       lambda r: _h(r, "fresh", "max_s"),
       lambda r: f"median {_h(r, 'fresh', 'median_s')} s of {_h(r, 'fresh', 'commits')}"),
    _t("search_history p50, hybrid", "<=", 15, " ms",
       lambda r: _h(r, "search", "hybrid", "p50_ms"),
       lambda r: f"{_h(r, 'index', 'commits')} commits; CPU p50 "
                 f"{_h(r, 'search', 'hybrid', 'cpu_p50_ms')} ms; lexical "
                 f"{_h(r, 'search', 'lexical', 'p50_ms')} ms, semantic "
                 f"{_h(r, 'search', 'semantic', 'p50_ms')} ms"),
    _t("line history p50 (history(path, a, b)), the file's blame kept", "<=", 100, " ms",
       lambda r: _h(r, "lines", "p50_ms") if (_h(r, "lines", "commits") or 0) >= 500
       else None,
       lambda r: f"{_h(r, 'lines', 'path')}: {_h(r, 'lines', 'commits')} commits; the "
                 f"first call (git blame): {_h(r, 'lines', 'first_ms')} ms"),
    _t("history on PostgreSQL lexically searchable, commits/s", ">=", 1000, " commits/s",
       lambda r: _h(r, "postgres", "commits_per_s"),
       lambda r: f"{_h(r, 'postgres', 'commits')} commits in {_h(r, 'postgres', 'seconds')} "
                 f"s (SQLite: {_h(r, 'index', 'commits_per_s')} commits/s)"),
    _t("search_history p50 on PostgreSQL, hybrid", "<=", 15, " ms",
       lambda r: _h(r, "postgres", "search", "hybrid", "p50_ms"),
       lambda r: f"lexical {_h(r, 'postgres', 'search', 'lexical', 'p50_ms')} ms, semantic "
                 f"{_h(r, 'postgres', 'search', 'semantic', 'p50_ms')} ms; lexical top 10 "
                 f"as SQLite's: {_h(r, 'postgres', 'lexical_top10_agreement')}"),
    _t("a commit's title finds it first (lexical; or, for a title several commits share, "
       "one of them)", ">=", 0.95, "",
       lambda r: _h(r, "titles", "share_first_or_same_title"),
       lambda r: f"{_h(r, 'titles', 'first')} of {_h(r, 'titles', 'titles')} its very "
                 f"commit ({_h(r, 'titles', 'share_first')}), "
                 f"{_h(r, 'titles', 'another_with_the_same_title')} another of the same "
                 "title"),
)


def report(h: dict[str, Any]) -> list[str]:
    lines = ["### History (a real repository's commits)", ""]
    if "repository" in h:
        lines += [f"Repository: {h['repository']}.", ""]
    g, i = h.get("git_log"), h.get("index")
    if g and i:
        lines += [f"git log --numstat -p > /dev/null: {g['commits']:,} commits in "
                  f"{g['seconds']} s ({g['commits_per_s']:,} commits/s). Rifflux, lexically "
                  f"searchable: {i['commits']:,} in {i['seconds']} s ({i['commits_per_s']:,} "
                  f"commits/s, {i['vs_git_log']}x git log's rate), {i['db_mib']} MiB.", ""]
    e = h.get("embedded")
    if e:
        lines += [f"Embedded ({e['model']}): {e['embedded']:,} commit texts, "
                  f"{e['commits_per_s']} a second in the model and the store "
                  f"({e['embed_seconds']} s; {e['left']:,} left after {e['seconds']} s); "
                  f"the model alone on 256 of the same texts: {e['model_texts_per_s']} "
                  "texts/s.", ""]
    s = h.get("search")
    if s:
        lines += ["| mode | p50 ms | p95 ms | CPU p50 ms |", "|---|---|---|---|"]
        lines += [f"| {m} | {s[m]['p50_ms']} | {s[m]['p95_ms']} | "
                  f"{s[m].get('cpu_p50_ms', '–')} |"
                  for m in ("lexical", "semantic", "hybrid") if m in s]
        lines += [""]
    ln = h.get("lines")
    if ln:
        lines += [f"Line history on {ln['path']} ({ln['commits']} commits, {ln['lines']} "
                  f"lines): the first call {ln['first_ms']} ms (git blame of the whole "
                  f"file, kept), then p50 {ln['p50_ms']} ms, p95 {ln['p95_ms']} ms over "
                  f"{ln['ranges']} ranges of 20 lines; the whole file's history "
                  f"({ln['whole_commits']} commits): p50 {ln['whole_p50_ms']} ms.", ""]
    t = h.get("titles")
    if t:
        lines += [f"Titles: {t['first']} of {t['titles']} found their commit first; "
                  f"{t['another_with_the_same_title']} found another commit with the same "
                  f"title. Missed, e.g.: {'; '.join(t['missed'][:3]) or 'none'}.", ""]
    f = h.get("fresh")
    if f:
        lines += [f"A new commit, watched: searchable in {f['median_s']} s (median), "
                  f"{f['max_s']} s at most, of {f['commits']}.", ""]
    return lines + _postgres(h.get("postgres"))


def _postgres(p: dict[str, Any] | None) -> list[str]:
    if not p:
        return []
    if "skipped" in p or "incomplete" in p:
        return [f"PostgreSQL: not measured ({p.get('skipped') or p.get('incomplete')}).", ""]
    lines = [f"PostgreSQL, lexically searchable: {p['commits']:,} commits in {p['seconds']} s "
             f"({p['commits_per_s']:,} commits/s); its lexical top 10 holds "
             f"{p['lexical_top10_agreement']} of SQLite's on the same queries; vectors "
             f"stored after {p['embedded_s']} s.", ""]
    s = p.get("search")
    if s:
        lines += ["| mode (PostgreSQL) | p50 ms | p95 ms | CPU p50 ms |", "|---|---|---|---|"]
        lines += [f"| {m} | {s[m]['p50_ms']} | {s[m]['p95_ms']} | {s[m]['cpu_p50_ms']} |"
                  for m in ("lexical", "semantic", "hybrid") if m in s]
        lines += [""]
    t = p.get("titles")
    if t:
        lines += [f"Titles on PostgreSQL: {t['first']} of {t['titles']} first, "
                  f"{t['another_with_the_same_title']} another of the same title.", ""]
    return lines
