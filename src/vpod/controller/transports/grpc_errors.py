"""The one mapping from service errors to gRPC status codes.

Every message is bounded (:func:`vpod.domain.excerpts.bounded`): one that
quotes a huge field in full would otherwise outgrow gRPC's metadata limit
and reach the caller as another status.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc

from vpod.domain.excerpts import bounded

from .. import errors

log = logging.getLogger("vpod.grpc")

STATUS: dict[type[errors.ServiceError], grpc.StatusCode] = {
    errors.InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    errors.NotFound: grpc.StatusCode.NOT_FOUND,
    errors.AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
    errors.NoCapacity: grpc.StatusCode.RESOURCE_EXHAUSTED,
    errors.FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    errors.Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
    errors.PermissionDenied: grpc.StatusCode.PERMISSION_DENIED,
    errors.Unavailable: grpc.StatusCode.UNAVAILABLE,
}

R = TypeVar("R")
Handler = Callable[[Any, Any, grpc.aio.ServicerContext], Awaitable[R]]


def status_of(exc: errors.ServiceError) -> grpc.StatusCode:
    for kind in type(exc).__mro__:
        if kind in STATUS:
            return STATUS[kind]
    return grpc.StatusCode.INTERNAL


def grpc_errors(handler: Handler[R]) -> Handler[R]:
    """Turn service errors into status codes with their sentence; log bugs."""

    @functools.wraps(handler)
    async def wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext) -> R:
        try:
            return await handler(self, request, context)
        except errors.ServiceError as exc:
            await context.abort(status_of(exc), bounded(str(exc)))
        except grpc.aio.AbortError:
            raise
        except Exception:
            log.exception("internal error in %s", handler.__name__)
            await context.abort(
                grpc.StatusCode.INTERNAL,
                "internal error in the controller: see its log; the request may be retried",
            )
        raise AssertionError("unreachable")  # context.abort always raises

    return wrapper
