"""HTTP request metrics (an ASGI middleware) and the ``/metrics`` endpoint.

Requests are labelled by route *template* (``/api/v1/partitions/{partition_id}``),
never by the raw path, so the number of series stays bounded whatever ids
clients send; requests that match no route share the label ``<unmatched>``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..metrics import CONTENT_TYPE, ControllerMetrics

UNMATCHED = "<unmatched>"


def route_template(scope: Scope) -> str:
    route = scope.get("route")
    if isinstance(route, BaseRoute):
        path = getattr(route, "path", None)
        if isinstance(path, str):
            return path
    return UNMATCHED


class RequestMetricsMiddleware:
    """Times every HTTP request and counts it by method, route template and status."""

    def __init__(self, app: ASGIApp, metrics: ControllerMetrics) -> None:
        self._app = app
        self._metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        metrics = self._metrics
        start = metrics.timer()
        status = 500  # what the client gets if the app raises before answering

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self._app(scope, receive, send_and_note)
        finally:
            metrics.observe_http(
                scope.get("method", ""), route_template(scope), status, metrics.timer() - start
            )


def controller_metrics(request: Request) -> ControllerMetrics:
    """The app's :class:`ControllerMetrics` (FastAPI dependency)."""
    found: ControllerMetrics = request.app.state.metrics
    return found


router = APIRouter(tags=["health"])


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {
            "content": {CONTENT_TYPE: {"schema": {"type": "string"}}},
            "description": "Prometheus text format.",
        }
    },
)
async def prometheus_metrics(
    metrics: Annotated[ControllerMetrics, Depends(controller_metrics)],
) -> Response:
    """Request counts and latencies, state gauges and per-IPU telemetry (Prometheus text)."""
    await metrics.refresh_state()
    body = metrics.render() + await metrics.render_telemetry()
    return Response(body, media_type=CONTENT_TYPE)
