"""The embedding table left int8: a dequantised table's Gather moved before its
dequantisation, checked with the onnx package and run with the real onnxruntime."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from rifflux.core import model_graph
from rifflux.core.embedders import locate_model
from rifflux.core.model_graph import gather_before_dequantise, prepared

from ..helpers import TOPICS


def _run(model: str | bytes, feeds: dict[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    out: np.ndarray = session.run(None, feeds)[0]
    return out


def _lookup_model(where: Path, *, scale_shape: tuple[int, ...] = (50, 1),
                  scale_first: bool = False, axis: int = 0, cast_used_again: bool = False,
                  external: bool = False) -> Path:
    """``Gather(Mul(Cast(int8 table), scale), ids)`` as a weight-quantised export writes
    it, with the variations a rewrite must either keep exact or leave alone."""
    rng = np.random.default_rng(3)
    table = numpy_helper.from_array(
        rng.integers(-127, 128, size=(50, 8), dtype=np.int8), "table_q")
    scale = numpy_helper.from_array(
        rng.uniform(0.01, 0.1, size=scale_shape).astype(np.float32), "table_scale")
    mul_inputs = ["table_scale", "table_f"] if scale_first else ["table_f", "table_scale"]
    nodes = [helper.make_node("Cast", ["table_q"], ["table_f"], to=TensorProto.FLOAT),
             helper.make_node("Mul", mul_inputs, ["table"]),
             helper.make_node("Gather", ["table", "ids"], ["picked"], axis=axis),
             helper.make_node("Relu", ["picked"], ["out"])]
    outputs = [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["b", "t", 8])]
    if cast_used_again:
        outputs.append(helper.make_tensor_value_info("table_f", TensorProto.FLOAT, [50, 8]))
    graph = helper.make_graph(
        nodes, "lookup", [helper.make_tensor_value_info("ids", TensorProto.INT64, ["b", "t"])],
        outputs, initializer=[table, scale])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = where / "model.onnx"
    onnx.save(model, str(path), save_as_external_data=external, size_threshold=0)
    return path


def _feeds() -> dict[str, np.ndarray]:
    return {"ids": np.array([[0, 7, 49, 7], [3, 3, 1, 0]], dtype=np.int64)}


@pytest.mark.parametrize("case", [
    {"scale_shape": (50, 1)},
    {"scale_shape": (), "scale_first": True},
    {"scale_shape": (1, 1)},
])
def test_a_dequantised_lookup_picks_int8_rows_and_answers_the_same(
    tmp_path: Path, case: dict[str, Any]
) -> None:
    path = _lookup_model(tmp_path, **case)
    moved = gather_before_dequantise(path)
    assert moved is not None
    graph = onnx.load_from_string(moved).graph
    onnx.checker.check_model(onnx.load_from_string(moved))
    gathers = [n for n in graph.node if n.op_type == "Gather"]
    assert "table_q" in {n.input[0] for n in gathers}
    assert not any(n.op_type == "Cast" and n.input[0] == "table_q" for n in graph.node)
    assert np.array_equal(_run(moved, _feeds()), _run(str(path), _feeds()))


@pytest.mark.parametrize("case", [
    {"scale_shape": (1, 8)},  # a scale per column: rows cannot be picked with it
    {"axis": 1},
    {"cast_used_again": True},
    {"external": True},  # bytes would lose the folder its data is in
])
def test_a_model_the_rewrite_does_not_fit_is_left_alone(
    tmp_path: Path, case: dict[str, Any]
) -> None:
    assert gather_before_dequantise(_lookup_model(tmp_path, **case)) is None


def test_a_file_that_is_not_a_model_is_left_for_onnxruntime_to_refuse(tmp_path: Path) -> None:
    garbage = tmp_path / "model.onnx"
    garbage.write_bytes(b"\xff\xfe not a protobuf \x00" * 100)
    assert gather_before_dequantise(garbage) is None
    assert gather_before_dequantise(tmp_path / "missing.onnx") is None


def test_the_bundled_models_word_table_stays_int8_and_its_vectors_are_the_same_bit_for_bit(
) -> None:
    from tokenizers import Tokenizer

    files = locate_model()
    moved = gather_before_dequantise(files.model)
    assert moved is not None
    graph = onnx.load_from_string(moved).graph
    int8 = {t.name for t in graph.initializer if t.data_type == TensorProto.INT8}
    lookup = next(n for n in graph.node if n.op_type == "Gather" and n.input[1] == "input_ids")
    assert lookup.input[0] in int8

    tokenizer = Tokenizer.from_file(str(files.tokenizer))
    tokenizer.enable_padding()
    tokenizer.enable_truncation(256)
    encodings = tokenizer.encode_batch([*TOPICS.values(), "word " * 300])
    ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
    feeds = {"input_ids": ids, "token_type_ids": np.zeros_like(ids),
             "attention_mask": np.asarray([e.attention_mask for e in encodings], dtype=np.int64)}
    assert np.array_equal(_run(moved, feeds), _run(str(files.model), feeds))


def test_the_changed_model_is_made_once_and_loaded_from_the_cache_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    path, plain = _lookup_model(tmp_path / "a"), _lookup_model(tmp_path / "b", axis=1)
    first = prepared(path)
    assert isinstance(first, str) and first != str(path)  # the changed model, kept
    assert Path(first).read_bytes() == gather_before_dequantise(path)
    assert prepared(plain) == str(plain)  # nothing to change: the model itself
    made: list[Path] = []

    def counted(model: Path) -> bytes | None:
        made.append(model)
        return None

    monkeypatch.setattr(model_graph, "gather_before_dequantise", counted)
    assert (prepared(path), prepared(plain)) == (first, str(plain))
    assert made == []  # both read from the cache: no graph work at the second load
    assert np.array_equal(_run(first, _feeds()), _run(str(path), _feeds()))


def test_a_cache_that_cannot_be_written_gives_the_changed_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cache").write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = _lookup_model(tmp_path)
    assert prepared(path) == gather_before_dequantise(path)
