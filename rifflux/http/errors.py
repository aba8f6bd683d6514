"""Errors as every ``/api`` route answers them: ``{"error": {"type", "message"}}`` with a
fitting status. The library's errors already say what to do next; this module only
picks the status. Anything unexpected is logged with its traceback and answered
500: one bad request never ends the server.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from ..errors import (
    ClosedError,
    EmbeddingError,
    HistoryOffError,
    IndexBusyError,
    IndexDatabaseError,
    InvalidArgumentError,
    JobNotFoundError,
    NotFoundError,
    ReadOnlyError,
    RiffluxError,
)

logger = logging.getLogger(__name__)

__all__ = ["ApiError", "error_response", "from_exception"]


class ApiError(Exception):
    """An answer other than 2xx, raised by a route: the status, a type, a message."""

    def __init__(self, status: int, type_: str, message: str,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.type, self.message = status, type_, message
        self.headers = headers


def error_response(status: int, type_: str, message: str,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"type": type_, "message": message}}, status_code=status,
                        headers=headers)


#: The library's errors by the status they answer with (the first that matches).
_STATUS: tuple[tuple[type[RiffluxError], int, str], ...] = (
    (NotFoundError, 404, "not_found"),
    (JobNotFoundError, 404, "not_found"),
    (HistoryOffError, 404, "history_off"),
    (InvalidArgumentError, 400, "invalid_argument"),
    (ReadOnlyError, 403, "read_only"),
    (IndexBusyError, 503, "index_busy"),
    (ClosedError, 503, "index_not_open"),
    (IndexDatabaseError, 503, "index_unavailable"),
    (EmbeddingError, 503, "embedding_unavailable"),
)


#: The library's ClosedError tells a program to open the instance; a client of the server
#: can only wait for it.
_NOT_OPEN = ("the index is not open: the server is stopping, or has not finished starting; "
             "try again in a moment, once GET /healthz answers 200")


def from_exception(exc: BaseException) -> JSONResponse:
    if isinstance(exc, ApiError):
        return error_response(exc.status, exc.type, exc.message, exc.headers)
    if isinstance(exc, RiffluxError):
        for kind, status, name in _STATUS:
            if isinstance(exc, kind):
                retry = {"Retry-After": "1"} if status == 503 else None
                message = _NOT_OPEN if isinstance(exc, ClosedError) else str(exc)
                return error_response(status, name, message, retry)
        return error_response(500, "rifflux_error", str(exc))
    logger.error("unexpected error answering a request", exc_info=exc)
    return error_response(500, "internal_error",
                          f"unexpected {type(exc).__name__}: the request failed and the "
                          "server goes on (its log has the traceback; please report it)")


async def handle(_: Request, exc: Any) -> JSONResponse:
    """The exception handler every error type is registered with."""
    return from_exception(exc)
