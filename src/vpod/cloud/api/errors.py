"""The cloud's errors as HTTP answers, for every route of the cloud API (by their kind,
through :mod:`vpod.wire.errors`, as the controller's API answers).

The body is the controller API's (``{"error": {"code", "message"}}``, see
docs/rest-api.md), so a script reads one shape from both APIs; ``code`` is
the gRPC status name of the same failure.

=====================  ====  =====================
cloud error            HTTP  code
=====================  ====  =====================
InvalidArgument        400   INVALID_ARGUMENT
Unauthenticated        401   UNAUTHENTICATED
PermissionDenied       403   PERMISSION_DENIED
NotFound               404   NOT_FOUND
AlreadyExists          409   ALREADY_EXISTS
NoCapacity             409   RESOURCE_EXHAUSTED
FailedPrecondition     409   FAILED_PRECONDITION
Unavailable            503   UNAVAILABLE
DriverError            503   UNAVAILABLE (a back end failed: the message says which)
=====================  ====  =====================

FastAPI registers exception handlers on the application, which the
controller owns, so the cloud maps its errors in its own route class
(:class:`CloudRoute`): every route of the cloud's routers, dependencies
(authentication) included, answers through :func:`cloud_error_response`.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from vpod.domain.errors import Fault
from vpod.wire import errors as wire_errors
from vpod.wire.rest.errors import documented_error

from ..model import errors


def cloud_error_response(exc: Fault) -> JSONResponse:
    status, body, headers = wire_errors.http_answer(exc)
    return JSONResponse(body, status_code=status, headers=headers)


def error_responses() -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of the cloud's routers: every error status they may answer."""
    described = {
        400: "The request is invalid (`INVALID_ARGUMENT`).",
        401: "The token is missing or wrong (`UNAUTHENTICATED`).",
        403: "The wrong kind of token for this route (`PERMISSION_DENIED`).",
        404: "No such object, or not the project's (`NOT_FOUND`).",
        409: "`ALREADY_EXISTS`, `RESOURCE_EXHAUSTED` (quota or capacity) or"
        " `FAILED_PRECONDITION` (state, busy).",
        413: "The request body is larger than the API takes (`REQUEST_TOO_LARGE`).",
        503: "A back end cannot be reached; retry (`UNAVAILABLE`).",
    }
    return {status: documented_error(text) for status, text in described.items()}


class CloudRoute(APIRoute):
    """A route whose cloud errors become HTTP answers by their kind."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handle_cloud_errors(request: Request) -> Response:
            try:
                return await handle(request)
            except errors.CloudError as exc:
                return cloud_error_response(exc)

        return handle_cloud_errors
