"""Load a controller can serve is queued, not refused: many calls in flight on one channel.

A real ``vipu-server`` (SQLite) and one ``vipu-agent`` process hosting an
emulated POD16. Plain generated stubs on one ``grpc.aio`` channel (no retry
of any kind, as any V-IPU client) keep hundreds of calls in flight at once:
reads of every kind, and creates and removes that all fit the pod. Every call
must succeed: the server's HTTP/2 settings must not refuse streams a
well-behaved client opens (gRPC's client does not queue above the server's
stream limit, it sends and is refused: UNAVAILABLE, REFUSED_STREAM).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator

import grpc
import grpc.aio
import pytest

from tests.faults.live import LivePod, build_pod
from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire import virmgrpc_pb2_grpc as pb_grpc

READERS = 256
CREATORS = 16
"""One IPU each: every create fits the POD16 at once, so any failure is a refusal of load."""
ROUNDS = 3
TIMEOUT_S = 60.0

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def pod16(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LivePod]:
    workdir = tmp_path_factory.mktemp("load")
    pod = build_pod(workdir, f"sqlite:///{workdir / 'vpod.db'}", machines=4, agents_per_process=4)
    try:
        yield pod
    finally:
        pod.close()


async def _load(port: int) -> Counter[str]:
    outcomes: Counter[str] = Counter()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        users = pb_grpc.UserServiceStub(channel)
        versions = pb_grpc.VersionServiceStub(channel)

        async def call(what: str, pending: object) -> None:
            try:
                await pending  # type: ignore[misc]
                outcomes["OK"] += 1
            except grpc.aio.AioRpcError as exc:
                outcomes[f"{what}: {exc.code().name} {exc.details()}"] += 1

        async def reader(n: int) -> None:
            for _ in range(ROUNDS):
                if n % 2:
                    await call(
                        "version", versions.GetVersion(pb.VersionRequest(), timeout=TIMEOUT_S)
                    )
                else:
                    await call(
                        "list",
                        users.ListPartitions(pb.ListPartitionsRequest(), timeout=TIMEOUT_S),
                    )

        async def creator(n: int) -> None:
            for r in range(ROUNDS):
                pid = f"load-{n}-{r}"
                request = pb.CreatePartitionRequest(
                    requirements=pb.PartitionRequirements(id=pid, size=1)
                )
                await call("create", users.CreatePartition(request, timeout=TIMEOUT_S))
                await call(
                    "remove",
                    users.RemovePartition(
                        pb.RemovePartitionRequest(partition_id=pid), timeout=TIMEOUT_S
                    ),
                )

        await asyncio.gather(
            *(reader(n) for n in range(READERS)), *(creator(n) for n in range(CREATORS))
        )
    return outcomes


def test_hundreds_of_calls_in_flight_on_one_channel_are_all_served(pod16: LivePod) -> None:
    outcomes = asyncio.run(_load(pod16.controller.user_port))
    failures = {what: n for what, n in outcomes.items() if what != "OK"}
    assert failures == {}
    assert outcomes["OK"] == READERS * ROUNDS + CREATORS * ROUNDS * 2
