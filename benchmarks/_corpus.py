"""Where the data sets are, and what the benchmarks read from them.

The default corpus and the Cranfield collection live in ``shared/`` beside the
repository (``../shared`` from the repo root). The lookup walks up from the
repository and from the working directory, so it works from a fresh clone with
``shared/`` next to it as well as from inside the package.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from rifflux.core.chunker import embed_text, parse_markdown

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = ("shared", "corpora", "awesome-copilot")
DEFAULT_CRANFIELD = ("shared", "eval", "cranfield")
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")


def find_shared(parts: tuple[str, ...]) -> Path | None:
    """The first ``<ancestor>/<parts...>`` folder above the repo or the working dir."""
    starts = [REPO_ROOT, Path.cwd().resolve()]
    for start in starts:
        for base in (start, *start.parents):
            candidate = base.joinpath(*parts)
            if candidate.is_dir():
                return candidate
    return None


def resolve_folder(given: str | None, default: tuple[str, ...]) -> Path:
    """The folder given, else the first ``default`` found above the repository or the
    working directory, else where it would be beside the repository. It may not exist:
    each section that needs it then fails, saying so (``State.chunks``)."""
    if given:
        return Path(given).expanduser().resolve()
    return find_shared(default) or REPO_ROOT.parent.joinpath(*default)


def markdown_files(root: Path) -> list[Path]:
    """The files rifflux would index with the default include globs, sorted."""
    return sorted(
        p for p in root.rglob("*")
        if p.is_file() and p.suffix.lower() in MARKDOWN_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class ChunkText:
    path: str  # relative to the corpus root
    heading_path: str
    content: str

    @property
    def embedded(self) -> str:
        """What the embedding model sees for this chunk."""
        return embed_text(self.heading_path, self.content)


def chunk_texts(root: Path, files: list[Path] | None = None) -> list[ChunkText]:
    """Every chunk of the corpus as rifflux's chunker (default limits) cuts it."""
    out: list[ChunkText] = []
    for path in files if files is not None else markdown_files(root):
        doc = parse_markdown(read_text(path))
        rel = path.relative_to(root).as_posix()
        out.extend(ChunkText(rel, c.heading_path, c.content) for c in doc.chunks)
    return out


def copy_corpus(src: Path, dest: Path, *, max_files: int | None = None, seed: int = 0) -> int:
    """Copy the markdown files (all, or a seeded random subset) keeping relative paths."""
    files = markdown_files(src)
    if max_files is not None and max_files < len(files):
        files = sorted(random.Random(seed).sample(files, max_files))
    for path in files:
        target = dest / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return len(files)
