"""Thousands of concurrent creates and removes across two controllers on one PostgreSQL.

One emulated POD64 (16 agents in two ``vipu-agent`` processes) and two
``vipu-server`` processes on one database. Sixteen worker threads each make
130 calls (2,080 in all), every call to a controller picked at random: create
a partition of a random size (1 to 16 IPUs) or remove one the worker made.
The two controllers place on their own snapshots and race for the same IPUs;
the database must let exactly one win each race. While it runs, a sampler
reads the store to catch an IPU in two partitions at any moment; afterwards
the store and every agent (asked directly) must agree, and no answer a
client received may have been undone (see ``tests/faults/workload.py``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from functools import partial

import grpc
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.faults.consistency import disagreements, read_store
from tests.faults.live import (
    ControllerProcess,
    LivePod,
    UserClient,
    build_pod,
    rpc_code,
    wait_until,
)
from tests.faults.workload import Workload

WORKERS = 16
OPS_PER_WORKER = 130
SIZES = (1, 1, 2, 2, 4, 4, 8, 16)
EXPECTED_REFUSALS = {grpc.StatusCode.RESOURCE_EXHAUSTED.name}
"""The only refusal a worker can earn: the pod is full (16 workers may ask for 200+ IPUs)."""

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(scope="module")
def pod64(tmp_path_factory: pytest.TempPathFactory, postgres_server: object) -> Iterator[LivePod]:
    from tests.pg import PostgresServer

    assert isinstance(postgres_server, PostgresServer)
    name = postgres_server.create_database()
    pod = build_pod(
        tmp_path_factory.mktemp("stress"),
        postgres_server.url(name),
        machines=16,
        agents_per_process=8,
        controllers=2,
    )
    try:
        yield pod
    finally:
        pod.close()
        postgres_server.drop_database(name)


def served(controller: ControllerProcess, method: str) -> int:
    """Calls of ``method`` the controller served, from its Prometheus /metrics."""
    text = httpx.get(f"http://127.0.0.1:{controller.http_port}/metrics", timeout=30).text
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "vpod_grpc_requests_total" and sample.labels["method"] == method:
                total += sample.value
    return int(total)


class OverlapSampler:
    """Reads the store over and over while the load runs; notes any IPU in two partitions."""

    def __init__(self, database_url: str) -> None:
        self._url = database_url
        self.samples = 0
        self.problems: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> OverlapSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            view = read_store(self._url)
            self.samples += 1
            self.problems.extend(p for p in view.problems if "is in" in p)


def test_thousands_of_concurrent_creates_and_removes_on_two_controllers(pod64: LivePod) -> None:
    """2,080 random creates and removes through two controllers at once: no IPU is ever in two
    partitions (store sampled during the run; agents refuse a busy IPU, which would surface as
    a failed create), every refusal is RESOURCE_EXHAUSTED, no partition is lost or invented,
    and afterwards the store and all 16 agents agree."""
    pod = pod64
    clients = [c.user() for c in pod.controllers]
    workload = Workload(clients, sizes=SIZES, prefix="s", seed=2024, keep=2)
    started = time.monotonic()
    with OverlapSampler(pod.database_url) as sampler:
        workload.run(WORKERS, OPS_PER_WORKER)
    elapsed = time.monotonic() - started
    ledger = workload.ledger

    assert ledger.ops == WORKERS * OPS_PER_WORKER
    assert not sampler.problems, sampler.problems[:5]
    refusals = {code for (_, code) in ledger.codes} - {grpc.StatusCode.OK.name}
    assert refusals <= EXPECTED_REFUSALS, ledger.messages

    view = read_store(pod.database_url)
    assert not ledger.lost_or_invented(view.records, "s")
    addresses = {a: pod.address(a) for a in pod.agent_ids}
    wait_until(lambda: not disagreements(pod.database_url, addresses), "store and agents agree")

    per_controller = [served(c, "CreatePartition") for c in pod.controllers]
    assert all(n > 0 for n in per_controller), per_controller
    assert sum(per_controller) == ledger.count("create", grpc.StatusCode.OK) + ledger.count(
        "create", grpc.StatusCode.RESOURCE_EXHAUSTED
    )

    assert not [m for _, _, m in ledger.failures if "not tried" in m]
    creates = ledger.count("create", grpc.StatusCode.OK)
    removes = ledger.count("remove", grpc.StatusCode.OK)
    assert creates - removes == len(view.records)
    print(
        f"stress: {ledger.ops} calls in {elapsed:.1f} s ({ledger.ops / elapsed:.0f}/s) over 2"
        f" controllers; {ledger.table()}; {sampler.samples} store samples; store and agents"
        f" agree, {len(view.records)} partitions left; creates served per controller"
        f" {per_controller}"
    )


BURSTS = 8
BURST_CLIENTS_PER_CONTROLLER = 16


def _burst(pod: LivePod, burst: int) -> list[tuple[grpc.StatusCode, str]]:
    """32 clients, 16 per controller, released at once, each creating two 1-IPU partitions:
    64 creates for the pod's 64 IPUs."""
    clients = [c.user() for c in pod.controllers for _ in range(BURST_CLIENTS_PER_CONTROLLER)]
    barrier = threading.Barrier(len(clients))
    results: list[tuple[grpc.StatusCode, str]] = []

    def run(index: int, client: UserClient) -> None:
        barrier.wait()
        for k in range(2):
            results.append(rpc_code(partial(client.create, f"b{burst}-{index}-{k}", 1)))

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    clients[0].remove_all()
    for client in clients:
        client.close()
    return results


def test_racing_controllers_never_refuse_a_partition_that_fits(pod64: LivePod) -> None:
    """Bursts of 64 simultaneous 1-IPU creates (the pod's exact capacity) through both
    controllers: each burst fills the pod; no create is refused while IPUs are free, and no
    refusal says "not tried"."""
    pod64.controllers[0].user().remove_all()
    for burst in range(BURSTS):
        refused = [r for r in _burst(pod64, burst) if r[0] != grpc.StatusCode.OK]
        assert not refused, f"burst {burst}: {len(refused)} refused, e.g. {refused[0]}"
