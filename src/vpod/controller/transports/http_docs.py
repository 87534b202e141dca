"""``/docs``: Swagger UI over ``/openapi.json``, every asset served by the controller itself.

FastAPI's default page loads Swagger UI from a CDN; a controller on an
isolated network (or a browser that must not reach the Internet from an
admin page) gets a blank page from that. The files of ``swagger-ui-dist``
are vendored in ``swagger_ui/`` (unmodified, with their licence) and served
under ``/docs/assets``.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = Path(__file__).with_name("swagger_ui")
ASSETS_URL = "/docs/assets"


router = APIRouter(include_in_schema=False)


@router.get("/docs", response_class=HTMLResponse)
async def swagger_ui(request: Request) -> HTMLResponse:
    """Swagger UI over the app's own OpenAPI document, titled after the app."""
    return get_swagger_ui_html(
        openapi_url=request.app.openapi_url or "/openapi.json",
        title=f"{request.app.title} - Swagger UI",
        swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS_URL}/favicon-32x32.png",
    )


def docs_assets() -> StaticFiles:
    """Mount at :data:`ASSETS_URL`."""
    return StaticFiles(directory=ASSETS)
