"""Credentials from gRPC metadata.

Clients send ``vipu-user-id`` and ``vipu-access-key`` metadata (the CLIs do it
from ``--api-user-id``/``--api-access-key``); without ``--secure`` they are
optional.

The caller's ``source`` (the audit log's "from where") is the peer address,
plus the common name of its client certificate when the endpoint runs with
mutual TLS (``vipu-server --tls-client-auth``).
"""

from __future__ import annotations

import grpc

from ..auth import Authenticator
from ..caller import Caller

USER_KEY = "vipu-user-id"
ACCESS_KEY = "vipu-access-key"


class GrpcAuthenticator:
    def __init__(self, auth: Authenticator) -> None:
        self._auth = auth

    async def user(self, context: grpc.aio.ServicerContext) -> Caller:
        return await self._caller(context, admin=False)

    async def admin(self, context: grpc.aio.ServicerContext) -> Caller:
        return await self._caller(context, admin=True)

    async def _caller(self, context: grpc.aio.ServicerContext, *, admin: bool) -> Caller:
        metadata = dict(context.invocation_metadata() or ())
        return await self._auth.caller(
            str(metadata.get(USER_KEY, "")),
            str(metadata.get(ACCESS_KEY, "")),
            source=grpc_source(context),
            admin=admin,
        )


def grpc_source(context: grpc.aio.ServicerContext) -> str:
    """``grpc:PEER``, and `` cn=NAME`` when the peer showed a client certificate."""
    source = f"grpc:{context.peer()}"
    names = (context.auth_context() or {}).get("x509_common_name") or []
    if names:
        name = names[0]
        text = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
        source += f" cn={text[:64]}"
    return source
