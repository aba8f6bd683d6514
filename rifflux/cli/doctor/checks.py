"""What a check answers: how it went, in one line, what was seen, and the fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Check", "Status", "attention", "note", "ok"]

#: ``ok``: as it should be; ``note``: worth knowing, nothing to fix; ``attention``:
#: something is wrong or missing, and ``fix`` says what to do (the exit code is then 1).
Status = Literal["ok", "note", "attention"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    area: str  # "install", "model", "index", ...
    status: Status
    summary: str
    details: tuple[str, ...] = ()
    fix: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"area": self.area, "status": self.status, "summary": self.summary,
                "details": list(self.details), "fix": self.fix, **self.data}


def ok(area: str, summary: str, *details: str, **data: Any) -> Check:
    return Check(area=area, status="ok", summary=summary, details=details, data=data)


def note(area: str, summary: str, *details: str, fix: str | None = None,
         **data: Any) -> Check:
    return Check(area=area, status="note", summary=summary, details=details, fix=fix,
                 data=data)


def attention(area: str, summary: str, *details: str, fix: str, **data: Any) -> Check:
    return Check(area=area, status="attention", summary=summary, details=details, fix=fix,
                 data=data)
