"""How a gRPC handler is written: it gets its caller, authenticated, and its errors become statuses.

A servicer method of the generated base takes ``(request, context)``; the
handlers of this API take ``(request, caller)`` instead. :func:`as_user` and
:func:`as_admin` read the caller from the call's metadata first (through the
servicer's ``auth``: UNAUTHENTICATED or PERMISSION_DENIED when it may not
call) and wrap the handler in :func:`.grpc_errors.grpc_errors`, so each
handler says only what it does.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

import grpc

from ..caller import Caller
from .auth import GrpcAuthenticator
from .grpc_errors import Handler, grpc_errors


class Authenticating(Protocol):
    """A servicer whose handlers are :func:`as_user` or :func:`as_admin`."""

    auth: GrpcAuthenticator


S = TypeVar("S", bound=Authenticating)
Req = TypeVar("Req")
Rep = TypeVar("Rep")
CallerHandler = Callable[[S, Req, Caller], Awaitable[Rep]]


def as_user(handler: CallerHandler[S, Req, Rep]) -> Handler[Rep]:
    """A servicer method that any user may call: ``handler`` with the authenticated caller."""
    return _authenticated(handler, admin=False)


def as_admin(handler: CallerHandler[S, Req, Rep]) -> Handler[Rep]:
    """A servicer method for administrators only (with ``--secure``)."""
    return _authenticated(handler, admin=True)


def _authenticated(handler: CallerHandler[S, Req, Rep], *, admin: bool) -> Handler[Rep]:
    @functools.wraps(handler)
    async def method(self: S, request: Req, context: grpc.aio.ServicerContext) -> Rep:
        caller = await (self.auth.admin(context) if admin else self.auth.user(context))
        return await handler(self, request, caller)

    return grpc_errors(method)
