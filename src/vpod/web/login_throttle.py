"""Backoff for wrong credentials at the console's login: per source and per principal.

Guessing keys through ``POST /web/session`` costs time: after
:data:`FREE_FAILURES` failed logins in a row, each further attempt has to
wait, twice as long after every failure (1 s, 2 s, 4 s ... up to
:data:`MAX_WAIT_S`); meanwhile the login is answered 429 with
``Retry-After``, before any credential is checked. Two keys are counted
apart:

- the *source* (the client's address): one machine guessing any number of
  user ids or tokens;
- the *principal* tried (a V-IPU user id, or a cloud token's id): many
  machines guessing one key. Its wait is capped lower
  (:data:`MAX_PRINCIPAL_WAIT_S`), so that guessers cannot keep its owner out
  for long.

A login succeeds only with the right key, which clears both counts; nothing
about one source or principal delays another: a correct login by someone
else, from another source, is never slowed. Counts of keys nobody tried for
:data:`FORGET_AFTER_S` are forgotten, and at most :data:`MAX_TRACKED` keys
are kept (the quietest dropped first), so the table cannot grow without end.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

FREE_FAILURES = 5
FIRST_WAIT_S = 1.0
MAX_WAIT_S = 300.0
MAX_PRINCIPAL_WAIT_S = 60.0
FORGET_AFTER_S = 3600.0
MAX_TRACKED = 100_000


@dataclass
class _Count:
    failures: int
    last: float
    until: float


class LoginThrottle:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._counts: dict[str, _Count] = {}

    def retry_after(self, source: str, principal: str) -> int:
        """Whole seconds before ``principal`` may try to log in from ``source``; 0: now."""
        now = self._clock()
        wait = 0.0
        for key in (_source(source), _principal(principal)):
            count = self._counts.get(key)
            if count is not None:
                wait = max(wait, count.until - now)
        return math.ceil(wait) if wait > 0 else 0

    def failed(self, source: str, principal: str) -> None:
        now = self._clock()
        self._forget(now)
        keys = ((_source(source), MAX_WAIT_S), (_principal(principal), MAX_PRINCIPAL_WAIT_S))
        for key, cap in keys:
            if key.endswith(":"):
                continue  # no principal named (open mode): the source alone counts
            count = self._counts.setdefault(key, _Count(0, now, now))
            count.failures += 1
            count.last = now
            beyond = count.failures - FREE_FAILURES
            if beyond > 0:
                count.until = now + min(cap, FIRST_WAIT_S * 2 ** min(beyond - 1, 30))

    def succeeded(self, source: str, principal: str) -> None:
        self._counts.pop(_source(source), None)
        self._counts.pop(_principal(principal), None)

    def _forget(self, now: float) -> None:
        if len(self._counts) < MAX_TRACKED and len(self._counts) % 1024:
            return
        stale = [k for k, c in self._counts.items() if now - c.last > FORGET_AFTER_S]
        for key in stale:
            del self._counts[key]
        while len(self._counts) >= MAX_TRACKED:
            quietest = min(self._counts, key=lambda k: self._counts[k].last)
            del self._counts[quietest]


def _source(source: str) -> str:
    return f"source:{source}"


def _principal(principal: str) -> str:
    return f"principal:{principal}"
