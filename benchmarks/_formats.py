"""The formats section: files other than markdown (PDF, source code), each figure beside
its reference measured in the same run, and markdown not slower than before them.

Parts, each with its own figures and, when its input was missing or its work not
done, an ``error`` saying so ("not measured: ..."), which fails its targets and the
section (never a pass over work not done):

- ``pdfs``: where the real PDFs came from and which were kept (``_formats_inputs``,
  ``_formats_pdf.choose``): ``pdftotext`` must be installed (poppler-utils).
- ``pdf_rates``: pages a second of Rifflux's PDF extractor, of ``pdftotext``, of pypdf
  and pdfplumber where importable, and each library's agreement with ``pdftotext``.
- ``pdf_rss``: the peak RSS of reading a ``--pdf-pages`` (1,000) page PDF.
- ``pdf_phrases``: phrases from ``pdftotext``'s page N found on page N
  (``_formats_phrases``).
- ``code``: a real repository's lexically searchable time beside markdown of the same
  bytes, and function names finding their definitions (``_formats_code``).
- ``markdown``: this checkout beside the one before the extractors
  (``_formats_markdown``).
"""

from __future__ import annotations

import shutil
from typing import Any

import anyio

from ._common import Incomplete
from ._context import Config, State
from ._formats_code import code_part
from ._formats_markdown import markdown_part
from ._formats_pdf import Reference, choose, peak_rss, rates
from ._formats_phrases import found_on_their_pages, sample

PARTS = ("pdfs", "pdf_rates", "pdf_rss", "pdf_phrases", "code", "markdown")


def _pdfs(cfg: Config) -> tuple[dict[str, Any], list[Reference]]:
    from ._formats_inputs import Missing, pdf_folder

    if shutil.which("pdftotext") is None:
        return {"error": "not measured: pdftotext is not installed (apt-get install "
                         "poppler-utils): it is the reference and the phrases' source"}, []
    try:
        folder, source = pdf_folder(cfg)
    except Missing as exc:
        return {"error": f"not measured: {exc}"}, []
    refs, seen = choose(folder)
    out: dict[str, Any] = {"source": source, "folder": str(folder), "files": seen,
                           "kept_pages": sum(len(r.pages) for r in refs)}
    if not refs:
        out["error"] = ("not measured: no PDF of the folder has pdftotext text of 300 "
                        "characters a page or more")
    return out, refs


async def formats_section(state: State) -> dict[str, Any]:
    cfg = state.config
    out: dict[str, Any] = {}
    out["pdfs"], refs = await anyio.to_thread.run_sync(_pdfs, cfg)
    if refs:
        out["pdf_rates"] = await anyio.to_thread.run_sync(rates, cfg, refs)
        if "error" in out["pdf_rates"]["rifflux"]:
            out["pdf_rates"]["error"] = out["pdf_rates"]["rifflux"]["error"]
        out["pdf_rss"] = await anyio.to_thread.run_sync(peak_rss, cfg, refs)
        phrases = sample(refs, cfg.formats_phrases, cfg.seed)
        out["pdf_phrases"] = await found_on_their_pages(cfg, refs, phrases)
    else:
        for part in ("pdf_rates", "pdf_rss", "pdf_phrases"):
            out[part] = {"error": out["pdfs"].get("error", "not measured: no PDF")}
    out["code"] = await code_part(state)
    out["markdown"] = await anyio.to_thread.run_sync(markdown_part, state)
    failed: dict[str, list[str]] = {}
    for part in PARTS:
        if "error" in out[part]:
            failed.setdefault(out[part]["error"], []).append(part)
    if failed:
        raise Incomplete("; ".join(f"{', '.join(parts)}: {error}"
                                   for error, parts in failed.items()), partial=out)
    return out
