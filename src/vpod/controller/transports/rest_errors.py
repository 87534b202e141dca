"""Errors as HTTP answers: faults by their kind (:mod:`vpod.wire.errors`), invalid requests,
unknown routes and bugs, all in the one JSON error body.

Every error the HTTP API returns has the body
``{"error": {"code": "NOT_FOUND", "message": "...", "details": [...]}}``:
``code`` is the gRPC status name of the same failure (so scripts can share
one table between the two APIs), ``message`` a sentence a person can act on,
``details`` (optional) one entry per invalid field of a request.

=====================  ====  =====================  ==================================
service error          HTTP  code                   when
=====================  ====  =====================  ==================================
InvalidArgument        400   INVALID_ARGUMENT       bad size, spec, name or request
NotFound               404   NOT_FOUND              unknown id (or not yours)
AlreadyExists          409   ALREADY_EXISTS         duplicate id
NoCapacity             409   RESOURCE_EXHAUSTED     no placement fits
FailedPrecondition     409   FAILED_PRECONDITION    the state forbids it
Unauthenticated        401   UNAUTHENTICATED        missing or wrong credentials
PermissionDenied       403   PERMISSION_DENIED      not an administrator
Unavailable            503   UNAVAILABLE            agents or database unreachable
=====================  ====  =====================  ==================================

Decision: "does not fit" is 409 Conflict, not 507 Insufficient Storage: the
request conflicts with the current occupancy of the pod and may succeed
once other partitions are removed, which is what 409 says; 507 is WebDAV's
"the server cannot store the representation". ``code`` tells the two 409s
apart.

Request validation errors (wrong types, missing fields, malformed JSON,
values out of range) are 400 INVALID_ARGUMENT too, not FastAPI's 422, so a
client sees one status for every "fix your request". Anything unexpected is
a 500 INTERNAL whose message points at the controller's log; it is a bug.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from vpod.domain.errors import Fault
from vpod.domain.excerpts import bounded, excerpt
from vpod.wire import errors as wire_errors
from vpod.wire.rest.errors import FieldProblem, documented_error

from .. import errors

log = logging.getLogger("vpod.http")

HTTP_STATUS: dict[type[errors.ServiceError], tuple[int, str]] = {
    cls: (wire_errors.HTTP_STATUS[cls.kind], cls.kind.value) for cls in errors.KINDS
}
"""Each service error's status and code, as :func:`vpod.wire.errors.http_status` answers."""

_CODE_OF_STATUS: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    406: "NOT_ACCEPTABLE",
    409: "FAILED_PRECONDITION",
    413: "REQUEST_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    503: "UNAVAILABLE",
}

INTERNAL_MESSAGE = "internal error in the controller: see its log; the request may be retried"


def status_of(exc: errors.ServiceError) -> tuple[int, str]:
    """The HTTP status and error code of a service error (by its kind)."""
    return wire_errors.http_status(exc)


def error_response(
    status: int,
    code: str,
    message: str,
    *,
    details: Sequence[FieldProblem] = (),
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    # the last guard: no message grows with what the caller sent (error_body bounds the message)
    problems = [{"location": bounded(p.location), "message": bounded(p.message)} for p in details]
    body = wire_errors.error_body(code, message, problems)
    return JSONResponse(body, status_code=status, headers=headers)


def service_error_response(exc: Fault) -> JSONResponse:
    """The answer to any fault (the service's, or one a use-case let through)."""
    status, body, headers = wire_errors.http_answer(exc)
    return JSONResponse(body, status_code=status, headers=headers)


def _location(loc: Sequence[Any]) -> str:
    return ".".join(str(part) for part in loc) or "request"


def validation_problems(exc: RequestValidationError) -> list[FieldProblem]:
    """One problem per error; fields the API does not define first, so the message (which
    shows the first few) always names them."""
    problems = []
    unknown = []
    for error in exc.errors():
        message = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
        if error.get("type") == "json_invalid":
            message = "the body is not valid JSON: " + str(
                (error.get("ctx") or {}).get("error", message)
            )
        location = _location(error.get("loc", ()))
        if error.get("type") == "extra_forbidden":
            unknown.append(
                FieldProblem(
                    location=location,
                    message=f"{message}: the API defines no such field; remove it",
                )
            )
            continue
        problems.append(FieldProblem(location=location, message=message))
    return unknown + problems


def validation_message(problems: Sequence[FieldProblem]) -> str:
    shown = "; ".join(f"{p.location}: {p.message}" for p in problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return f"invalid request: {shown}{more}; see /docs for the expected shape"


_UNREADABLE_BODY = "There was an error parsing the body"
"""FastAPI's own refusal of a body it could not read at all (bytes that are not UTF-8, a
form it cannot parse), raised from the cause: it names neither the cause nor the fix, so
the answer says both instead."""


def install_error_handlers(app: FastAPI) -> None:
    """Route every failure through the mapping above."""

    async def on_fault(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, Fault)
        return service_error_response(exc)

    async def on_invalid_request(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        problems = validation_problems(exc)
        return error_response(
            400, "INVALID_ARGUMENT", validation_message(problems), details=problems
        )

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        status = exc.status_code
        code = _CODE_OF_STATUS.get(status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT")
        if status == 404 and exc.detail == "Not Found":
            message = (
                f"there is no endpoint {request.url.path}: see /docs for the endpoints of this API"
            )
        elif status == 405:
            message = (
                f"{request.method} is not allowed on {request.url.path}: see /docs for the"
                " methods it takes"
            )
        elif status == 400 and exc.detail == _UNREADABLE_BODY and exc.__cause__ is not None:
            message = (
                f"the request body could not be read ({excerpt(exc.__cause__)}): send a JSON"
                " object encoded as UTF-8; see /docs for the expected shape"
            )
        else:
            message = str(exc.detail)
        return error_response(status, code, message, headers=dict(exc.headers or {}) or None)

    async def on_bug(request: Request, exc: Exception) -> JSONResponse:
        log.error("internal error serving %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(500, "INTERNAL", INTERNAL_MESSAGE)

    app.add_exception_handler(Fault, on_fault)
    app.add_exception_handler(RequestValidationError, on_invalid_request)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(Exception, on_bug)


ERROR_STATUSES: tuple[int, ...] = (400, 401, 403, 404, 409, 503)


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of a route: the error statuses it may return, documented. 400 is
    always among them: any route refuses a malformed path, query or header with it."""
    described = {
        400: "The request is invalid (`INVALID_ARGUMENT`).",
        401: "Credentials are missing or wrong (`UNAUTHENTICATED`).",
        403: "The caller may not do this (`PERMISSION_DENIED`).",
        404: "No such object, or not visible to the caller (`NOT_FOUND`).",
        409: "Conflicts with the current state: `ALREADY_EXISTS`, `RESOURCE_EXHAUSTED`"
        " (no placement fits) or `FAILED_PRECONDITION`.",
        413: "The request body is larger than the API takes (`REQUEST_TOO_LARGE`).",
        503: "Agents or the database cannot be reached (`UNAVAILABLE`).",
    }
    return {
        status: documented_error(described[status])
        for status in sorted({400, *(statuses or ERROR_STATUSES)})
    }
