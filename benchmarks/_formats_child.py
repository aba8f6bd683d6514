"""The formats section's PDF worker, run as a script (``python PATH/_formats_child.py``)
so that nothing but the standard library and what it measures is loaded in it (as
``-m benchmarks...`` the harness's package, and all its sections' imports, would be):

- ``extract LIB ROUNDS TEXTS_JSON [--libs DIR] FILE...``: reads every page of every
  file with LIB (``rifflux``: ``PDF.extract`` of ``rifflux.core.extract.pdf``, the bytes
  read from disk included; ``rifflux-prepare``: ``core.document.prepare_file``, which
  also hashes and chunks; ``pypdf``; ``pdfplumber``), ROUNDS times, each file timed;
  writes the last round's text of each page to TEXTS_JSON and prints
  ``{"lib", "version", "rounds_s": [...], "files_s": {...}}``. ``--libs DIR`` is put
  at the end of ``sys.path`` (libraries installed with ``pip install --target``, which
  are no dependency of Rifflux); a library that cannot be imported prints
  ``{"lib", "missing": why}``.
- ``rss PDF``: ``prepare_file`` of one (big) PDF, as a parse worker reads it, and the
  process's RSS before (after the imports, pypdfium2's included) and its peak
  (``VmHWM``) after, with what was extracted.
"""

from __future__ import annotations

import importlib
import json
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PageTexts = Callable[[Path], list[str]]


def _rifflux() -> tuple[PageTexts, str]:
    from rifflux.core.extract import Source
    from rifflux.core.extract.pdf import PDF
    from rifflux.core.packing import ChunkLimits

    limits = ChunkLimits()

    def pages(path: Path) -> list[str]:
        extracted = PDF.extract(Source(path.name, path.read_bytes()), limits)
        out: list[str] = []
        for section in extracted.sections:
            page = section.page or 1
            out += [""] * (page - len(out))
            out[page - 1] += extracted.text[section.start:section.end] + "\n"
        return out

    return pages, _version("pypdfium2")


def _rifflux_prepare() -> tuple[PageTexts, str]:
    from rifflux.core.document import Prepared, prepare_file
    from rifflux.core.packing import ChunkLimits

    limits = ChunkLimits()

    def pages(path: Path) -> list[str]:
        done = prepare_file(path.parent, path.name, None, True, limits)
        if not isinstance(done, Prepared) or done.document is None:
            raise RuntimeError(f"{path.name}: {done}")
        out: list[str] = []
        for chunk in done.document.chunks:
            page = chunk.page or 1
            out += [""] * (page - len(out))
            out[page - 1] += chunk.content + "\n"
        return out

    return pages, _version("pypdfium2")


def _pypdf() -> tuple[PageTexts, str]:
    pypdf = importlib.import_module("pypdf")  # (no dependency of Rifflux: by name)

    def pages(path: Path) -> list[str]:
        return [page.extract_text() or "" for page in pypdf.PdfReader(path).pages]

    return pages, str(pypdf.__version__)


def _pdfplumber() -> tuple[PageTexts, str]:
    pdfplumber = importlib.import_module("pdfplumber")

    def pages(path: Path) -> list[str]:
        with pdfplumber.open(path) as pdf:
            return [page.extract_text() or "" for page in pdf.pages]

    return pages, str(pdfplumber.__version__)


LIBS: dict[str, Callable[[], tuple[PageTexts, str]]] = {
    "rifflux": _rifflux, "rifflux-prepare": _rifflux_prepare, "pypdf": _pypdf,
    "pdfplumber": _pdfplumber,
}


def _version(dist: str) -> str:
    from importlib.metadata import version

    return f"{dist} {version(dist)}"


def extract(lib: str, rounds: int, texts_json: Path, files: list[Path]) -> dict[str, Any]:
    try:
        read, version = LIBS[lib]()
    except ImportError as exc:
        return {"lib": lib, "missing": f"{type(exc).__name__}: {exc}"}
    rounds_s: list[float] = []
    files_s: dict[str, float] = {}
    texts: dict[str, list[str]] = {}
    for _ in range(rounds):
        total = 0.0
        for path in files:
            start = time.perf_counter()
            texts[str(path)] = read(path)
            seconds = time.perf_counter() - start
            files_s[path.name] = round(seconds, 5)
            total += seconds
        rounds_s.append(round(total, 5))
    texts_json.write_text(json.dumps(texts))
    return {"lib": lib, "version": version, "rounds_s": rounds_s, "files_s": files_s}


def _status_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(float(line.split()[1]) / 1024, 1)
    return float("nan")


def rss(pdf: Path) -> dict[str, Any]:
    import pypdfium2  # noqa: F401 (loaded before "before": the library is no extraction)

    from rifflux.core.document import Prepared, prepare_file
    from rifflux.core.packing import ChunkLimits

    before = {"rss_mib": _status_mib("VmRSS"), "hwm_mib": _status_mib("VmHWM")}
    start = time.perf_counter()
    done = prepare_file(pdf.parent, pdf.name, None, True, ChunkLimits())
    seconds = time.perf_counter() - start
    out: dict[str, Any] = {
        "before": before, "seconds": round(seconds, 3),
        "peak_rss_mib": _status_mib("VmHWM"), "rss_after_mib": _status_mib("VmRSS"),
        "ru_maxrss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "file_mib": round(pdf.stat().st_size / 2**20, 2),
    }
    if isinstance(done, Prepared) and done.document is not None:
        chunks = done.document.chunks
        out.update(chunks=len(chunks), pages=len({c.page for c in chunks}),
                   chars=sum(len(c.content) for c in chunks), warning=done.warning)
    else:
        out["error"] = f"not extracted: {done}"
    return out


def main(argv: list[str]) -> None:
    here = Path(__file__).resolve().parent  # (sys.path[0]: its modules are no libraries)
    sys.path[:] = [p for p in sys.path if not p or Path(p).resolve() != here]
    if argv[0] == "rss":
        result = rss(Path(argv[1]))
    else:
        lib, rounds, texts_json, rest = argv[1], int(argv[2]), Path(argv[3]), argv[4:]
        if rest[:1] == ["--libs"]:
            sys.path.append(rest[1])
            rest = rest[2:]
        result = extract(lib, rounds, texts_json, [Path(f) for f in rest])
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
