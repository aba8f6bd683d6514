"""The formats section's PDF figures: Rifflux's PDF extractor beside ``pdftotext``
(poppler) on the same real PDFs in the same run, and beside pypdf and pdfplumber where
they can be imported; the peak RSS of extracting a 1,000-page PDF.

- The PDFs (``_formats_inputs.pdf_folder``) are kept when ``pdftotext`` reads at least
  300 characters a page from them on average (a scan or a deck of pictures measures
  no text extraction), at most 10% of them control codes (fonts whose glyphs map to no
  text: every reader gives codes); the others are listed with their figures.
- ``pdftotext`` also reads text outside a page's crop box (a printer's marks in the
  slug: ``freeculture.pdf``'s ``14773_03_307-330_r7dy.qxd 2/10/04 4:01 PM``), which
  PDFium leaves out as not on the page: it counts against Rifflux here, in the words
  and in the phrases drawn from it.
- Rates: every library reads every page of every kept PDF, ``rounds`` times (the
  median round counts), in a worker process of its own (``_formats_child``, its
  imports untimed); ``pdftotext -q -enc UTF-8 FILE -`` is one whole process per file,
  as one runs it. Pages a second: ``pdftotext``'s page count of the files over the
  seconds.
- Agreement: for each page, the share of ``pdftotext``'s words (case-folded letters
  and digits; CJK text character by character, since the libraries break its lines
  differently) found in the library's text of that page, as a multiset; summed over
  the pages. It also catches text put on the wrong page.
- Memory: the kept PDFs' pages imported again and again into one PDF of ``pages``
  pages (pypdfium2), read by ``prepare_file`` in a fresh worker: its ``VmHWM`` after,
  beside its RSS before.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rifflux.core.cjk import OTHER_WORD, RUN
from rifflux.core.packing import ChunkLimits

from ._context import Config
from ._corpus import REPO_ROOT

CHILD = Path(__file__).with_name("_formats_child.py")
MIN_CHARS_PER_PAGE = 300
#: At most this share of control codes in its text: more, and its fonts map their glyphs
#: to no text (every reader gives codes: it measures nothing).
MAX_CODES = 0.1
#: The libraries compared, as ``_formats_child`` names them; the last two are no
#: dependency of Rifflux (``--pdf-libs``).
LIBRARIES = ("rifflux", "rifflux-prepare", "pypdf", "pdfplumber")
_OPTIONAL = ("pypdf", "pdfplumber")


@dataclass(frozen=True, slots=True)
class Reference:
    """A kept PDF and ``pdftotext``'s text of each of its pages."""

    path: Path
    rel: str  # its path in the folder it came from
    pages: list[str]


def pdftotext(path: Path) -> list[str]:
    """Each page's text as ``pdftotext`` gives it (pages end with a form feed)."""
    out = subprocess.run(["pdftotext", "-q", "-enc", "UTF-8", str(path), "-"],
                         capture_output=True, timeout=600, check=False)
    pages = out.stdout.decode("utf-8", "replace").split("\f")
    return pages[:-1] if pages and not pages[-1].strip() else pages


def _codes(text: str) -> int:
    """Characters that are no text: control codes (but line breaks and tabs), private
    use, unassigned."""
    return sum(unicodedata.category(c) in ("Cc", "Co", "Cn") and c not in "\n\t\f"
               for c in text)


def choose(folder: Path) -> tuple[list[Reference], list[dict[str, Any]]]:
    """The PDFs with real text by ``pdftotext``'s reading, and every file's figures."""
    kept: list[Reference] = []
    seen: list[dict[str, Any]] = []
    for path in sorted(folder.rglob("*.pdf")):
        pages = pdftotext(path)
        chars = sum(len(p.strip()) for p in pages)
        per_page = round(chars / len(pages)) if pages else 0
        codes = round(sum(map(_codes, pages)) / chars, 3) if chars else 0.0
        keep = per_page >= MIN_CHARS_PER_PAGE and codes <= MAX_CODES
        rel = path.relative_to(folder).as_posix()
        seen.append({"file": rel, "pages": len(pages), "chars_per_page": per_page,
                     "codes": codes, "kept": keep})
        if keep:
            kept.append(Reference(path, rel, pages))
    return kept, seen


def tokens(text: str) -> Counter[str]:
    folded = text.casefold()
    return Counter([*OTHER_WORD.findall(folded), *(c for run in RUN.findall(folded) for c in run)])


def agreement(refs: list[Reference], texts: dict[str, list[str]]) -> dict[str, Any]:
    """The share of ``pdftotext``'s words of each page found on that page, in all and
    per file."""
    found = total = 0
    files: dict[str, float] = {}
    for ref in refs:
        got = texts.get(str(ref.path), [])
        file_found = file_total = 0
        for n, page in enumerate(ref.pages):
            want = tokens(page)
            have = tokens(got[n]) if n < len(got) else Counter()
            file_found += sum((want & have).values())
            file_total += sum(want.values())
        files[ref.rel] = round(file_found / file_total, 4) if file_total else 1.0
        found, total = found + file_found, total + file_total
    return {"words": round(found / total, 4) if total else None, "files": files}


def _median(rounds: list[float]) -> float:
    return statistics.median(rounds) if rounds else float("nan")


def _rate(pages: int, seconds: float) -> float:
    return round(pages / seconds, 1) if seconds > 0 else float("nan")


def _pdftotext_rounds(refs: list[Reference], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        for ref in refs:
            pdftotext(ref.path)
        out.append(round(time.perf_counter() - start, 5))
    return out


def _child(args: list[str], *, timeout: float = 1800) -> dict[str, Any]:
    """What ``_formats_child`` prints, run on this checkout's ``rifflux``."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([sys.executable, str(CHILD), *args], capture_output=True, text=True,
                          timeout=timeout, check=False, env=env)
    if proc.returncode != 0:
        return {"error": f"worker failed: {proc.stderr.strip()[-500:]}"}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def rates(cfg: Config, refs: list[Reference]) -> dict[str, Any]:
    """Pages a second and agreement with ``pdftotext`` of each library, and
    ``pdftotext``'s own rate, in this run."""
    pages = sum(len(r.pages) for r in refs)
    rounds = cfg.formats_rounds
    reference = _pdftotext_rounds(refs, rounds)
    out: dict[str, Any] = {
        "pages": pages, "files": len(refs), "rounds": rounds,
        "pdftotext": {"version": _poppler(), "rounds_s": reference,
                      "pages_per_s": _rate(pages, _median(reference))},
    }
    libs = cfg.pdf_libs
    for lib in LIBRARIES:
        texts_json = cfg.work / "formats" / f"texts-{lib}.json"
        texts_json.parent.mkdir(parents=True, exist_ok=True)
        args = ["extract", lib, str(rounds), str(texts_json)]
        if lib in _OPTIONAL:
            if not (libs and Path(libs).is_dir()):
                out[lib] = {"missing": f"not installed (no --pdf-libs folder {libs})"}
                continue
            args += ["--libs", str(libs)]
        found = _child([*args, *(str(r.path) for r in refs)])
        if "missing" in found:
            found["missing"] = f"not installed ({found['missing']})"
        elif "error" not in found:
            texts = json.loads(texts_json.read_text())
            found["pages_per_s"] = _rate(pages, _median(found["rounds_s"]))
            found["vs_pdftotext"] = round(found["pages_per_s"]
                                          / out["pdftotext"]["pages_per_s"], 3)
            found["agreement"] = agreement(refs, texts)
        out[lib] = found
    return out


def _poppler() -> str:
    out = subprocess.run(["pdftotext", "-v"], capture_output=True, text=True, check=False)
    first = (out.stderr or out.stdout).strip().splitlines()
    return first[0] if first else "pdftotext"


def long_pdf(refs: list[Reference], pages: int, dest: Path) -> dict[str, Any]:
    """A PDF of ``pages`` pages: the kept PDFs' pages imported in turn, again and again."""
    import pypdfium2 as pdfium

    out = pdfium.PdfDocument.new()
    sources = [pdfium.PdfDocument(r.path) for r in refs]
    with_text = 0  # pages on which pdftotext reads text
    try:
        while len(out) < pages:
            for ref, src in zip(refs, sources, strict=True):
                take = min(len(src), pages - len(out))
                if take <= 0:
                    break
                out.import_pages(src, list(range(take)), index=len(out))
                with_text += sum(bool(p.strip()) for p in ref.pages[:take])
        dest.parent.mkdir(parents=True, exist_ok=True)
        out.save(dest)
        made = len(out)
    finally:
        for src in sources:
            src.close()
        out.close()
    return {"pages": made, "pages_with_text": with_text,
            "file_mib": round(dest.stat().st_size / 2**20, 2)}


def peak_rss(cfg: Config, refs: list[Reference]) -> dict[str, Any]:
    """``prepare_file`` of a ``cfg.formats_pages``-page PDF in a fresh worker: its RSS
    before and its peak."""
    dest = cfg.work / "formats" / f"long-{cfg.formats_pages}.pdf"
    made = long_pdf(refs, cfg.formats_pages, dest)
    limit = ChunkLimits().max_file_bytes
    if dest.stat().st_size > limit:
        return {"built": made, "error": f"not measured: the {made['pages']}-page PDF is "
                f"{made['file_mib']} MiB, over max_file_bytes ({limit / 2**20:g} MiB)"}
    found = _child(["rss", str(dest)])
    found["built"] = made
    if "error" not in found and found.get("pages", 0) < 0.95 * made["pages_with_text"]:
        found["error"] = (f"text from {found.get('pages')} of its {made['pages']} pages, "
                          f"where pdftotext reads {made['pages_with_text']} "
                          f"({found.get('warning')})")
    return found
