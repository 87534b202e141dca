"""Guards on the HTTP listener: idle and slow clients cannot pin connections forever.

uvicorn closes a kept-alive connection after ``timeout_keep_alive`` of
silence, but nothing else: a client that connects and sends nothing, or
sends its headers a byte at a time (slowloris), or stops in the middle of a
body, holds its connection (and file descriptor) for ever. The protocol
class that :func:`guarded_h11` returns extends uvicorn's h11 protocol with:

- a **header deadline**: a request's headers must be complete within
  ``header_timeout_s`` of the connection opening (or of the first byte after
  a kept-alive response), else the connection is closed;
- a **body idle timeout**: while a request body arrives, each chunk must
  follow the previous within ``body_timeout_s``;
- a **cap** on the listener's connections: at ``max_connections`` a new
  connection takes the place of the longest-waiting one that is not being
  served (idle, or stalled in its headers or body), so health checks and
  real clients still get in; when every connection is being served, the
  new one is closed. Each of these is logged as one rate-limited warning,
  not a line per connection.

The loop's own complaint when ``accept()`` fails for lack of file
descriptors is rate-limited the same way (:func:`quiet_accept_errors`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from ..listener_limits import HttpLimits

log = logging.getLogger("vpod.server")


class RateLimitedWarning:
    """One warning per ``interval_s`` at most, saying how many were held back meanwhile."""

    def __init__(self, interval_s: float = 60.0, clock: Callable[[], float] = time.monotonic):
        self._interval = interval_s
        self._clock = clock
        self._last: float | None = None
        self._held = 0

    def __call__(self, message: str, *args: object) -> None:
        now = self._clock()
        if self._last is not None and now - self._last < self._interval:
            self._held += 1
            return
        held, self._held, self._last = self._held, 0, now
        suffix = f" ({held} more like it in the last {self._interval:.0f} s)" if held else ""
        log.warning(message + suffix, *args)


def guarded_h11(limits: HttpLimits, warn: RateLimitedWarning | None = None) -> type[H11Protocol]:
    """An h11 protocol class enforcing ``limits`` (give it to uvicorn as ``http=``)."""
    warning = warn or RateLimitedWarning()

    class GuardedH11Protocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _deadline_kind = ""
        _since = 0.0
        _upgraded = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._since = time.monotonic()
            cap = limits.max_connections
            if cap and len(self.connections) > cap and not self._evict_one():
                warning(
                    "HTTP listener at its cap of %d connections, all being served: refusing"
                    " new ones (see docs/security.md, hostile connections)",
                    cap,
                )
                transport.abort()
                return
            self._arm("headers", limits.header_timeout_s)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if not self._upgraded:
                self._watch()

        def handle_websocket_upgrade(self, event: Any) -> None:
            # The connection is a WebSocket's from now on (its own pings watch it): no header
            # deadline of this protocol may close it.
            self._upgraded = True
            self._disarm()
            super().handle_websocket_upgrade(event)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._disarm()  # uvicorn's keep-alive timer takes over until the next byte
            self._since = time.monotonic()

        # -- what the connection is waiting for

        def _waiting_for_client(self) -> bool:
            cycle: Any = self.cycle
            return cycle is None or cycle.response_complete or cycle.more_body

        def _watch(self) -> None:
            cycle: Any = self.cycle
            if cycle is None or cycle.response_complete:
                if self._deadline_kind != "headers":  # the first byte of the next request
                    self._since = time.monotonic()
                    self._arm("headers", limits.header_timeout_s)
            elif cycle.more_body:
                self._arm("body", limits.body_timeout_s)  # again at every chunk
            else:
                self._disarm()  # the request is in; the application has it

        def _arm(self, kind: str, seconds: float) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline_kind = kind
            self._deadline = self.loop.call_later(seconds, self._expire, kind)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline, self._deadline_kind = None, ""

        def _expire(self, kind: str) -> None:
            self._deadline, self._deadline_kind = None, ""
            if self.transport.is_closing():
                return
            warning(
                "closing HTTP connections too slow to send their %s (%s: %.0f s)",
                "headers" if kind == "headers" else "request body",
                "header timeout" if kind == "headers" else "body idle timeout",
                limits.header_timeout_s if kind == "headers" else limits.body_timeout_s,
            )
            self.transport.abort()

        def _evict_one(self) -> bool:
            """Close the longest-waiting connection not being served; False if none is."""
            waiting = [
                c
                for c in self.connections
                if c is not self
                and isinstance(c, GuardedH11Protocol)
                and c._waiting_for_client()
                and not c.transport.is_closing()
            ]
            if not waiting:
                return False
            oldest = min(waiting, key=lambda c: c._since)
            warning(
                "HTTP listener at its cap of %d connections: closing the longest idle or"
                " stalled ones to admit new clients",
                limits.max_connections,
            )
            oldest.transport.abort()
            return True

    return GuardedH11Protocol


def quiet_accept_errors(loop: asyncio.AbstractEventLoop, warn: RateLimitedWarning) -> None:
    """Turn the loop's error per failed ``accept()`` (no file descriptors left) into one
    rate-limited warning; every other complaint goes where it went before."""
    previous = loop.get_exception_handler()

    def handler(the_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if "out of system resource" in str(context.get("message", "")):
            exc = context.get("exception")
            warn(
                "cannot accept connections: %s (the process is at its file-descriptor limit;"
                " retrying every second)",
                exc,
            )
            return
        if previous is not None:
            previous(the_loop, context)
        else:
            the_loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


__all__ = ["RateLimitedWarning", "guarded_h11", "quiet_accept_errors"]
