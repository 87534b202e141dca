"""The clients send a call the server refused before running it again, with bounded backoff.

A real ``grpc.aio`` server on loopback serves the V-IPU version and user
services with the limits a busy controller has: few HTTP/2 streams per
connection (gRPC's client does not queue above that limit, the server
refuses the stream: UNAVAILABLE, REFUSED_STREAM) or few concurrent calls
(RESOURCE_EXHAUSTED "Concurrent RPC limit exceeded"). Many calls in flight
on one client must all succeed; a refusal that is the server's answer
(no placement) and calls that must not be sent twice are not retried; and
a server that never takes the call costs a bounded number of attempts.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import grpc
import grpc.aio
import pytest

from vpod.client import AsyncUserClient, NoCapacity, RetryPolicy, UserClient
from vpod.client.config import Endpoint
from vpod.client.errors import VpodError
from vpod.client.grpc_transport import AsyncGrpcTransport, Diagnosis, Rpc
from vpod.client.retry import refused
from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire import virmgrpc_pb2_grpc as pb_grpc

IN_FLIGHT = 64
HANDLER_S = 0.02
FAST = RetryPolicy(max_attempts=60, base_s=0.005, cap_s=0.05, budget_s=20.0)
"""Many quick retries: the servers here refuse far more than a controller would."""


class Versions(pb_grpc.VersionServiceServicer):
    def __init__(self) -> None:
        self.calls = 0
        self.held: asyncio.Event | None = None
        """When set: each call waits for this event (a server that never frees a slot)."""

    async def GetVersion(self, request: Any, context: Any) -> pb.VersionReply:
        self.calls += 1
        if self.held is not None:
            await self.held.wait()
        await asyncio.sleep(HANDLER_S)
        return pb.VersionReply(version="1.18.0")


class Users(pb_grpc.UserServiceServicer):
    """Creates answer as the controller does when no placement fits."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    async def CreatePartition(self, request: Any, context: Any) -> pb.CreatePartitionReply:
        self.calls[request.requirements.id] += 1
        await context.abort(
            grpc.StatusCode.RESOURCE_EXHAUSTED, "no placement of 64 IPUs fits allocation a"
        )
        raise AssertionError("abort returns no reply")


@asynccontextmanager
async def busy_server(
    options: list[tuple[str, Any]], max_rpcs: int | None = None
) -> AsyncIterator[tuple[int, Versions, Users]]:
    server = grpc.aio.server(options=options, maximum_concurrent_rpcs=max_rpcs)
    versions, users = Versions(), Users()
    pb_grpc.add_VersionServiceServicer_to_server(versions, server)
    pb_grpc.add_UserServiceServicer_to_server(users, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield port, versions, users
    finally:
        await server.stop(None)


LIMITS = {
    "stream limit": ([("grpc.max_concurrent_streams", 4)], None),
    "concurrent call limit": ([], 4),
}


@pytest.mark.parametrize("limit", sorted(LIMITS))
def test_many_calls_in_flight_on_one_channel_all_succeed(limit: str) -> None:
    options, max_rpcs = LIMITS[limit]

    async def run() -> tuple[int, int]:
        async with busy_server(options, max_rpcs) as (port, versions, _):
            async with AsyncUserClient(Endpoint("127.0.0.1", port), retry=FAST) as vipu:
                answers = await asyncio.gather(*(vipu.version() for _ in range(IN_FLIGHT)))
            return sum(1 for a in answers if a.version == "1.18.0"), versions.calls

    answered, served = asyncio.run(run())
    assert answered == IN_FLIGHT
    assert served == IN_FLIGHT  # refusals never reached the handler: each call ran once


@contextmanager
def server_in_thread(options: list[tuple[str, Any]], max_rpcs: int | None) -> Iterator[int]:
    """The busy server on its own event loop, for the blocking client."""
    loop = asyncio.new_event_loop()
    started: asyncio.Future[int] = loop.create_future()
    stop = asyncio.Event()

    async def serve() -> None:
        async with busy_server(options, max_rpcs) as (port, _, _):
            started.set_result(port)
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    try:
        yield asyncio.run_coroutine_threadsafe(asyncio.wait_for(started, 10), loop).result()
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()


def test_blocking_client_retries_from_many_threads() -> None:
    with (
        server_in_thread([], 2) as port,
        UserClient(Endpoint("127.0.0.1", port), retry=FAST) as vipu,
    ):
        results: list[str | Exception] = []

        def call() -> None:
            try:
                results.append(vipu.version().version)
            except VpodError as exc:
                results.append(exc)

        threads = [threading.Thread(target=call) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert results == ["1.18.0"] * 16


def test_a_placement_refusal_is_the_answer_and_not_retried() -> None:
    async def run() -> tuple[VpodError, int]:
        async with busy_server([]) as (port, _, users):
            async with AsyncUserClient(Endpoint("127.0.0.1", port), retry=FAST) as vipu:
                with pytest.raises(NoCapacity) as caught:
                    await vipu.create_partition("big", 64)
            return caught.value, users.calls["big"]

    error, calls = asyncio.run(run())
    assert "no placement" in str(error)
    assert calls == 1


def test_a_call_that_must_not_repeat_sees_the_refusal_at_once() -> None:
    async def run() -> int:
        async with busy_server([], 1) as (port, versions, _):
            transport = AsyncGrpcTransport(Diagnosis(Endpoint("127.0.0.1", port)), FAST)
            once = Rpc(
                "/virmgrpc.VersionService/GetVersion",
                pb.VersionRequest(),
                pb.VersionReply,
                lambda reply: reply.version,
                idempotent=False,
            )
            outcomes = await asyncio.gather(
                *(transport.invoke(once) for _ in range(8)), return_exceptions=True
            )
            await transport.close()
            refusals = [o for o in outcomes if isinstance(o, VpodError)]
            assert all(o.code == "RESOURCE_EXHAUSTED" for o in refusals)
            assert versions.calls == len(outcomes) - len(refusals)
            return len(refusals)

    assert asyncio.run(run()) > 0


def test_a_server_that_never_takes_the_call_costs_a_bounded_budget() -> None:
    policy = RetryPolicy(max_attempts=5, base_s=0.01, cap_s=0.02, budget_s=5.0)

    async def run() -> tuple[float, int]:
        async with busy_server([], 1) as (port, versions, _):
            hold = versions.held = asyncio.Event()
            async with AsyncUserClient(Endpoint("127.0.0.1", port), retry=policy) as vipu:
                first = asyncio.create_task(vipu.version())
                while versions.calls == 0:
                    await asyncio.sleep(0.01)
                started = time.monotonic()
                with pytest.raises(VpodError) as caught:
                    await vipu.version()
                spent = time.monotonic() - started
                hold.set()
                await first
            assert caught.value.code == "RESOURCE_EXHAUSTED"
            return spent, versions.calls

    spent, calls = asyncio.run(run())
    assert calls == 1  # the held call only: the refused one never ran
    assert spent < policy.budget_s


def test_pauses_grow_jittered_and_stay_in_the_budget() -> None:
    policy = RetryPolicy(max_attempts=10, base_s=0.1, cap_s=1.0, budget_s=3.0)
    pauses = list(policy.pauses(rng=random.Random(7)))
    assert len(pauses) <= policy.max_attempts - 1
    assert sum(pauses) <= policy.budget_s + 1e-9
    assert all(0 <= p <= min(policy.cap_s, policy.base_s * 2**n) for n, p in enumerate(pauses))
    assert len(set(pauses)) > 1  # jittered: not one fixed pause
    assert sum(policy.pauses(budget_s=0.5, rng=random.Random(7))) <= 0.5 + 1e-9
    assert list(RetryPolicy(max_attempts=1).pauses()) == []


@pytest.mark.parametrize(
    ("code", "details", "expected"),
    [
        (
            "UNAVAILABLE",
            "Stream removed (RST_STREAM (Received RST_STREAM with error code 7))",
            True,
        ),
        ("RESOURCE_EXHAUSTED", "Concurrent RPC limit exceeded!", True),
        ("RESOURCE_EXHAUSTED", "no placement of 64 IPUs fits allocation a", False),
        ("UNAVAILABLE", "cannot reach agent ag3: connection refused", False),
        ("UNAVAILABLE", "failed to connect to all addresses", False),
        ("INVALID_ARGUMENT", "error code 7", False),
    ],
)
def test_only_refusals_before_the_call_ran_count(code: str, details: str, expected: bool) -> None:
    assert refused(grpc.StatusCode[code], details) is expected
