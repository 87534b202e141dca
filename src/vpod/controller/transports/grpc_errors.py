"""Service errors as gRPC answers: the status of their kind (:mod:`vpod.wire.errors`).

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
from vpod.wire.errors import grpc_status

from .. import errors

log = logging.getLogger("vpod.grpc")

STATUS: dict[type[errors.ServiceError], grpc.StatusCode] = {
    cls: grpc.StatusCode[cls.kind.value] for cls in errors.KINDS
}
"""Each service error's status, as :func:`vpod.wire.errors.grpc_status` answers it."""

R = TypeVar("R")
Handler = Callable[[Any, Any, grpc.aio.ServicerContext], Awaitable[R]]


def grpc_errors(handler: Handler[R]) -> Handler[R]:
    """Turn service errors into status codes with their sentence; log bugs."""

    @functools.wraps(handler)
    async def wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext) -> R:
        try:
            return await handler(self, request, context)
        except errors.ServiceError as exc:
            await context.abort(grpc_status(exc), bounded(str(exc)))
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
