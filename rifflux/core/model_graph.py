"""A model's graph, changed before onnxruntime loads it: the embedding table stays int8.

A weight-quantised export (the bundled MiniLM among them) keeps each weight as int8 with
a float scale, ``Mul(Cast(int8), scale)``, and onnxruntime folds that into float32 once
when a session loads. For the matrices that is right (a MatMul wants floats), but the
word-embedding table only feeds a ``Gather`` that picks a few rows per text: folded, its
30,522 x 384 floats hold 47 MB of a server's memory (35 MB more than the int8 table) for
the rows of one query. ``gather_before_dequantise`` moves the ``Gather`` first, so the
same products are computed for the picked rows only; the vectors are bit for bit the
same. Anything else (no such pattern, a subgraph, external data, a file protobuf cannot
read) leaves the model alone: the caller loads the file as it is.

The graph is read and written with protobuf (a dependency of onnxruntime) through a
partial schema of ``onnx.proto`` naming only the fields read here; every other field is
kept as it was, as protobuf keeps unknown fields. (The ``onnx`` package would do the same
but is not a dependency, and importing it holds 11 MB in the process this saves memory
for.)

The change is made once per model file and kept in the user's cache
(``$XDG_CACHE_HOME/rifflux/models``, ``prepared``): reading and rewriting the graph holds
the interpreter's lock for tens of milliseconds at a time, which searches answered while
the model loads in the background would wait behind at every load.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["gather_before_dequantise", "prepared"]

#: Bumped when ``gather_before_dequantise`` changes what it writes (the cache's key).
_VERSION = "1"

_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL


def prepared(model: Path) -> str | bytes:
    """What onnxruntime loads for ``model``: the changed model's file in the user's cache
    (made at the first load of this file, kept by its path, size and modification time),
    the model's own path when there is nothing to change, or the changed bytes when the
    cache cannot be written."""
    try:
        st = model.stat()
        key = f"{model.resolve()}|{st.st_size}|{st.st_mtime_ns}|{_VERSION}"
    except OSError:
        return str(model)  # (onnxruntime says what is wrong with it)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = base / "rifflux" / "models"
    stem = folder / hashlib.sha256(key.encode()).hexdigest()[:20]
    changed, unchanged = stem.with_suffix(".onnx"), stem.with_suffix(".unchanged")
    if changed.is_file():
        return str(changed)
    if unchanged.is_file():
        return str(model)
    data = gather_before_dequantise(model)
    try:  # written whole or not at all: a load meanwhile never reads half a model
        folder.mkdir(parents=True, exist_ok=True)
        part = stem.with_suffix(f".{os.getpid()}.part")
        part.write_bytes(data or b"")
        os.replace(part, changed if data else unchanged)
    except OSError:  # (a read-only home: the change is made again at the next load)
        return data or str(model)
    return str(changed) if data else str(model)


def gather_before_dequantise(model: Path) -> bytes | None:
    """The model's bytes with each dequantised table's ``Gather`` moved before its
    dequantisation, or None when there is nothing to move (or the file is not one to
    change: then onnxruntime loads it and reports what is wrong with it)."""
    from google.protobuf.message import DecodeError

    proto = _schema()()
    try:
        proto.ParseFromString(model.read_bytes())
    except (DecodeError, OSError):
        return None
    graph = proto.graph
    if any(t.data_location == _EXTERNAL for t in graph.initializer) or any(
            a.HasField("g") or len(a.graphs) for n in graph.node for a in n.attribute):
        return None  # (bytes lose the folder external data is found in; subgraphs read names)
    moved = _move_gathers(graph)
    if not moved:
        return None
    kept = [v for v in graph.value_info if v.name not in moved]
    del graph.value_info[:]
    graph.value_info.extend(kept)
    data: bytes = proto.SerializeToString()
    return data


def _move_gathers(graph: Any) -> set[str]:
    """Rewrite ``Gather(Mul(Cast(table), scale), ids)`` as
    ``Mul(Cast(Gather(table, ids)), Gather(scale, ids))``; the names no longer made."""
    nodes = list(graph.node)
    tables = {t.name: list(t.dims) for t in graph.initializer}
    made_by = {out: i for i, node in enumerate(nodes) for out in node.output}
    uses = Counter(name for node in nodes for name in node.input)
    uses.update(o.name for o in graph.output)
    names = set(made_by) | set(uses) | set(tables)
    instead: dict[int, list[Any]] = {}
    for at, gather in enumerate(nodes):
        if (gather.op_type != "Gather" or gather.domain or len(gather.input) != 2
                or _axis(gather) != 0):
            continue
        mul = _made(nodes, made_by, gather.input[0], "Mul")
        if mul is None or len(mul.input) != 2 or uses[mul.output[0]] != 1:
            continue
        found = [(c, s) for c, s in (mul.input, reversed(mul.input))
                 if _made(nodes, made_by, c, "Cast") is not None]
        if len(found) != 1 or uses[found[0][0]] != 1:
            continue
        cast_out, scale = found[0]
        cast = nodes[made_by[cast_out]]
        table = cast.input[0]
        if table not in tables or scale not in tables:
            continue
        per_row = tables[scale] == [*tables[table][:1], 1]
        if not (per_row or all(d == 1 for d in tables[scale])):
            continue  # (a scale per column, or per block, cannot be picked like this)
        out, ids = gather.output[0], gather.input[1]
        picked, picked_scale, floats = (f"{out}/rifflux_{s}" for s in ("int8", "scale", "float"))
        if names & {picked, picked_scale, floats}:
            continue
        steps = [_node(gather, [table, ids], picked, "int8")]
        if per_row:
            steps.append(_node(gather, [scale, ids], picked_scale, "scale"))
        steps += [_node(cast, [picked], floats),
                  _node(mul, [floats, picked_scale if per_row else scale], out)]
        instead[at] = steps
        instead[made_by[cast_out]] = instead[made_by[mul.output[0]]] = []
    if not instead:
        return set()
    order = [new for i, node in enumerate(nodes) for new in instead.get(i, [_node(node)])]
    gone = {out for i, steps in instead.items() if not steps for out in nodes[i].output}
    del graph.node[:]
    graph.node.extend(order)
    return gone


def _made(nodes: list[Any], made_by: dict[str, int], name: str, op: str) -> Any:
    """The node of the default domain that makes ``name``, when it is an ``op``."""
    i = made_by.get(name)
    node = None if i is None else nodes[i]
    if node is None or node.op_type != op or node.domain or len(node.output) != 1:
        return None
    return node if node.input else None


def _node(like: Any, inputs: list[str] | None = None, output: str | None = None,
          step: str | None = None) -> Any:
    """A copy of ``like`` (standalone), with new inputs, output and name when given."""
    node = type(like)()
    node.CopyFrom(like)
    if inputs is not None:
        del node.input[:]
        node.input.extend(inputs)
    if output is not None:
        del node.output[:]
        node.output.append(output)
    if step is not None:
        node.name = f"{like.name}/rifflux_{step}"
    return node


def _axis(node: Any) -> int:
    return next((int(a.i) for a in node.attribute if a.name == "axis"), 0)


@cache
def _schema() -> Any:
    """The ModelProto class of a partial ``onnx.proto`` (proto2; field numbers as there)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fd = descriptor_pb2.FileDescriptorProto(name="rifflux_onnx_partial.proto",
                                            package="rifflux_onnx", syntax="proto2")
    kinds = descriptor_pb2.FieldDescriptorProto
    one, many = kinds.LABEL_OPTIONAL, kinds.LABEL_REPEATED
    scalar = {"str": kinds.TYPE_STRING, "i64": kinds.TYPE_INT64, "i32": kinds.TYPE_INT32}
    messages = {
        "ModelProto": [("graph", 7, one, "GraphProto")],
        "GraphProto": [("node", 1, many, "NodeProto"), ("initializer", 5, many, "TensorProto"),
                       ("output", 12, many, "ValueInfoProto"),
                       ("value_info", 13, many, "ValueInfoProto")],
        "NodeProto": [("input", 1, many, "str"), ("output", 2, many, "str"),
                      ("name", 3, one, "str"), ("op_type", 4, one, "str"),
                      ("attribute", 5, many, "AttributeProto"), ("domain", 7, one, "str")],
        "AttributeProto": [("name", 1, one, "str"), ("i", 3, one, "i64"),
                           ("g", 6, one, "GraphProto"), ("graphs", 11, many, "GraphProto")],
        "TensorProto": [("dims", 1, many, "i64"), ("name", 8, one, "str"),
                        ("data_location", 14, one, "i32")],
        "ValueInfoProto": [("name", 1, one, "str")],
    }
    for message, fields in messages.items():
        m = fd.message_type.add(name=message)
        for name, number, label, kind in fields:
            if kind in scalar:
                m.field.add(name=name, number=number, label=label, type=scalar[kind])
            else:
                m.field.add(name=name, number=number, label=label,
                            type=kinds.TYPE_MESSAGE, type_name=f".rifflux_onnx.{kind}")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(
        "rifflux_onnx.ModelProto"))
