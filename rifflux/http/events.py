"""``GET /api/events``: what happens to the index, as Server-Sent Events.

    event: hello   {"jobs": [...]}   the jobs queued or running when the stream opened
    event: job     a job's snapshot (``JobInfo``) each time it is queued, starts, makes
                   progress (after every commit) or ends
    event: index   after every commit: files written and removed, chunks removed,
                   vectors added, and ``pending_embeddings`` (texts still without one)
    event: lost    {"count": N}: this client fell behind and missed N events (the
                   next job event is a whole snapshot again; re-read /api/status)

Each client has a bounded buffer in the library's event hub (``Rifflux.events``):
one that reads slowly loses old events and never holds the indexer up. A comment
line every 15 s keeps proxies from closing an idle stream.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from sse_starlette import EventSourceResponse, ServerSentEvent

from ..api import EventsLost, IndexUpdated, JobChanged, Rifflux
from ..types import FINISHED

__all__ = ["router"]

router = APIRouter()

_STREAM: dict[int | str, dict[str, Any]] = {200: {"content": {"text/event-stream": {}},
                 "description": "events: hello, job, index, lost (see the route's text)"}}


@router.get("/api/events", response_class=EventSourceResponse, responses=_STREAM,
            summary="Jobs and commits as they happen (Server-Sent Events)")
async def events(request: Request) -> EventSourceResponse:
    rf: Rifflux = request.app.state.rifflux
    return EventSourceResponse(_stream(rf), ping=15, send_timeout=30,
                               headers={"Cache-Control": "no-store"})


async def _stream(rf: Rifflux) -> AsyncIterator[ServerSentEvent]:
    # (no task group or cancel scope is open across a yield here: PEP 789)
    async with rf.events() as subscription:
        jobs = [j for j in (await rf.status())["jobs"] if j["status"] not in FINISHED]
        yield _event("hello", {"jobs": jobs})
        async for event in subscription:
            if isinstance(event, JobChanged):
                yield _event("job", event.job)
            elif isinstance(event, IndexUpdated):
                yield _event("index", dataclasses.asdict(event))
            elif isinstance(event, EventsLost):
                yield _event("lost", {"count": event.count})


def _event(name: str, data: Any) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(data, ensure_ascii=False, separators=(",", ":")),
                           event=name)
