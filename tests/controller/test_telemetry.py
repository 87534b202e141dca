"""Per-IPU telemetry from the heartbeats' cache: one series per IPU, rendered at most once per
time-to-live whatever the number of scrapes, and never failing a scrape."""

from __future__ import annotations

import asyncio

from prometheus_client.parser import text_string_to_metric_families

from vpod.agent.emulated import EmulatedMachine
from vpod.agent.model import Holder, IpuAssignment, MachineHealth, PartitionConfig
from vpod.controller import errors
from vpod.controller.telemetry import METRICS, IpuTelemetryView, TelemetryExporter, fold_samples
from vpod.domain.entities import Agent, Cluster

AGENTS = [Agent(id=f"a{i}", host="127.0.0.1", port=9000 + i) for i in range(2)]
CLUSTER = Cluster(id="c", agent_ids=("a0", "a1"))


def heartbeats() -> dict[str, tuple[MachineHealth, float]]:
    """a0 holds partition p on IPUs 3 and 2, an application keeps IPU 3 busy; a1 is idle."""
    busy = EmulatedMachine("a0", clock=lambda: 100.0)
    ipus = (IpuAssignment(device_id=3, routing_id=0), IpuAssignment(device_id=2, routing_id=1))
    busy.configure(PartitionConfig("p", 1, ipus))
    held = busy.attach("p", 3, "10.0.0.9:4000", Holder(pid=42, host="n1", command="train"))
    busy.set_load(held.attachment_id, 0.8)
    idle = EmulatedMachine("a1", clock=lambda: 100.0)
    return {"a0": (busy.health(), 100.0), "a1": (idle.health(), 101.0)}


def test_samples_carry_cluster_partition_holder_and_load() -> None:
    samples = fold_samples(AGENTS, [CLUSTER], heartbeats().get)
    assert [(s.agent_id, s.device_id) for s in samples] == [
        (a, d) for a in ("a0", "a1") for d in range(4)
    ]
    busy = [s for s in samples if s.busy]
    assert [(s.agent_id, s.device_id, s.partition_id, s.routing_id) for s in busy] == [
        ("a0", 3, "p", 0)
    ]
    assert busy[0].holder == Holder(pid=42, host="n1", command="train")
    assert busy[0].cluster_id == "c"
    assert all(s.serial for s in samples)
    only_p = fold_samples(AGENTS, [CLUSTER], heartbeats().get, partition_id="p")
    assert sorted(s.routing_id for s in only_p) == [0, 1]
    assert fold_samples(AGENTS, [CLUSTER], heartbeats().get, agent_ids=["a1"])[0].agent_id == "a1"
    assert fold_samples(AGENTS, [CLUSTER], heartbeats().get, cluster_id="other") == []


class Timer:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def view(fail: list[bool]) -> IpuTelemetryView:
    async def inventory() -> tuple[list[Agent], list[Cluster]]:
        if fail[0]:
            raise errors.Unavailable("the store is down")
        return AGENTS, [CLUSTER]

    seen = heartbeats()
    return IpuTelemetryView(seen.get, inventory)


def test_scrapes_within_the_time_to_live_reuse_one_rendering() -> None:
    timer = Timer()
    exporter = TelemetryExporter(view([False]), ttl_s=0.5, timer=timer)

    async def scrape(times: int) -> bytes:
        bodies = [await exporter.render() for _ in range(times)]
        assert len(set(bodies)) == 1
        return bodies[0]

    text = asyncio.run(scrape(50)).decode()
    assert exporter.renders == 1
    lines = [line for line in text.splitlines() if line.startswith("vpod_ipu_utilization_ratio{")]
    assert len(lines) == 8, "one series per IPU"
    assert "vpod_ipu_link_errors_total{" in text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert len(families) == len(METRICS)
    assert all(len(f.samples) == 8 for f in families.values())
    busy = [s for s in families["vpod_ipu_utilization_ratio"].samples if s.value > 0]
    assert [(s.labels["machine"], s.labels["ipu"]) for s in busy] == [("a0", "3")]
    assert busy[0].labels["cluster"] == "c"
    assert busy[0].labels["partition"] == "p"
    assert busy[0].labels["serial"]
    timer.now = 0.6
    asyncio.run(scrape(10))
    assert exporter.renders == 2


def test_an_unreadable_inventory_serves_the_last_rendering() -> None:
    fail = [False]
    timer = Timer()
    exporter = TelemetryExporter(view(fail), ttl_s=0.5, timer=timer)
    first = asyncio.run(exporter.render())
    fail[0] = True
    timer.now = 5.0
    assert asyncio.run(exporter.render()) == first
