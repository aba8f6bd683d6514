"""The page for people (``/``, files under ``/static/``) and ``/healthz``.

The page is plain HTML, CSS and JavaScript shipped as package data: nothing is
fetched from anywhere but this server, and nothing is built at install time.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.staticfiles import StaticFiles

from ..api import Rifflux
from ..errors import ClosedError

__all__ = ["router", "static_files"]

router = APIRouter()

_NO_CACHE = {"Cache-Control": "no-cache"}


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
async def page() -> HTMLResponse:
    html = files(__package__).joinpath("static/index.html").read_text(encoding="utf-8")
    return HTMLResponse(html, headers=_NO_CACHE)


@router.get("/favicon.ico", include_in_schema=False)
async def favicon() -> Response:
    """The page's icon where browsers look for it unasked (the page names it too)."""
    icon = files(__package__).joinpath("static/favicon.svg").read_bytes()
    return Response(icon, media_type="image/svg+xml",
                    headers={"Cache-Control": "max-age=86400"})


@router.get("/healthz", summary="200 while the index is open (no token needed)")
async def healthz(request: Request) -> JSONResponse:
    rf: Rifflux = request.app.state.rifflux
    try:
        backend = rf.embedding_backend
    except ClosedError:
        return JSONResponse({"status": "closed"}, status_code=503)
    if not request.app.state.serving:
        return JSONResponse({"status": "stopping"}, status_code=503)
    return JSONResponse({"status": "ok", "model_ready": backend is not None})


def static_files() -> StaticFiles:
    return StaticFiles(packages=[(__package__, "static")])
