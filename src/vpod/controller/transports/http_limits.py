"""A cap on HTTP request bodies, before any route reads them.

Every JSON body this API takes is small (a partition's requirements, a
cluster's description: a few KiB). A caller sending megabytes, or a chunked
body that never ends, is answered ``413`` with a sentence as soon as the
declared length or the bytes received pass :data:`MAX_BODY_BYTES`, and the
rest is not read into memory.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .http_middleware import HttpMiddleware
from .rest_errors import error_response

MAX_BODY_BYTES = 1 << 20
"""1 MiB: hundreds of times the largest request the API documents."""


def _too_large(limit: int) -> str:
    return f"the request body is larger than {limit} bytes: this API takes small JSON bodies"


class BodyLimitMiddleware(HttpMiddleware):
    """Refuse bodies longer than ``limit`` bytes with 413 PAYLOAD_TOO_LARGE."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        super().__init__(app)
        self.limit = limit

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None:
            try:
                length = int(declared)
            except ValueError:
                length = -1
            if length < 0 or length > self.limit:
                await self._refuse(scope, receive, send, length)
                return
            await self.app(scope, receive, send)
            return
        # No length declared (chunked): read the body here, up to the limit, then replay it.
        chunks: list[bytes] = []
        received = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            received += len(chunk)
            if received > self.limit:
                await self._refuse(scope, receive, send, received)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, length: int) -> None:
        if length < 0:
            response = error_response(
                400, "INVALID_ARGUMENT", "the Content-Length header is not a length in bytes"
            )
        else:
            response = error_response(413, "REQUEST_TOO_LARGE", _too_large(self.limit))
        response.headers["Connection"] = "close"
        await response(scope, receive, send)


__all__ = ["MAX_BODY_BYTES", "BodyLimitMiddleware"]
