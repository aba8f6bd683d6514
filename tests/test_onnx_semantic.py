"""The real ONNX model on a small corpus: semantics that lexical search cannot see."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rifflux import Rifflux
from rifflux.core.embedders import BUNDLED_MODEL, locate_model

from .helpers import cosine, fused, write

pytestmark = pytest.mark.anyio


async def test_a_paraphrase_finds_the_section_lexical_search_misses(
    tmp_path: Path, topics_and_account: Path
) -> None:
    query = "I cannot recall my login secret"
    async with Rifflux(tmp_path / "i.db") as rf:  # the default: auto -> ONNX
        result = await rf.reindex(topics_and_account)
        assert result["embedding_backend"] == "onnx"
        assert result["embedding_model"] == BUNDLED_MODEL
        lexical = await rf.search(query, mode="lexical")
        semantic = await rf.search(query, mode="semantic", top_k=3)
        hybrid = await rf.search(query, mode="hybrid", top_k=3)
        other = await rf.search("how long should I knead", mode="semantic", top_k=1)
    assert lexical == []
    assert semantic[0]["heading_path"] == "Account help > Resetting your password"
    assert cosine(semantic[0]) > cosine(semantic[1])
    assert hybrid[0]["chunk_id"] == semantic[0]["chunk_id"]
    assert fused(hybrid[0])["lexical_rank"] is None
    assert other[0]["path"] == "cooking.md"


async def test_auto_falls_back_to_hashing_and_says_why(
    tmp_path: Path, topics_and_account: Path,
) -> None:
    async with Rifflux(
        tmp_path / "i.db", embedding_backend="auto", model_dir=tmp_path / "missing"
    ) as rf:
        result = await rf.reindex(topics_and_account)
        status = await rf.status()
        hits = await rf.search("tomato watering", mode="semantic")
    assert result["embedding_backend"] == "hash"
    assert status["embedding_backend"] == "hash"
    reason = status["embedding_fallback_reason"]
    assert reason is not None and "model.onnx" in reason
    assert hits  # the hash vectors still serve the semantic branch


async def test_a_user_model_directory_replaces_the_bundled_model(
    tmp_path: Path, topics_and_account: Path
) -> None:
    files = locate_model()
    model_dir = tmp_path / "my-model"
    model_dir.mkdir()
    os.symlink(files.model, model_dir / "model.onnx")
    os.symlink(files.tokenizer, model_dir / "tokenizer.json")
    async with Rifflux(tmp_path / "i.db", embedding_backend="onnx", model_dir=model_dir) as rf:
        result = await rf.reindex(topics_and_account)
        hits = await rf.search("I cannot recall my login secret", mode="semantic", top_k=1)
    assert result["embedding_backend"] == "onnx"
    assert (result["embedding_model"] or "").startswith("onnx:my-model:")
    assert hits[0]["heading_path"].endswith("Resetting your password")


def test_the_readme_library_example_runs_as_written(tmp_path: Path) -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Library\n\n```python\n(.*?)```", readme, re.DOTALL)
    assert block is not None, "README.md lost its library example"
    write(tmp_path / "docs", "setup.md", "# Setup\n\n## Linux\n\nTo install on linux run make.\n")
    proc = subprocess.run(
        [sys.executable, "-c", block.group(1)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "setup.md Setup > Linux" in proc.stdout


async def test_a_short_section_at_the_end_of_a_long_readme_is_found_by_its_sentence(
    tmp_path: Path,
) -> None:
    # Before chunks followed sections, this section was merged into the one above it and
    # kept that one's breadcrumb; a search for its own sentence missed it.
    topics = ["installing on Linux", "configuring the proxy", "upgrading the database",
              "rotating the logs", "backing up the data", "tuning the cache"]
    readme = "# Tool\n\n" + "".join(
        f"## {t.capitalize()}\n\n" + f"This part explains {t} in detail, step by step. " * 8
        + "\n\n" for t in topics)
    readme += ("## Zanzibar flamingo procedure\n\n"
               "Feed the flamingos shrimp at dawn before opening the gates.\n")
    write(tmp_path / "docs", "README.md", readme)
    async with Rifflux(tmp_path / "i.db", embedding_backend="onnx") as rf:
        await rf.reindex(tmp_path / "docs")
        hits = await rf.search("Feed the flamingos shrimp at dawn before opening the gates.",
                               mode="semantic", top_k=3)
    assert hits[0]["heading_path"] == "Tool > Zanzibar flamingo procedure"
    assert hits[0]["line_start"] == readme.count("\n") - 2
