"""Waiting for a partition to become ACTIVE: one procedure for every client of the user API.

The gRPC user clients and the REST clients, blocking or asyncio, declare
``wait_until_active = api_call(WaitUntilActive(calls.partition_status))`` with
their own status call; :mod:`.api_methods` runs the polling.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .api_methods import CallDescription, Pause, Procedure
from .errors import Timeout
from .records import PartitionStatus
from .user_calls import POLL_S, WAIT_TIMEOUT_S, not_active, settled


class WaitUntilActive:
    """Poll until the partition is ACTIVE; `Timeout` after ``timeout`` s, `FailedPrecondition`
    when it goes to ERROR."""

    def __init__(self, status: Callable[[str], CallDescription[PartitionStatus]]) -> None:
        self._status = status

    def __call__(
        self, partition_id: str, *, timeout: float = WAIT_TIMEOUT_S, poll: float = POLL_S
    ) -> Procedure[PartitionStatus]:
        deadline = time.monotonic() + timeout
        status: PartitionStatus | None = None
        while time.monotonic() < deadline:
            status = yield self._status(partition_id)
            if settled(status, partition_id):
                return status
            yield Pause(poll)
        raise Timeout(not_active(partition_id, timeout, status))
