"""Markdown tables of the report (``_report`` and the sections' own reports)."""

from __future__ import annotations

from typing import Any


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) < 1 else f"{value:,.{max(digits - 2, 1)}f}"
    return str(value)


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in rows]
    return out + [""]
