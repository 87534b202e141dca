"""How many connections each listener holds, from the process's file-descriptor limit.

A controller serves three listeners (user gRPC, admin gRPC, HTTP). If any
of them accepted connections until the process ran out of file descriptors,
the others (and the database, the agents' channels, the log) would fail
with it: ``/healthz`` and the admin API would stop answering. So at start
the soft ``RLIMIT_NOFILE`` is raised to the hard one, a reserve is kept for
everything else, and the rest is shared: half to HTTP, a quarter to each
gRPC listener. ``--max-connections N`` sets every listener's cap to N
instead (0: no caps, for measuring what they are worth).

gRPC listeners also get: ``grpc.max_allowed_incoming_connections`` (the
cap), a 10 s handshake deadline (a connection that never completes its
HTTP/2 preface or TLS handshake is closed), idle connections closed after 5
minutes (clients reconnect transparently), at most
``MAX_STREAMS_PER_CONNECTION`` concurrent streams per connection, and
keepalive enforcement (pings without data more often than every 10 s count
as strikes; two strikes close the connection).

The stream limit is not a throttle. gRPC's client does not queue calls
against the server's advertised limit: every stream above it is refused
(``UNAVAILABLE``, RST_STREAM REFUSED_STREAM), so a limit of 100 failed two
thirds of the calls of a client with 256 in flight on one channel. The
controller serves each call as a coroutine that waits on the store or the
agents, so thousands of streams per connection cost little; the limit stays
only to bound what one connection can hold, and ``vpod.client`` retries the
rare refusal (``vpod.client.retry``).
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from typing import Any

AUTO = -1
RESERVE_MIN = 128
MAX_STREAMS_PER_CONNECTION = 4096


@dataclass(frozen=True)
class HttpLimits:
    max_connections: int = 1000
    """Per listener; 0: no cap."""
    header_timeout_s: float = 10.0
    """A request's headers must be in within this of its first byte (or the connection)."""
    body_timeout_s: float = 30.0
    """Longest pause between two chunks of a request body."""
    keep_alive_s: float = 5.0
    """An idle kept-alive connection is closed after this."""


@dataclass(frozen=True)
class ListenerLimits:
    http: HttpLimits
    grpc_max_connections: int
    """Per gRPC listener; 0: no cap."""
    file_limit: int

    def grpc_options(self) -> list[tuple[str, Any]]:
        options: list[tuple[str, Any]] = [
            ("grpc.so_reuseport", 0),
            ("grpc.max_concurrent_streams", MAX_STREAMS_PER_CONNECTION),
            ("grpc.server_handshake_timeout_ms", 10_000),
            ("grpc.max_connection_idle_ms", 300_000),
            ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
            ("grpc.http2.max_ping_strikes", 2),
            ("grpc.keepalive_permit_without_calls", 1),
        ]
        if self.grpc_max_connections:
            options.append(("grpc.max_allowed_incoming_connections", self.grpc_max_connections))
        return options


def raise_file_limit() -> int:
    """Raise the soft limit on open files to the hard one; return the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return int(soft) if soft != resource.RLIM_INFINITY else 1 << 20


def listener_limits(max_connections: int = AUTO, file_limit: int | None = None) -> ListenerLimits:
    """Caps per listener: ``max_connections`` for each (0: none), or shared out of the
    file-descriptor limit (``AUTO``)."""
    limit = file_limit if file_limit is not None else raise_file_limit()
    if max_connections == AUTO:
        budget = max(limit - max(RESERVE_MIN, limit // 8), 16)
        http, grpc_each = max(budget // 2, 8), max(budget // 4, 4)
    else:
        http = grpc_each = max(max_connections, 0)
    return ListenerLimits(
        http=HttpLimits(max_connections=http), grpc_max_connections=grpc_each, file_limit=limit
    )


__all__ = [
    "AUTO",
    "MAX_STREAMS_PER_CONNECTION",
    "HttpLimits",
    "ListenerLimits",
    "listener_limits",
    "raise_file_limit",
]
