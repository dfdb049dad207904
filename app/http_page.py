"""The search page: ``GET /`` and its assets under ``/static/``, package data in ``app/static/``.

The page is plain HTML, CSS and one ES module (no build step); it talks to the HTTP app's own routes
(``/stream``, ``/conversations/{id}/stream``, ``/conversations/{id}/resume/stream``,
``/conversations/{id}/state``) with the bearer token a person types in, kept in the tab's
``sessionStorage``. ``/?q=QUERY`` opens the page and runs that search.

The page and its assets carry no data, so they need no token (the routes the page calls do); they
check ``Host`` like every route of the app. Every response forbids inline script and styles,
framing and other origins (``Content-Security-Policy``): the model's text is inserted as text.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path
from fastapi.responses import Response

from app.http_guard import require_host

PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""Same-origin script, styles and requests only; no inline script or style, no framing."""

SECURITY_HEADERS = {
    "Content-Security-Policy": PAGE_CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

ASSETS = {
    "page.js": "text/javascript; charset=utf-8",
    "page.css": "text/css; charset=utf-8",
    "icon.svg": "image/svg+xml",
}
"""The files under ``/static/`` and their media types; nothing else in the package is served."""

STATIC = files("app") / "static"

router = APIRouter(dependencies=[Depends(require_host)])


def _asset(name: str, media_type: str) -> Response:
    return Response(STATIC.joinpath(name).read_bytes(), media_type=media_type, headers=SECURITY_HEADERS)


@router.get("/", summary="The search page (?q=QUERY runs that search)", include_in_schema=False)
async def search_page() -> Response:
    """The page; its script reads ``q`` from the address and runs the search."""
    return _asset("index.html", "text/html; charset=utf-8")


@router.get("/static/{name}", summary="The search page's script, styles and icon", include_in_schema=False)
async def page_asset(name: Annotated[str, Path(max_length=40)]) -> Response:
    """One of :data:`ASSETS` (404 for anything else)."""
    if name not in ASSETS:
        raise HTTPException(404, f"no asset {name!r}")
    return _asset(name, ASSETS[name])
