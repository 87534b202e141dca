"""Retrying the calls a busy server refused before running them.

A controller under load may turn a call away before any of its code runs:
HTTP/2 refuses a stream above the connection's stream limit (``UNAVAILABLE``
"RST_STREAM ... error code 7", REFUSED_STREAM), and a server at its limit of
concurrent calls answers ``RESOURCE_EXHAUSTED`` "Concurrent RPC limit
exceeded". Neither did anything, so the call is sent again after a jittered
exponential backoff ("full jitter": a random pause up to ``base * 2**n``,
capped), within a bounded budget of attempts and seconds; a caller only sees
the refusal when the budget is spent.

Only calls that may be repeated are retried (:attr:`Rpc.idempotent`): reads,
and creates, which V-IPU makes idempotent by id (a repeated create with the
same id and shape returns the existing partition). A placement refusal
(``RESOURCE_EXHAUSTED`` "no placement ...") is the server's answer, not a
refusal to run the call, and is never retried.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

import grpc

REFUSED_STREAM_FRAGMENTS = ("REFUSED_STREAM", "error code 7")
"""gRPC core's details for a stream the server's HTTP/2 layer refused."""
FULL_SERVER_FRAGMENTS = ("Concurrent RPC limit exceeded",)
"""gRPC's details when the server is at ``maximum_concurrent_rpcs``."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a refused call."""

    max_attempts: int = 8
    """Attempts in all, the first included; 1: never retry."""
    base_s: float = 0.05
    """The first pause's upper bound; each further pause's bound doubles."""
    cap_s: float = 2.0
    """No pause is longer than this."""
    budget_s: float = 10.0
    """Pauses in all stop here (and at the call's own timeout, whichever is shorter)."""

    def pauses(
        self, budget_s: float | None = None, rng: random.Random | None = None
    ) -> Iterator[float]:
        """The pause before each retry: at most ``max_attempts - 1``, summing to at most the
        budget (``budget_s`` when it is shorter than the policy's)."""
        draw = (rng or random).uniform
        left = self.budget_s if budget_s is None else min(self.budget_s, budget_s)
        for attempt in range(self.max_attempts - 1):
            if left <= 0:
                return
            pause = min(draw(0.0, self.base_s * (2**attempt)), self.cap_s, left)
            left -= pause
            yield pause


DEFAULT_RETRY = RetryPolicy()
NO_RETRY = RetryPolicy(max_attempts=1)


def refused(code: grpc.StatusCode, details: str) -> bool:
    """True when the server turned the call away before running it (safe to send again)."""
    if code is grpc.StatusCode.UNAVAILABLE:
        return any(fragment in details for fragment in REFUSED_STREAM_FRAGMENTS)
    if code is grpc.StatusCode.RESOURCE_EXHAUSTED:
        return any(fragment in details for fragment in FULL_SERVER_FRAGMENTS)
    return False


__all__ = ["DEFAULT_RETRY", "NO_RETRY", "RetryPolicy", "refused"]
