"""The formats section in the report: its targets, each beside the reference measured in
the same run, and its tables.

A target over a part whose input was missing or whose work was not done (the part's
``error``) is FAIL with why, never pass; a part the run did not reach is "not run".
The 1,000-page target is "not run" when the run read a shorter PDF (``--pdf-pages``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._targets import Results, Target, _dig, failure

Chart = tuple[str, str]


def _invalid(part: str) -> Callable[[Results, dict[str, str]], str | None]:
    def invalid(r: Results, errors: dict[str, str]) -> str | None:
        found = _dig(r, "formats", part)
        if isinstance(found, dict):
            error = found.get("error")
            return None if error is None else str(error)
        return failure(errors, "formats")

    return invalid


def _target(part: str, name: str, op: str, threshold: float, unit: str,
            value: Callable[[Results], Any], note: Callable[[Results], str]) -> Target:
    return Target(name, op, threshold, unit, value, note, section="formats",
                  invalid=_invalid(part))


def _rss(r: Results) -> float | None:
    pages = _dig(r, "formats", "pdf_rss", "built", "pages")
    return _dig(r, "formats", "pdf_rss", "peak_rss_mib") if pages and pages >= 1000 else None


FORMATS_TARGETS: tuple[Target, ...] = (
    _target("pdf_rates", "PDF extraction pages/s / pdftotext's (same files, same run)", ">=",
            0.5, "x", lambda r: _dig(r, "formats", "pdf_rates", "rifflux", "vs_pdftotext"),
            lambda r: f"{_dig(r, 'formats', 'pdf_rates', 'rifflux', 'pages_per_s')} vs "
                      f"{_dig(r, 'formats', 'pdf_rates', 'pdftotext', 'pages_per_s')} pages/s "
                      f"on {_dig(r, 'formats', 'pdf_rates', 'pages')} pages; words as "
                      f"pdftotext's: "
                      f"{_dig(r, 'formats', 'pdf_rates', 'rifflux', 'agreement', 'words')}"),
    _target("pdf_rss", "peak RSS extracting a 1,000-page PDF", "<=", 300, " MiB", _rss,
            lambda r: f"RSS before {_dig(r, 'formats', 'pdf_rss', 'before', 'rss_mib')} MiB; "
                      f"{_dig(r, 'formats', 'pdf_rss', 'built', 'file_mib')} MiB file read in "
                      f"{_dig(r, 'formats', 'pdf_rss', 'seconds')} s"),
    _target("pdf_phrases", "PDF phrase -> first lexical hit on its page", ">=", 0.95, "",
            lambda r: _dig(r, "formats", "pdf_phrases", "share_first"),
            lambda r: f"{_dig(r, 'formats', 'pdf_phrases', 'first')} of "
                      f"{_dig(r, 'formats', 'pdf_phrases', 'phrases')}; in the top 10: "
                      f"{_dig(r, 'formats', 'pdf_phrases', 'in_top10')}"),
    _target("code", "code lexically searchable / markdown of the same bytes", "<=", 2, "x",
            lambda r: _dig(r, "formats", "code", "ratio"),
            lambda r: f"{_dig(r, 'formats', 'code', 'code', 'lexically_searchable_s')} s vs "
                      f"{_dig(r, 'formats', 'code', 'markdown', 'lexically_searchable_s')} s, "
                      f"{_dig(r, 'formats', 'code', 'code', 'bytes') or 0:,} bytes, "
                      f"{_dig(r, 'formats', 'code', 'code', 'files')} code files"),
    _target("code", "function name -> its definition's chunk first", ">=", 0.9, "",
            lambda r: _dig(r, "formats", "code", "names_once", "share_first"),
            lambda r: f"{_dig(r, 'formats', 'code', 'names_once', 'first')} of "
                      f"{_dig(r, 'formats', 'code', 'names_once', 'names')} names defined "
                      "once; any definition's name: "
                      f"{_dig(r, 'formats', 'code', 'names_any', 'share_first')}"),
    _target("markdown", "markdown lexically searchable, this checkout / before extractors",
            "<=", 1.05, "x", lambda r: _dig(r, "formats", "markdown", "index_ratio"),
            lambda r: f"{_dig(r, 'formats', 'markdown', 'current', 'lexically_searchable_s')}"
                      f" s vs {_dig(r, 'formats', 'markdown', 'base', 'lexically_searchable_s')}"
                      f" s (base {_dig(r, 'formats', 'markdown', 'base_commit')}); CPU of the "
                      f"runs: {_dig(r, 'formats', 'markdown', 'cpu_ratio')}x"),
    _target("markdown", "markdown lexical p50, this checkout / before extractors", "<=",
            1.05, "x", lambda r: _dig(r, "formats", "markdown", "lexical_p50_ratio"),
            lambda r: f"{_dig(r, 'formats', 'markdown', 'current', 'p50_ms')} ms vs "
                      f"{_dig(r, 'formats', 'markdown', 'base', 'p50_ms')} ms; CPU p50: "
                      f"{_dig(r, 'formats', 'markdown', 'lexical_cpu_p50_ratio')}x"),
)


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _pages(n: int) -> str:
    return f"{n:,} page" + ("" if n == 1 else "s")


def _rates(p: dict[str, Any]) -> list[str]:
    rows = [f"| pdftotext (whole process per file) | {p['pdftotext']['version']} | "
            f"{p['pdftotext']['pages_per_s']} | 1 | (reference) |"]
    for lib in ("rifflux", "rifflux-prepare", "pypdf", "pdfplumber"):
        found = p.get(lib) or {}
        label = {"rifflux": "Rifflux PDF extractor", "rifflux-prepare":
                 "Rifflux prepare_file (read, extract, chunk)"}.get(lib, lib)
        if "pages_per_s" in found:
            rows.append(f"| {label} | {found['version']} | {found['pages_per_s']} | "
                        f"{found['vs_pdftotext']} | {found['agreement']['words']} |")
        else:
            rows.append(f"| {label} | {found.get('missing') or found.get('error')} "
                        "| – | – | – |")
    return [f"Pages a second on {p['pages']} pages of {p['files']} PDFs (median of "
            f"{p['rounds']} rounds), and the share of pdftotext's words of each page found "
            "on that page:", "",
            "| reader | version | pages/s | / pdftotext | words as pdftotext's |",
            "|---|---|---|---|---|", *rows, ""]


def _agreement_by_file(p: dict[str, Any]) -> list[str]:
    libs = [lib for lib in ("rifflux", "pypdf", "pdfplumber") if "agreement" in (p.get(lib)
                                                                                  or {})]
    if not libs:
        return []
    files = p[libs[0]]["agreement"]["files"]
    rows = [f"| {name} | " + " | ".join(str(p[lib]["agreement"]["files"].get(name))
                                        for lib in libs) + " |" for name in files]
    return ["Words as pdftotext's, by file:", "", f"| file | {' | '.join(libs)} |",
            "|---|" + "---|" * len(libs), *rows, ""]


def report(f: dict[str, Any], charts: list[Chart]) -> list[str]:
    lines = ["### Formats (PDF, code; markdown before and after the extractors)", ""]
    pdfs = f.get("pdfs") or {}
    if "source" in pdfs:
        kept = [x for x in pdfs["files"] if x["kept"]]
        left = [f"{x['file']} ({x['chars_per_page']} chars/page, {x['codes']:.0%} codes)"
                for x in pdfs["files"] if not x["kept"]]
        lines += [f"PDFs: {pdfs['source']}; kept (pdftotext ≥ 300 characters a page, ≤ 10% "
                  "control codes): "
                  + ", ".join(f"{x['file']} ({_pages(x['pages'])})" for x in kept)
                  + (f"; left out: {', '.join(left)}" if left else "") + ".", ""]
    rates = f.get("pdf_rates") or {}
    if "pdftotext" in rates:
        lines += _rates(rates) + _agreement_by_file(rates)
    rss = f.get("pdf_rss") or {}
    if "peak_rss_mib" in rss:
        lines += [f"A {rss['built']['pages']:,}-page PDF ({rss['built']['file_mib']} MiB, the "
                  "kept PDFs' pages in turn) read by prepare_file in a fresh process: RSS "
                  f"{rss['before']['rss_mib']} MiB before, peak {rss['peak_rss_mib']} MiB "
                  f"(ru_maxrss {rss['ru_maxrss_mib']}), {rss['seconds']} s, "
                  f"{_fmt(rss.get('chunks'))} chunks on {_fmt(rss.get('pages'))} pages "
                  f"(pdftotext: text on {rss['built']['pages_with_text']}).", ""]
    ph = f.get("pdf_phrases") or {}
    if "phrases" in ph:
        lines += [f"Phrases: {ph['first']} of {ph['phrases']} first on their page, "
                  f"{ph['in_top10']} in the top 10 ({ph['files']} PDFs, {ph['chunks']} "
                  f"chunks); e.g. {', '.join(f'`{q}`' for q in ph['examples'][:3])}.", ""]
    code = f.get("code") or {}
    if "markdown" in code:
        c, m = code["code"], code["markdown"]
        lines += [f"Code: {code['source']}.", "",
                  "| index | files | chunks | bytes | lexically searchable |",
                  "|---|---|---|---|---|",
                  f"| code | {c['files']:,} | {c['chunks']:,} | {c['bytes']:,} | "
                  f"{c['lexically_searchable_s']} s |",
                  f"| markdown, same bytes | {m['files']:,} | {m['chunks']:,} | "
                  f"{m['bytes']:,} | {m['lexically_searchable_s']} s |", "",
                  f"Function names ({code['definitions']:,} definitions, "
                  f"{code['names_defined_once']:,} names defined once): "
                  f"{code['names_once']['first']} of {code['names_once']['names']} defined "
                  "once find their definition first; of any definition, "
                  f"{code['names_any']['first']} of {code['names_any']['names']}.", ""]
    md = f.get("markdown") or {}
    if "current" in md:
        lines += [f"Markdown ({md['corpus']}), median of {md['rounds']} fresh processes each, "
                  f"taking turns, {md['queries']} lexical queries:", "",
                  "| checkout | lexically searchable | CPU of the run | lexical p50 | its CPU "
                  "p50 | chunks |", "|---|---|---|---|---|---|",
                  *(f"| {name} | {md[key]['lexically_searchable_s']} s | {md[key]['cpu_s']} s | "
                    f"{md[key]['p50_ms']} ms | {md[key]['cpu_p50_ms']} ms | "
                    f"{md[key]['chunks']:,} |"
                    for name, key in (("this one", "current"),
                                      (f"base {md['base_commit']}", "base"))),
                  ""]
    for part in ("pdfs", "pdf_rates", "pdf_rss", "pdf_phrases", "code", "markdown"):
        if (f.get(part) or {}).get("error"):
            lines += [f"- {part}: {f[part]['error']}"]
    drawn = [f"![{title}]({name})" for title, name in charts]
    return lines + ([""] + drawn + [""] if drawn else [""])
