"""The controller's HTTP API: REST/JSON over the same use-cases as the gRPC APIs.

:func:`create_http_app` builds one FastAPI application per controller (no
module-level app, no global registry). It serves:

- ``/api/v1/...``        the user API (:mod:`.rest_user`);
- ``/api/v1/admin/...``  the admin API (:mod:`.rest_admin`);
- ``/healthz``, ``/readyz`` liveness and readiness (:mod:`.http_health`);
- ``/metrics``           Prometheus metrics (:mod:`.http_metrics`, :mod:`..metrics`);
- ``/openapi.json`` and ``/docs``, generated from the Pydantic models.

Answers of 1 KiB or more are gzip-compressed for clients that send
``Accept-Encoding: gzip`` (server-sent events never are).

Credentials travel in headers (:mod:`.rest_auth`); errors are JSON with one
status mapping (:mod:`.rest_errors`). ``docs/rest-api.md`` shows every
endpoint with curl.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.middleware.gzip import GZipMiddleware

from vpod.wire.rest.errors import error_components

from ..metrics import ControllerMetrics
from ..telemetry import TelemetryExporter
from . import (
    http_docs,
    http_health,
    http_metrics,
    rest_admin,
    rest_admin_agent_tokens,
    rest_console,
    rest_partition_keys,
    rest_user,
    telemetry_rest,
)
from .http_docs import ASSETS_URL, docs_assets
from .http_health import Readiness
from .http_limits import BodyLimitMiddleware
from .http_metrics import RequestMetricsMiddleware
from .rest_deps import HttpUseCases
from .rest_errors import install_error_handlers

TITLE = "vpod controller API"
DESCRIPTION = """\
REST/JSON API of a V-IPU-compatible controller: partitions, allocations and IPU
attributes for users; agents, clusters, allocations, users and faults for
administrators (`/api/v1/admin`). The same operations as the V-IPU gRPC user API and
the vpod admin gRPC API.

Credentials (when the controller runs with `--secure`): `X-Vipu-User-Id` and
`X-Vipu-Access-Key` headers, or `Authorization: Bearer USER:KEY`.

Errors: `{"error": {"code": "NOT_FOUND", "message": "..."}}` with `code` the gRPC status
name of the failure; 400 bad request, 401 credentials, 403 not an admin, 404 unknown id,
409 conflicts with the current state (`ALREADY_EXISTS`, `RESOURCE_EXHAUSTED`: does not
fit, `FAILED_PRECONDITION`), 503 agents or database unreachable.
"""

API_VERSION = "1"
GZIP_MINIMUM_BYTES = 1024
"""Smaller answers go as they are: compressing them would save less than it costs."""


def create_http_app(
    use_cases: HttpUseCases,
    *,
    readiness: Readiness | None = None,
    metrics: ControllerMetrics | None = None,
) -> FastAPI:
    """The HTTP application over ``use_cases`` (a :class:`~vpod.controller.app.Controller`).

    ``readiness`` names the components ``/readyz`` waits for (default: none
    but the store); ``metrics`` is the controller's metrics, shared with the
    gRPC servers so one ``/metrics`` shows both (default: a new registry).
    The routers are module-level (:mod:`.rest_user`, :mod:`.rest_admin`,
    :mod:`.http_health`, :mod:`.http_metrics`); their dependencies find the
    use-cases, the readiness and the metrics on ``app.state`` (``use_cases``,
    ``readiness``, ``metrics``).
    """
    readiness = readiness if readiness is not None else Readiness()
    if metrics is None:
        metrics = ControllerMetrics(
            use_cases.status.state, telemetry=TelemetryExporter(use_cases.telemetry)
        )

    app = FastAPI(
        title=TITLE,
        description=DESCRIPTION,
        version=f"{API_VERSION} (V-IPU {use_cases.settings.api_version})",
        docs_url=None,  # served by http_docs, with local assets
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.use_cases = use_cases
    app.state.readiness = readiness
    app.state.metrics = metrics

    install_error_handlers(app)
    app.add_middleware(RequestMetricsMiddleware, metrics=metrics)
    app.add_middleware(BodyLimitMiddleware)
    # Answers of GZIP_MINIMUM_BYTES or more go gzip-compressed to clients that accept it (the
    # pod map of a pod4096 is ~570 KB of JSON); event streams are never buffered for it.
    app.add_middleware(GZipMiddleware, minimum_size=GZIP_MINIMUM_BYTES)

    app.include_router(rest_user.router)
    app.include_router(rest_admin.router)
    app.include_router(rest_admin_agent_tokens.router)
    app.include_router(rest_partition_keys.router)
    app.include_router(telemetry_rest.router)
    app.include_router(rest_console.router)
    app.include_router(http_health.router)
    app.include_router(http_metrics.router)
    app.include_router(http_docs.router)
    app.mount(ASSETS_URL, docs_assets(), name="docs-assets")

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            # The error answers name their body by reference (rest_errors.error_responses).
            schemas = document.setdefault("components", {}).setdefault("schemas", {})
            for name, schema in error_components().items():
                schemas.setdefault(name, schema)
            document["components"]["schemas"] = dict(sorted(schemas.items()))
            app.openapi_schema = _without_422(document)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def _without_422(document: dict[str, Any]) -> dict[str, Any]:
    """Drop FastAPI's automatic 422 responses: invalid requests are 400 here (see rest_errors)."""
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict):
                operation.get("responses", {}).pop("422", None)
    schemas = document.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    return document


__all__ = ["Readiness", "create_http_app"]
