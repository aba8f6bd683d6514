"""Bring your own embedding model: a model directory with model.onnx, tokenizer.json and
an optional rifflux-model.json, run with the real onnxruntime over real SQLite files."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rifflux import Rifflux
from rifflux.core.embedders import BUNDLED_MODEL, OnnxEmbedder, locate_model
from rifflux.types import Status

from .helpers import TOPICS, cli_env, cosine, eventually, rifflux_cli

pytestmark = pytest.mark.anyio


CLS_WITH_PREFIXES = {"name": "minilm-cls", "pooling": "cls", "query_prefix": "query: ",
                     "document_prefix": "passage: "}


def minilm_dir(where: Path, config: dict[str, Any] | str | None = None) -> Path:
    """The shipped MiniLM files in a directory of their own, with ``config`` (a dict, or
    raw text) as rifflux-model.json."""
    files = locate_model()
    where.mkdir(parents=True)
    os.symlink(files.model, where / "model.onnx")
    os.symlink(files.tokenizer, where / "tokenizer.json")
    if config is not None:
        text = config if isinstance(config, str) else json.dumps(config)
        (where / "rifflux-model.json").write_text(text, encoding="utf-8")
    return where


def tiny_768_dir(where: Path) -> Path:
    """A model built here: each token id picks one of 1,000 random 768-d rows (masked),
    under non-BERT names (inputs ``ids``/``mask``, output ``token_embeddings``) and a
    symbolic output dimension; the tokenizer is the shipped one."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    table = numpy_helper.from_array(rng.standard_normal((1000, 768)).astype(np.float32), "table")
    modulus = numpy_helper.from_array(np.array(1000, dtype=np.int64), "modulus")
    axes = numpy_helper.from_array(np.array([-1], dtype=np.int64), "axes")
    graph = helper.make_graph(
        [
            helper.make_node("Mod", ["ids", "modulus"], ["rows"]),
            helper.make_node("Gather", ["table", "rows"], ["vectors"], axis=0),
            helper.make_node("Cast", ["mask"], ["mask_f"], to=TensorProto.FLOAT),
            helper.make_node("Unsqueeze", ["mask_f", "axes"], ["mask_3d"]),
            helper.make_node("Mul", ["vectors", "mask_3d"], ["token_embeddings"]),
        ],
        "tiny768",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "tokens"]),
         helper.make_tensor_value_info("mask", TensorProto.INT64, ["batch", "tokens"])],
        [helper.make_tensor_value_info("token_embeddings", TensorProto.FLOAT,
                                       ["batch", "tokens", "dim"])],
        initializer=[table, modulus, axes],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    where.mkdir(parents=True)
    onnx.save(model, str(where / "model.onnx"))
    shutil.copy(locate_model().tokenizer, where / "tokenizer.json")
    (where / "rifflux-model.json").write_text(json.dumps({
        "name": "tiny-768",
        "input_names": {"input_ids": "ids", "attention_mask": "mask", "token_type_ids": None},
        "output_name": "token_embeddings",
    }), encoding="utf-8")
    return where


def stored_vectors(db: Path) -> dict[tuple[str, str], tuple[int, bytes]]:
    """(content_hash, model) -> (dim, vector bytes), read from the index file."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT content_hash, model, dim, vector FROM embeddings").fetchall()
    return {(str(h), str(m)): (int(d), bytes(v)) for h, m, d, v in rows}


async def model_settled(rf: Rifflux) -> Status:
    async def ready() -> Status | None:
        status = await rf.status()
        return status if status["embedding_model_ready"] else None

    settled: Status = await eventually(ready, within=60)
    return settled


def test_cls_pooling_and_prefixes_change_the_vectors_and_the_label(tmp_path: Path) -> None:
    def load(where: str, config: dict[str, Any]) -> OnnxEmbedder:
        return OnnxEmbedder(locate_model(minilm_dir(tmp_path / where, config)))

    default = OnnxEmbedder(locate_model())
    plain = load("plain", {"name": "minilm"})
    cls = load("cls", {"name": "minilm", "pooling": "cls"})
    prefixed = load("prefixed", {"name": "minilm", "query_prefix": "query: ",
                                 "document_prefix": "passage: "})
    both = load("both", CLS_WITH_PREFIXES)
    texts = ["Tomato plants need deep watering twice a week.", "Knead the dough."]

    assert default.label == BUNDLED_MODEL
    assert plain.label.startswith("onnx:minilm:") and both.label.startswith("onnx:minilm-cls:")
    # Under one name, pooling alone and prefixes alone each make another label.
    assert len({default.label, plain.label, cls.label, prefixed.label, both.label}) == 5
    for other in (cls, both):
        cosines = np.sum(default.embed_documents(texts) * other.embed_documents(texts), axis=1)
        assert np.all(cosines < 0.99)
    # The same files with the default configuration run exactly as the bundled model does.
    np.testing.assert_allclose(plain.embed_documents(texts), default.embed_documents(texts),
                               atol=1e-6)
    # The prefixes are put before the text, documents and queries each their own.
    np.testing.assert_allclose(prefixed.embed_documents(["bread"]),
                               default.embed_documents(["passage: bread"]), atol=1e-6)
    np.testing.assert_allclose(prefixed.embed_query("bread"), default.embed_query("query: bread"),
                               atol=1e-6)
    np.testing.assert_allclose(both.embed_query("bread"), cls.embed_query("query: bread"),
                               atol=1e-6)
    # The label depends on the files and the configuration, not on the directory's path.
    assert load("elsewhere/both", CLS_WITH_PREFIXES).label == both.label


async def test_an_index_of_the_default_model_is_re_embedded_under_a_new_configuration(
    tmp_path: Path, topics: Path
) -> None:
    db = tmp_path / "i.db"
    model_dir = minilm_dir(tmp_path / "cls", CLS_WITH_PREFIXES)
    async with Rifflux(db, embedding_backend="onnx") as rf:
        await rf.reindex(topics)
    before = stored_vectors(db)
    assert before and {model for _, model in before} == {BUNDLED_MODEL}

    async with Rifflux(db, embedding_backend="onnx", model_dir=model_dir) as rf:
        result = await rf.reindex(topics)
        status = await rf.status()
        hits = await rf.search("how often to water tomatoes", mode="semantic", top_k=1)
    after = stored_vectors(db)
    label = result["embedding_model"]
    assert label is not None and label.startswith("onnx:minilm-cls:")
    assert status["embedding_model"] == label
    assert {model for _, model in after} == {label}  # no vector of the old model is kept
    assert {h for h, _ in after} == {h for h, _ in before}  # every text embedded again
    assert all(after[h, label][1] != before[h, BUNDLED_MODEL][1] for h, _ in before)
    assert (status["embeddings"], status["pending_embeddings"]) == (len(before), 0)
    assert (status["embedding_dim"], status["embedding_pooling"],
            status["embedding_query_prefix"], status["embedding_document_prefix"],
            status["embedding_max_tokens"]) == (384, "cls", "query: ", "passage: ", 256)
    assert hits[0]["path"] == "garden.md"

    async with Rifflux(db, embedding_backend="onnx") as rf:  # and back to the default
        result = await rf.reindex(topics)
        status = await rf.status()
    back = stored_vectors(db)
    assert result["embedding_model"] == BUNDLED_MODEL
    assert back.keys() == before.keys()
    for key, (_, blob) in back.items():
        np.testing.assert_allclose(np.frombuffer(blob, dtype=np.float32),
                                   np.frombuffer(before[key][1], dtype=np.float32), atol=1e-5)
    assert (status["embedding_dim"], status["embedding_pooling"],
            status["embedding_query_prefix"], status["embedding_max_tokens"]) == (
        384, "mean", "", 256)


async def test_a_768_dimension_model_built_here_indexes_and_searches_end_to_end(
    tmp_path: Path, topics: Path
) -> None:
    db = tmp_path / "i.db"
    model_dir = tiny_768_dir(tmp_path / "tiny")
    async with Rifflux(db, embedding_backend="onnx", model_dir=model_dir) as rf:
        result = await rf.reindex(topics)
        # (a semantic search waits for the vector matrix to be loaded; status does not)
        semantic = await rf.search("watering tomato plants", mode="semantic", top_k=3)
        hybrid = await rf.search("knead dough", mode="hybrid", top_k=3)
        status = await rf.status()
    assert result["embedding_backend"] == "onnx"
    assert (status["embedding_model"] or "").startswith("onnx:tiny-768:")
    assert status["embedding_dim"] == 768
    assert status["embedding_pooling"] == "mean" and status["embedding_max_tokens"] == 256
    assert status["embedding_error"] is None
    assert status["vectors_in_memory"] == status["embeddings"] == status["chunks"]
    assert semantic[0]["path"] == "garden.md"
    assert cosine(semantic[0]) > cosine(semantic[1])
    assert hybrid[0]["path"] == "cooking.md"
    assert {(dim, len(blob)) for dim, blob in stored_vectors(db).values()} == {(768, 768 * 4)}


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = cli_env(tmp_path)
    del env["RIFFLUX_EMBEDDING_BACKEND"]  # the backend the command line says
    return rifflux_cli(tmp_path, *args, env=env)


def test_the_cli_takes_a_model_dir_and_its_status_shows_how_the_model_runs(
    tmp_path: Path, topics: Path
) -> None:
    tiny = tiny_768_dir(tmp_path / "tiny")
    cls = minilm_dir(tmp_path / "cls", CLS_WITH_PREFIXES)
    done = _cli(tmp_path, "--db", "i.db", "--backend", "onnx", "--model-dir", str(tiny),
                "index", str(topics))
    assert done.returncode == 0, done.stderr
    shown = _cli(tmp_path, "--db", "i.db", "--model-dir", str(tiny), "status", "--model")
    assert shown.returncode == 0, shown.stderr
    assert "onnx:tiny-768:" in shown.stdout
    assert "768 dimensions, mean pooling, up to 256 tokens" in shown.stdout
    as_json = _cli(tmp_path, "--db", "i.db", "--model-dir", str(cls), "status", "--json",
                   "--model")
    status = json.loads(as_json.stdout)
    assert (status["embedding_dim"], status["embedding_pooling"],
            status["embedding_query_prefix"]) == (384, "cls", "query: ")
    broken = _cli(tmp_path, "--db", "i.db", "--backend", "onnx",
                  "--model-dir", str(tmp_path / "kb"), "status", "--model")
    assert "model.onnx not found" in broken.stdout.replace("\n", "")


#: A broken model directory: how it is made (a missing file, or rifflux-model.json as a
#: dict or raw text), and what its error must say.
BROKEN: dict[str, tuple[dict[str, Any] | str, list[str]]] = {
    "missing model.onnx": ("no-model", ["model.onnx not found",
                                        "needs model.onnx and tokenizer.json"]),
    "missing tokenizer.json": ("no-tokenizer", ["tokenizer.json not found"]),
    "bad JSON": ('{"pooling": "cls",}', ["rifflux-model.json is not valid JSON", "line 1",
                                         "fix it"]),
    "unknown pooling": ({"pooling": "max"}, ["rifflux-model.json: field 'pooling' is \"max\"",
                                             'use "mean"', '"cls"']),
    "unknown field": ({"poolling": "cls"}, ["rifflux-model.json: unknown field 'poolling'",
                                            "the fields are name, pooling"]),
    "wrong input name": ({"input_names": {"input_ids": "ids"}},
                         ["rifflux-model.json: field 'input_names.input_ids' names 'ids'",
                          "its inputs: input_ids, attention_mask, token_type_ids",
                          "use one of those"]),
    "wrong output name": ({"output_name": "pooled"},
                          ["rifflux-model.json: field 'output_name' names 'pooled'",
                           "its outputs: last_hidden_state"]),
}


def broken_dir(where: Path, case: str) -> Path:
    setup = BROKEN[case][0]
    if setup in ("no-model", "no-tokenizer"):
        where.mkdir(parents=True)
        keep = locate_model().tokenizer if setup == "no-model" else locate_model().model
        os.symlink(keep, where / keep.name)
        return where
    return minilm_dir(where, setup)


@pytest.mark.parametrize("case", list(BROKEN))
async def test_a_broken_model_directory_says_which_file_and_field_with_backend_onnx(
    tmp_path: Path, topics: Path, case: str
) -> None:
    model_dir = broken_dir(tmp_path / "model", case)
    async with Rifflux(tmp_path / "i.db", embedding_backend="onnx", model_dir=model_dir) as rf:
        status = await model_settled(rf)
        result = await rf.reindex(topics)  # lexical search still works
        hits = await rf.search("tomato", mode="lexical")
    error = status["embedding_error"]
    assert error is not None and status["embedding_backend"] is None
    assert str(model_dir) in error
    for fragment in BROKEN[case][1]:
        assert fragment in error
    assert status["embedding_dim"] is None and status["embedding_pooling"] is None
    assert result["indexed_files"] == len(TOPICS) and hits[0]["path"] == "garden.md"


@pytest.mark.parametrize("case", ["missing tokenizer.json", "unknown pooling",
                                  "wrong input name"])
async def test_auto_falls_back_to_hashing_and_says_why(
    tmp_path: Path, topics: Path, case: str
) -> None:
    model_dir = broken_dir(tmp_path / "model", case)
    async with Rifflux(tmp_path / "i.db", embedding_backend="auto", model_dir=model_dir) as rf:
        status = await model_settled(rf)
        await rf.reindex(topics)
        hits = await rf.search("tomato watering", mode="semantic")
    reason = status["embedding_fallback_reason"]
    assert status["embedding_backend"] == "hash" and status["embedding_error"] is None
    assert reason is not None
    for fragment in BROKEN[case][1]:
        assert fragment in reason
    assert (status["embedding_dim"], status["embedding_pooling"],
            status["embedding_query_prefix"], status["embedding_max_tokens"]) == (
        384, None, None, None)
    assert hits
