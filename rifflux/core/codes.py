"""A vector as the in-memory matrix holds it: unit length, then int8 codes with a
float32 scale of its own (its largest component maps to ±127), and the same row packed
into bytes, as the index stores it beside the float32 vector so that a load converts
nothing."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]

_LEVELS = 127.0


def normalise(vectors: F32) -> F32:
    """Rows scaled to unit length; a zero row stays zero (its cosine is 0.0)."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    out: F32 = (vectors / norms).astype(np.float32, copy=False)
    return out


def quantise(vectors: F32) -> tuple[npt.NDArray[np.int8], F32]:
    """int8 codes and a scale per row (``row ≈ codes * scale``): the row's largest
    component is ±127; a row with a NaN or an infinity becomes zero. Equal rows get
    equal codes, so their scores tie exactly."""
    x = np.asarray(vectors, dtype=np.float32)
    with np.errstate(invalid="ignore"):
        scales: F32 = (np.abs(x).max(axis=-1, initial=0.0) / _LEVELS).astype(np.float32)
    scales[~np.isfinite(scales)] = 0.0
    scaled = x / np.where(scales > 0, scales, np.float32(1.0))[..., None]
    scaled[scales == 0] = 0.0  # (its NaN or infinity too)
    np.rint(scaled, out=scaled)
    return scaled.astype(np.int8), scales


def packed(vectors: F32) -> list[bytes]:
    """Each row as the matrix holds it, to be stored beside its float32 vector: its
    scale (float32) then its int8 codes, 388 bytes at 384 dimensions."""
    codes, scales = quantise(normalise(np.asarray(vectors, dtype=np.float32)))
    rows = np.concatenate([scales[:, None].view(np.uint8), codes.view(np.uint8)], axis=1)
    return [row.tobytes() for row in rows]


def unpack(rows: bytes, dim: int) -> tuple[npt.NDArray[np.int8], F32]:
    """The codes and scales of ``packed`` rows joined together."""
    table = np.frombuffer(rows, dtype=np.uint8).reshape(-1, 4 + dim)
    scales: F32 = np.ascontiguousarray(table[:, :4]).view(np.float32).reshape(-1)
    codes: npt.NDArray[np.int8] = table[:, 4:].view(np.int8)
    return codes, scales
