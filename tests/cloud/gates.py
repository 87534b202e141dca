"""A compute driver whose chosen call stops at a gate (a task caught in the middle) or fails.

``hold("create_server")`` makes the next ``create_server`` wait until the
test opens the gate (or the controller stops, which cancels the wait, as a
restart would); later calls pass straight through to the local driver.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from vpod.cloud.drivers import (
    DriverError,
    LocalCompute,
    ServerSetup,
    ServerSpec,
    SetupResult,
    ShellAccess,
    TemporaryDriverError,
)

WAIT_S = 60.0


class Gate:
    def __init__(self) -> None:
        self.entered = threading.Event()
        self._opened = threading.Event()
        self._event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def wait(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        if self._opened.is_set():
            return
        self.entered.set()
        await self._event.wait()

    def wait_entered(self) -> None:
        assert self.entered.wait(WAIT_S), "the task never reached the gate"

    def open(self) -> None:
        self._opened.set()
        if self._loop is not None and self._event is not None:
            self._loop.call_soon_threadsafe(self._event.set)


class GatedCompute:
    name = "gated-local"

    def __init__(self, inner: LocalCompute) -> None:
        self.inner = inner
        self._gates: dict[str, Gate] = {}
        self._failures: dict[str, list[DriverError]] = {}
        self.calls: dict[str, int] = {}
        """How many times each gated method was called, failed calls included."""

    def hold(self, method: str) -> Gate:
        gate = self._gates[method] = Gate()
        return gate

    def fail_next(
        self, method: str, message: str, *, temporary: bool = False, times: int = 1
    ) -> None:
        """The next ``times`` calls of ``method`` raise DriverError(message), or
        TemporaryDriverError(message) if ``temporary``."""
        kind = TemporaryDriverError if temporary else DriverError
        self._failures[method] = [kind(message) for _ in range(times)]

    async def _through(self, method: str) -> None:
        self.calls[method] = self.calls.get(method, 0) + 1
        failures = self._failures.get(method)
        if failures:
            raise failures.pop()
        gate = self._gates.pop(method, None)
        if gate is not None:
            await gate.wait()

    async def create_server(self, spec: ServerSpec) -> None:
        await self._through("create_server")
        await self.inner.create_server(spec)

    async def delete_server(self, server_id: str) -> None:
        await self._through("delete_server")
        await self.inner.delete_server(server_id)

    async def shelve(self, server_id: str) -> None:
        await self._through("shelve")
        await self.inner.shelve(server_id)

    async def unshelve(self, server_id: str) -> None:
        await self._through("unshelve")
        await self.inner.unshelve(server_id)

    async def stop(self, server_id: str) -> None:
        await self.inner.stop(server_id)

    async def start(self, server_id: str) -> None:
        await self.inner.start(server_id)

    async def rebuild(self, server_id: str, image: str) -> None:
        await self._through("rebuild")
        await self.inner.rebuild(server_id, image)

    async def reboot(self, server_id: str) -> None:
        await self.inner.reboot(server_id)

    async def setup(self, server_id: str, setup: ServerSetup) -> SetupResult:
        return await self.inner.setup(server_id, setup)

    async def shell(self, server_id: str) -> ShellAccess:
        return await self.inner.shell(server_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
