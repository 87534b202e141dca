"""The one mapping from a :class:`~vpod.domain.errors.Fault` to each transport's answer.

A fault's kind is named as gRPC names its status codes, so gRPC takes it as it is;
HTTP answers with the status below and the body every vpod HTTP API shares::

    {"error": {"code": "NOT_FOUND", "message": "...", "details": [...]}}

``code`` is the gRPC status name of the same failure, so a script keeps one table for
both APIs. Every message is bounded (:func:`vpod.domain.excerpts.bounded`): one that
quotes a huge field in full would otherwise outgrow gRPC's metadata limit.

Decision: "does not fit" (RESOURCE_EXHAUSTED) is 409 Conflict, not 507: the request
conflicts with the pod's current occupancy and may succeed once something is
removed; ``code`` tells the 409s apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import grpc

from vpod.domain.errors import Fault, Kind
from vpod.domain.excerpts import bounded

HTTP_STATUS: Mapping[Kind, int] = MappingProxyType(
    {
        Kind.INVALID_ARGUMENT: 400,
        Kind.UNAUTHENTICATED: 401,
        Kind.PERMISSION_DENIED: 403,
        Kind.NOT_FOUND: 404,
        Kind.ALREADY_EXISTS: 409,
        Kind.RESOURCE_EXHAUSTED: 409,
        Kind.FAILED_PRECONDITION: 409,
        Kind.ABORTED: 409,
        Kind.INTERNAL: 500,
        Kind.UNAVAILABLE: 503,
        Kind.DEADLINE_EXCEEDED: 504,
    }
)
"""The HTTP status of each kind of fault."""

BEARER_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="vpod"'}


def grpc_status(fault: Fault) -> grpc.StatusCode:
    """The gRPC status code a fault is answered with."""
    return grpc.StatusCode[fault.kind.value]


def http_status(fault: Fault) -> tuple[int, str]:
    """The HTTP status and error code a fault is answered with."""
    return HTTP_STATUS[fault.kind], fault.kind.value


def error_body(code: str, message: str, details: Sequence[Any] = ()) -> dict[str, Any]:
    """The JSON body of every HTTP error answer (the message bounded)."""
    return {"error": {"code": code, "message": bounded(message), "details": list(details)}}


def http_answer(fault: Fault) -> tuple[int, dict[str, Any], dict[str, str] | None]:
    """Status, body and headers of the HTTP answer to a fault (a challenge with 401)."""
    status, code = http_status(fault)
    return status, error_body(code, str(fault)), dict(BEARER_CHALLENGE) if status == 401 else None


__all__ = ["HTTP_STATUS", "error_body", "grpc_status", "http_answer", "http_status"]
