"""Grow a corpus to N chunks from its own real text, replicated and perturbed.

Each copy of a file gets a new name (``name-v3.md`` under ``copy003/``) and is
perturbed so no two copies are identical (identical texts would share one
vector and flatter the embedding and matrix figures): sentences within each
prose line are shuffled and about one word in ten is swapped for a random
word of the corpus. Headings keep their ``#`` markers and fenced code its
fences, so the copies chunk like the original. Front matter is kept as is.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ._corpus import ChunkText, markdown_files, read_text

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_WORD = re.compile(r"[A-Za-z]{3,}")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SWAP_RATE = 0.1


def _swap_words(line: str, rng: random.Random, vocab: list[str]) -> str:
    return _WORD.sub(
        lambda m: rng.choice(vocab) if rng.random() < _SWAP_RATE else m.group(0), line
    )


def perturb(text: str, rng: random.Random, vocab: list[str]) -> str:
    lines = text.split("\n")
    start = 0
    if lines and lines[0].strip() == "---":  # front matter: metadata, left alone
        end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), 0)
        start = end + 1
    out = lines[:start]
    in_fence = False
    for line in lines[start:]:
        if _FENCE.match(line):
            in_fence = not in_fence
            out.append(line)
            continue
        if not in_fence and not line.lstrip().startswith(("#", "|", "-", "*", ">")):
            sentences = _SENTENCE.split(line)
            if len(sentences) > 1:
                rng.shuffle(sentences)
                line = " ".join(sentences)
        out.append(_swap_words(line, rng, vocab))
    return "\n".join(out)


def grow_corpus(
    src: Path, dest: Path, chunks: list[ChunkText], target: int, *, seed: int
) -> dict[str, int]:
    """Write perturbed copies of ``src``'s files into ``dest`` until the originals'
    chunk counts add up to ``target``. Returns files written and estimated chunks."""
    rng = random.Random(seed)
    per_file = Counter(c.path for c in chunks)
    vocab = sorted({w for c in rng.sample(chunks, min(2000, len(chunks)))
                    for w in _WORD.findall(c.content)})
    files = [p for p in markdown_files(src) if per_file[p.relative_to(src).as_posix()]]
    if not files:
        raise ValueError(f"{src} has no markdown chunks to replicate")
    total = written = copy = 0
    while total < target:
        for path in files:
            if total >= target:
                break
            rel = path.relative_to(src)
            name = f"{path.stem}-v{copy}{path.suffix}"
            out = dest / f"copy{copy:03d}" / rel.parent / name
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(perturb(read_text(path), rng, vocab), encoding="utf-8")
            total += per_file[rel.as_posix()]
            written += 1
        copy += 1
    return {"files": written, "estimated_chunks": total, "copies": copy}


def grown_corpus(src: Path, base: Path, chunks: list[ChunkText], target: int, *,
                 seed: int) -> tuple[Path, dict[str, Any]]:
    """``src`` grown to ``target`` chunks in ``base/grown-<target>-seed<seed>-<src>/``
    (``<src>``: a hash of its path), made once: a folder whose manifest (``.json`` beside
    it, written last) exists is reused as it is. Returns the folder and what growing it
    wrote (``reused``: made by an earlier run)."""
    tag = hashlib.sha256(str(src.resolve()).encode()).hexdigest()[:8]
    folder = base / f"grown-{target}-seed{seed}-{tag}"
    manifest = folder.with_suffix(".json")
    if manifest.is_file() and folder.is_dir():
        growth: dict[str, Any] = json.loads(manifest.read_text())
        return folder, {**growth, "reused": True}
    shutil.rmtree(folder, ignore_errors=True)  # (a growth cut short)
    start = time.perf_counter()
    growth = {**grow_corpus(src, folder, chunks, target, seed=seed),
              "seconds": round(time.perf_counter() - start, 1)}
    manifest.write_text(json.dumps(growth))
    return folder, {**growth, "reused": False}
