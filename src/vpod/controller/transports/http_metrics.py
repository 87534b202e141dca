"""HTTP request metrics (an ASGI middleware) and the ``/metrics`` endpoint.

Requests are labelled by route *template* (``/api/v1/partitions/{partition_id}``),
never by the raw path, so the number of series stays bounded whatever ids
clients send; requests that match no route share the label ``<unmatched>``.

``/metrics`` names every tenant's partitions, so under ``--secure`` it answers
operators only: ``Authorization: Bearer <token>`` with the scrape token of
``--metrics-token-file`` (what Prometheus sends), or an administrator's
credentials as every admin route takes them. Anything else is 401. In open
mode it stays open, as every other route is.
"""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import errors
from ..metrics import CONTENT_TYPE, ControllerMetrics
from .http_middleware import HttpMiddleware
from .rest_auth import PresentedDep
from .rest_deps import AuthenticatorDep, SettingsDep

UNMATCHED = "<unmatched>"


def route_template(scope: Scope) -> str:
    route = scope.get("route")
    if isinstance(route, BaseRoute):
        path = getattr(route, "path", None)
        if isinstance(path, str):
            return path
    return UNMATCHED


class RequestMetricsMiddleware(HttpMiddleware):
    """Times every HTTP request and counts it by method, route template and status."""

    def __init__(self, app: ASGIApp, metrics: ControllerMetrics) -> None:
        super().__init__(app)
        self._metrics = metrics

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        metrics = self._metrics
        start = metrics.timer()
        status = 500  # what the client gets if the app raises before answering

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            metrics.observe_http(
                scope.get("method", ""), route_template(scope), status, metrics.timer() - start
            )


async def controller_metrics(request: Request) -> ControllerMetrics:
    """The app's :class:`ControllerMetrics` (FastAPI dependency)."""
    found: ControllerMetrics = request.app.state.metrics
    return found


def read_scrape_token(path: Path | None) -> str:
    """The token in ``path`` (read at each scrape, so a rotated file takes effect at once);
    "" when there is no file or it cannot be read."""
    if path is None:
        return ""
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return ""


async def metrics_reader(
    settings: SettingsDep, auth: AuthenticatorDep, credentials: PresentedDep
) -> None:
    """Let an operator read /metrics: anyone in open mode; under --secure the scrape
    token's bearer or an administrator (FastAPI dependency; Unauthenticated otherwise)."""
    if not settings.secure:
        return
    token = read_scrape_token(settings.metrics_token_file)
    bearer = credentials.bearer
    if bearer is not None and token:
        if hmac.compare_digest(bearer.credentials.strip().encode(), token.encode()):
            return
        if ":" not in bearer.credentials:  # a scrape token, and not this one
            raise errors.Unauthenticated(
                "the bearer token is not this controller's scrape token: use the content of"
                " --metrics-token-file (vpod up: DATA_DIR/metrics.token)"
            )
    if bearer is None and not credentials.user_id and not credentials.access_key:
        raise errors.Unauthenticated(
            "/metrics is for operators: send `Authorization: Bearer <scrape token>` (the"
            " file given to --metrics-token-file; vpod up: DATA_DIR/metrics.token) or an"
            " administrator's credentials"
        )
    await credentials.caller(auth, admin=True)


router = APIRouter(tags=["health"])


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {
            "content": {CONTENT_TYPE: {"schema": {"type": "string"}}},
            "description": "Prometheus text format.",
        },
        401: {"description": "Under --secure: no scrape token and no administrator."},
        403: {"description": "Under --secure: credentials of a user who is not an admin."},
    },
)
async def prometheus_metrics(
    metrics: Annotated[ControllerMetrics, Depends(controller_metrics)],
    _reader: Annotated[None, Depends(metrics_reader)],
) -> Response:
    """Request counts and latencies, state gauges and per-IPU telemetry (Prometheus text)."""
    await metrics.refresh_state()
    body = metrics.render() + await metrics.render_telemetry()
    return Response(body, media_type=CONTENT_TYPE)
