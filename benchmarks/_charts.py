"""The charts: PNG files written beside the markdown report, linked from it.

- latency p50 and p95 per mode against corpus size;
- RSS against corpus size (serving after load, serving peak, indexing peak);
- the latency distribution of each mode at the largest size;
- the formats section's PDF readers: pages a second, with their agreement.

matplotlib (``benchmarks/requirements.txt``) with the Agg backend: no display needed.
Only points whose work was done are drawn (a failed point has no figures to show).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

MODES = ("lexical", "semantic", "hybrid")
_COLOURS = {"lexical": "tab:blue", "semantic": "tab:orange", "hybrid": "tab:green"}

Chart = tuple[str, str]  # (title, file name beside the report)


def _done(run: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """The scale points with figures, as (chunks, point), smallest first."""
    points = ((run.get("results") or {}).get("scale") or {}).get("points") or {}
    done = [(int(p["index"]["chunks"]), p) for p in points.values()
            if not p.get("error") and "serve" in p]
    return sorted(done, key=lambda item: item[0])


def write_charts(run: dict[str, Any], out: Path, stem: str) -> list[Chart]:
    """Draw the run's charts into ``out/<stem>-<section>-*.png``: the scale curve's and
    the formats section's; the charts written (none when no section has figures)."""
    charts: list[Chart] = []
    if _done(run):
        _scale_charts(run, out, stem, charts)
    rates = ((run.get("results") or {}).get("formats") or {}).get("pdf_rates") or {}
    if "pdftotext" in rates:
        _formats_chart(rates, out, stem, charts)
    return charts


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _saver(out: Path, stem: str, charts: list[Chart]) -> Callable[[Any, str, str], None]:
    def save(fig: Any, name: str, title: str) -> None:
        fig.tight_layout()
        fig.savefig(out / f"{stem}-{name}.png", dpi=110)
        _pyplot().close(fig)
        charts.append((title, f"{stem}-{name}.png"))

    return save


def _formats_chart(rates: dict[str, Any], out: Path, stem: str, charts: list[Chart]) -> None:
    """Pages a second of each PDF reader on the same files, with its words' agreement."""
    plt = _pyplot()
    labels = ["pdftotext"]
    values = [float(rates["pdftotext"]["pages_per_s"])]
    notes = ["reference"]
    for lib in ("rifflux", "rifflux-prepare", "pypdf", "pdfplumber"):
        found = rates.get(lib) or {}
        if "pages_per_s" in found:
            labels.append(lib)
            values.append(float(found["pages_per_s"]))
            notes.append(f"words {found['agreement']['words']}")
    fig, ax = plt.subplots(figsize=(7, 4))
    bars = ax.bar(labels, values, color=["tab:gray", *["tab:blue"] * (len(values) - 1)])
    for bar, note in zip(bars, notes, strict=True):
        ax.annotate(note, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("pages / s")
    ax.set_title(f"PDF text extraction, {rates['pages']} pages of {rates['files']} real PDFs")
    ax.grid(True, axis="y", alpha=0.3)
    _saver(out, stem, charts)(fig, "formats-pdf-rates", "PDF pages a second by reader, "
                              "with the share of pdftotext's words found")


def _scale_charts(run: dict[str, Any], out: Path, stem: str, charts: list[Chart]) -> None:
    done = _done(run)
    plt = _pyplot()
    backend = done[-1][1]["index"]["backend"]
    sizes = [chunks for chunks, _ in done]
    save = _saver(out, stem, charts)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for mode in MODES:
        for stat, style in (("p50_ms", "-o"), ("p95_ms", "--s")):
            ax.plot(sizes, [p["serve"]["modes"][mode][stat] for _, p in done], style,
                    color=_COLOURS[mode], label=f"{mode} {stat[:3]}")
    _log_sizes(ax, sizes)
    ax.set_ylabel("latency (ms, top_k=10)")
    ax.set_title(f"Query latency against corpus size ({backend} vectors)")
    ax.legend(fontsize=8, ncol=2)
    save(fig, "scale-latency", "Latency p50 and p95 per mode against corpus size")

    fig, ax = plt.subplots(figsize=(7, 4.5))
    series = (("serving, after load", "serve", "rss_after_load_mib"),
              ("serving, peak", "serve", "peak_rss_lifetime_mib"),
              ("indexing, peak", "index", "peak_rss_mib"))
    for label, process, figure in series:
        values = [p[process].get(figure) for _, p in done]
        if None not in values:  # (an index reused from an earlier run: no indexing peak)
            ax.plot(sizes, values, "-o", label=label)
    _log_sizes(ax, sizes)
    ax.set_ylabel("RSS (MiB)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"Resident memory against corpus size ({backend} vectors)")
    ax.legend(fontsize=8)
    save(fig, "scale-rss", "RSS against corpus size")

    chunks, largest = done[-1]
    raw = largest["serve"]["raw_ms"]
    fig, axes = plt.subplots(1, len(MODES), figsize=(10, 3.6), sharey=True)
    for ax, mode in zip(axes, MODES, strict=True):
        ax.hist(raw[mode], bins=20, color=_COLOURS[mode])
        ax.set_title(f"{mode} (p50 {largest['serve']['modes'][mode]['p50_ms']:.1f} ms)",
                     fontsize=10)
        ax.set_xlabel("latency (ms)")
    axes[0].set_ylabel("queries")
    fig.suptitle(f"Latency distribution at {chunks:,} chunks ({backend} vectors)", fontsize=11)
    save(fig, "scale-distribution", f"Latency distribution of each mode at {chunks:,} chunks")


def copied(charts: list[Chart], out: Path, drawn: str, stem: str) -> list[Chart]:
    """The charts ``write_charts`` drew into ``out`` for stem ``drawn``, copied to stem
    ``stem``'s names: a second report's charts, not drawn again."""
    import shutil

    renamed: list[Chart] = []
    for title, name in charts:
        new = stem + name.removeprefix(drawn)
        shutil.copyfile(out / name, out / new)
        renamed.append((title, new))
    return renamed


def _log_sizes(ax: Any, sizes: list[int]) -> None:
    if len(sizes) > 1 and sizes[-1] > 10 * sizes[0]:
        ax.set_xscale("log")
    ax.set_xticks(sizes, [f"{s:,}" for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel("chunks")
    ax.grid(True, alpha=0.3)
