"""Agents obey only their controller: the agent key and the check of every call.

Each agent has a key: a random secret made when the agent starts, or the one
an operator gave it (``vipu-agent --key-file``). The agent tells its
controller the key when it registers (``RegisterAgentRequest.agent_key``,
under ``--secure`` only with a registration token bound to the agent id); an
agent an administrator adds by address is given the same file
(``vipu-admin create agent ... --key-file``). The controller keeps the key in
its store, so every replica and every restart presents it, as metadata
``vipu-agent-key``, on every call. :class:`ControllerKeyCheck` refuses any
call without the right key with ``UNAUTHENTICATED`` before the call's
handler runs, so a refused call changes nothing. The check sits in front of
the whole service, so an rpc added later is covered too. See
docs/adr/0002-agent-credentials.md.
"""

from __future__ import annotations

import hmac
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc

KEY_METADATA = "vipu-agent-key"
"""gRPC metadata that carries the agent key on each call to an agent."""

_KEY = re.compile(r"[A-Za-z0-9_\-.~+/=]{32,256}")


def new_agent_key() -> str:
    """A fresh random agent key (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def check_agent_key(key: str, *, source: str = "the agent key") -> str:
    """The key, or ValueError saying what a usable key looks like."""
    if not _KEY.fullmatch(key):
        raise ValueError(
            f"{source} must be 32 to 256 characters of letters, digits and -_.~+/="
            " (make one with: openssl rand -hex 32)"
        )
    return key


def read_agent_key(path: Path) -> str:
    """The key in ``path`` (surrounding whitespace ignored); ValueError says what is wrong."""
    try:
        text = path.read_text().strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not text"
        raise ValueError(f"cannot read the agent key file {path}: {reason}") from None
    return check_agent_key(text, source=f"the agent key in {path}")


def key_matches(presented: str, key: str) -> bool:
    """Constant-time comparison; an empty key matches nothing."""
    return bool(key) and hmac.compare_digest(presented.encode(), key.encode())


def _presented_key(details: grpc.HandlerCallDetails) -> str:
    for name, value in getattr(details, "invocation_metadata", None) or ():
        if name == KEY_METADATA:
            return value if isinstance(value, str) else value.decode("utf-8", "replace")
    return ""


class ControllerKeyCheck(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Lets a call through only when it carries the agent's key; refuses it otherwise."""

    def __init__(self, agent_id: str, key: str) -> None:
        self._agent_id = agent_id
        self._key = key

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or key_matches(_presented_key(handler_call_details), self._key):
            return handler
        return _refusing(handler, self._sentence())

    def _sentence(self) -> str:
        return (
            f"agent {self._agent_id} answers only its controller: the call did not carry this"
            f" agent's key (metadata {KEY_METADATA}); the controller learns it when the agent"
            " registers, or from `vipu-admin create agent --key-file`"
        )


def _refusing(handler: grpc.RpcMethodHandler, sentence: str) -> grpc.RpcMethodHandler:
    """A handler of the same shape that answers UNAUTHENTICATED and runs nothing else."""
    code = grpc.StatusCode.UNAUTHENTICATED

    async def unary(_request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(code, sentence)

    async def stream(_request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        await context.abort(code, sentence)
        yield  # pragma: no cover  (makes this an async generator)

    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(
            unary,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(
            stream,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(
            unary,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    return grpc.stream_stream_rpc_method_handler(
        stream,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )
