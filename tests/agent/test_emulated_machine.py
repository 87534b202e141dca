"""The emulated IPU-Machine keeps a real machine's state: partitions, attachments, links, faults."""

from __future__ import annotations

import pytest

from vpod.agent.emulated import EmulatedMachine
from vpod.agent.errors import InvalidRequest, MachineConflict, Reason, UnknownPartition
from vpod.agent.model import (
    EventKind,
    Fault,
    FaultKind,
    IpuAssignment,
    LinkTestKind,
    MachineEndpoints,
    PartitionConfig,
)
from vpod.domain.catalog import MachineType
from vpod.domain.routing import IpuLinkRouting, SyncType


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def machine(agent_id: str = "ag1", **kwargs: object) -> EmulatedMachine:
    kwargs.setdefault("clock", FakeClock())
    kwargs.setdefault("boot_id", "boot-1")
    return EmulatedMachine(agent_id, **kwargs)  # type: ignore[arg-type]


def config(
    pid: str = "p1", devices: tuple[int, ...] = (3, 2), generation: int = 1, **kwargs: object
) -> PartitionConfig:
    ipus = tuple(IpuAssignment(device_id=d, routing_id=r) for r, d in enumerate(devices))
    return PartitionConfig(
        partition_id=pid,
        generation=generation,
        ipus=ipus,
        ipulink_routing=IpuLinkRouting.DNC,
        sync_type=SyncType.GS2_DEFAULT,
        **kwargs,  # type: ignore[arg-type]
    )


def kinds(m: EmulatedMachine) -> list[EventKind]:
    return [e.kind for e in m.events_since(0).events]


# ------------------------------------------------------------------ identity


def test_identity_is_deterministic_per_seed_and_agent() -> None:
    """The same seed and agent id give the same serials; another seed gives other chip ids."""
    a, b = machine("ag1", seed="pod-a"), machine("ag1", seed="pod-a")
    other = machine("ag1", seed="pod-b")
    assert a.identity().serial == b.identity().serial
    assert [i.chip_id for i in a.identity().ipus] == [i.chip_id for i in b.identity().ipus]
    assert {i.chip_id for i in a.identity().ipus}.isdisjoint(
        i.chip_id for i in other.identity().ipus
    )
    assert len({i.chip_id for i in a.identity().ipus}) == 4


def test_identity_reports_endpoints_and_machine_type() -> None:
    """Ports come from the endpoints by device id; the IPU architecture from the catalog."""
    m = machine(
        machine_type=MachineType.M2000,
        endpoints=MachineEndpoints("10.0.0.5:8091", "10.0.0.5", (1, 2, 3, 4), (5, 6, 7, 8)),
    )
    ident = m.identity()
    assert ident.machine_type is MachineType.M2000
    assert ident.management_address == "10.0.0.5:8091"
    assert [(i.device_id, i.server_port, i.rdma_port) for i in ident.ipus] == [
        (0, 1, 5),
        (1, 2, 6),
        (2, 3, 7),
        (3, 4, 8),
    ]
    assert all(i.ipu_arch_id == 2 for i in ident.ipus)
    assert ident.boot_id == "boot-1"


def test_spec_ports_by_default() -> None:
    """Without endpoints the IPUoF ports are the spec's: 50052-50055 and 7471-7474."""
    ident = machine().identity()
    assert [i.server_port for i in ident.ipus] == [50052, 50053, 50054, 50055]
    assert [i.rdma_port for i in ident.ipus] == [7471, 7472, 7473, 7474]


def test_bad_agent_id_is_refused() -> None:
    with pytest.raises(ValueError, match="agent id"):
        machine("bad id")


def test_ipu_attributes_follow_the_catalog() -> None:
    """Each IPU lists board type, serials, clock and versions; a fault shows as the error state."""
    m = machine(machine_type=MachineType.BOW2000)
    m.inject_fault(Fault(FaultKind.IPU, device_id=1, reason="overheating"))
    attrs = m.ipu_attributes()
    assert sorted(attrs) == [0, 1, 2, 3]
    assert attrs[0]["board type"] == "Bow-2000"
    assert attrs[0]["clock"] == "1850MHz"
    assert attrs[0]["board serial number"] == m.identity().serial
    assert attrs[2]["chip id"] == m.identity().ipu(2).chip_id
    assert attrs[0]["ipu error state"] == "no errors"
    assert "overheating" in attrs[1]["ipu error state"]
    assert {"firmware version", "driver version", "ipu serial number"} <= attrs[3].keys()


# ------------------------------------------------------------- configuration


def test_configure_is_idempotent() -> None:
    """Configuring the same partition and generation twice changes nothing the second time."""
    m = machine()
    first = m.configure(config())
    again = m.configure(config())
    assert first.changed
    assert not again.changed
    assert again.partition == first.partition
    assert kinds(m) == [EventKind.CONFIGURED]
    assert m.health().ipus[3].partition_id == "p1"


def test_configure_normalises_defaults_and_order() -> None:
    """Size defaults to the IPUs listed, segments to 1, and IPUs are kept in device order."""
    held = machine().configure(config(devices=(3, 2))).partition.config
    assert held.partition_size == 2
    assert held.num_ipulink_segments == 1
    assert [i.device_id for i in held.ipus] == [2, 3]


def test_same_generation_with_other_content_is_a_conflict() -> None:
    m = machine()
    m.configure(config(devices=(3, 2)))
    with pytest.raises(MachineConflict) as info:
        m.configure(config(devices=(1, 0)))
    assert info.value.reason is Reason.CONFLICTING_CONFIG


def test_newer_generation_replaces_and_frees_dropped_ipus() -> None:
    """A relocation (higher generation) moves the partition; its old IPUs become free."""
    m = machine()
    m.configure(config(devices=(3, 2)))
    m.attach("p1", 3, "app:1")
    out = m.configure(config(devices=(1, 0), generation=2))
    assert out.changed
    assert out.partition.config.device_ids == (0, 1)
    owners = {ipu.device_id: ipu.partition_id for ipu in m.health().ipus}
    assert owners == {0: "p1", 1: "p1", 2: "", 3: ""}
    detached = [e for e in m.events_since(0).events if e.kind is EventKind.DETACHED]
    assert detached[0].evicted


def test_older_generation_is_stale() -> None:
    m = machine()
    m.configure(config(generation=3))
    with pytest.raises(MachineConflict) as info:
        m.configure(config(generation=2))
    assert info.value.reason is Reason.STALE_GENERATION
    assert "generation 3" in str(info.value)


def test_ipu_of_another_partition_is_busy() -> None:
    m = machine()
    m.configure(config("p1", devices=(3, 2)))
    with pytest.raises(MachineConflict) as info:
        m.configure(config("p2", devices=(2,)))
    assert info.value.reason is Reason.IPU_BUSY
    assert "partition p1" in str(info.value)
    assert m.configure(config("p2", devices=(1, 0))).changed


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        (config(devices=()), "no IPUs"),
        (config(devices=(4,)), "do not exist"),
        (config(devices=(1, 1)), "listed twice"),
        (config(generation=0), "generation must be 1"),
        (config(pid="bad id"), "partition id"),
        (config(devices=(0, 1), partition_size=1), "smaller than"),
        (
            PartitionConfig("p", 1, (IpuAssignment(0, 0), IpuAssignment(1, 0))),
            "same routing id",
        ),
        (PartitionConfig("p", 1, (IpuAssignment(0, 5),), partition_size=4), "outside"),
        (PartitionConfig("p", 1, (IpuAssignment(0, 0, segment_id=1),)), "segment"),
    ],
)
def test_malformed_configurations_are_invalid(bad: PartitionConfig, words: str) -> None:
    """Malformed requests are refused with a sentence that says what to fix."""
    with pytest.raises(InvalidRequest, match=words):
        machine().configure(bad)


def test_release_is_idempotent_and_frees_ipus() -> None:
    m = machine()
    m.configure(config())
    m.attach("p1", 2, "app:1")
    assert m.release("p1") is True
    assert m.release("p1") is False
    assert m.configurations() == []
    assert all(ipu.partition_id == "" and not ipu.attached for ipu in m.health().ipus)
    assert kinds(m) == [
        EventKind.CONFIGURED,
        EventKind.ATTACHED,
        EventKind.DETACHED,
        EventKind.RELEASED,
    ]


def test_reset_counts_and_detaches_applications() -> None:
    """Reset keeps the partition configured, detaches its application and counts."""
    m = machine()
    m.configure(config())
    m.attach("p1", 3, "app:1")
    held = m.reset("p1")
    assert held.reset_count == 1
    assert held.attached_device_ids == ()
    assert m.reset("p1").reset_count == 2
    detach = next(e for e in m.events_since(0).events if e.kind is EventKind.DETACHED)
    assert (detach.evicted, detach.detail) == (True, "partition reset")


def test_reset_of_unknown_partition_is_not_found() -> None:
    with pytest.raises(UnknownPartition, match="not configured"):
        machine().reset("ghost")


def test_reset_with_a_faulted_ipu_is_refused() -> None:
    m = machine()
    m.configure(config())
    m.inject_fault(Fault(FaultKind.IPU, device_id=2))
    with pytest.raises(MachineConflict) as info:
        m.reset("p1")
    assert info.value.reason is Reason.IPU_FAULTED


def test_configurations_list_what_is_held() -> None:
    clock = FakeClock()
    m = machine(clock=clock)
    m.configure(config("p2", devices=(0,)))
    clock.now = 2_000.0
    m.configure(config("p1", devices=(3, 2)))
    m.attach("p1", 2, "app:9")
    held = m.configurations()
    assert [c.config.partition_id for c in held] == ["p1", "p2"]
    assert held[0].attached_device_ids == (2,)
    assert (held[0].configured_at, held[1].configured_at) == (2_000.0, 1_000.0)


# --------------------------------------------------------------------- IPUoF


def test_attach_needs_a_configured_ipu() -> None:
    with pytest.raises(MachineConflict) as info:
        machine().attach("p1", 0, "app:1")
    assert info.value.reason is Reason.IPU_NOT_CONFIGURED


def test_attach_to_another_partitions_ipu_is_refused() -> None:
    m = machine()
    m.configure(config("p1", devices=(3,)))
    with pytest.raises(MachineConflict) as info:
        m.attach("p2", 3, "app:1")
    assert info.value.reason is Reason.WRONG_PARTITION


def test_one_application_per_ipu_until_it_detaches() -> None:
    m = machine()
    m.configure(config(devices=(3, 2)))
    first = m.attach("p1", 3, "app:1")
    assert first.routing_id == 0
    with pytest.raises(MachineConflict) as info:
        m.attach("p1", 3, "app:2")
    assert info.value.reason is Reason.IPU_ATTACHED
    assert "app:1" in str(info.value)
    assert m.detach(first.attachment_id) is True
    assert m.detach(first.attachment_id) is False
    assert m.attach("p1", 3, "app:2").client == "app:2"


def test_application_detach_is_not_an_eviction() -> None:
    """A detach the application caused carries evicted=False: the controller's auto-reset cue."""
    m = machine()
    m.configure(config())
    att = m.attach("p1", 3, "app:1")
    m.detach(att.attachment_id)
    event = m.events_since(0).events[-1]
    assert (event.kind, event.evicted, event.partition_id, event.device_id) == (
        EventKind.DETACHED,
        False,
        "p1",
        3,
    )


# -------------------------------------------------------------------- faults


def test_ipu_fault_detaches_refuses_and_shows_in_health() -> None:
    m = machine()
    m.configure(config("p1", devices=(3,)))
    m.attach("p1", 3, "app:1")
    m.inject_fault(Fault(FaultKind.IPU, device_id=3, reason="ECC error"))
    health = m.health()
    assert not health.healthy
    assert not health.ipus[3].healthy
    assert "ECC error" in health.ipus[3].fault
    assert not health.ipus[3].attached
    with pytest.raises(MachineConflict) as info:
        m.attach("p1", 3, "app:2")
    assert info.value.reason is Reason.IPU_FAULTED
    with pytest.raises(MachineConflict):
        m.configure(config("p2", devices=(3,)))
    m.clear_fault(Fault(FaultKind.IPU, device_id=3))
    assert m.health().healthy
    assert m.attach("p1", 3, "app:2").device_id == 3


def test_injecting_the_same_fault_twice_keeps_one() -> None:
    m = machine()
    m.inject_fault(Fault(FaultKind.IPU, device_id=0, reason="a"))
    active = m.inject_fault(Fault(FaultKind.IPU, device_id=0, reason="b"))
    assert [(f.device_id, f.reason) for f in active] == [(0, "b")]


def test_link_down_fails_training_of_multi_ipu_partitions() -> None:
    """A down IPU-Link of an IPU refuses partitions of 2+ IPUs on it; a single IPU still works."""
    m = machine()
    m.inject_fault(Fault(FaultKind.LINK_DOWN, link_id="ipulink6"))
    with pytest.raises(MachineConflict) as info:
        m.configure(config(devices=(3, 2)))
    assert info.value.reason is Reason.LINK_DOWN
    assert "ipulink6" in str(info.value)
    assert m.configure(config("solo", devices=(3,))).changed
    link = next(li for li in m.health().links if li.link_id == "ipulink6")
    assert (link.up, link.device_id) == (False, 3)


def test_gw_link_down_fails_multi_segment_partitions() -> None:
    m = machine()
    m.inject_fault(Fault(FaultKind.LINK_DOWN, link_id="gwlink1"))
    with pytest.raises(MachineConflict, match="GW-Link"):
        m.configure(
            PartitionConfig(
                "big", 1, (IpuAssignment(0, 0),), partition_size=128, num_ipulink_segments=2
            )
        )


def test_unknown_link_and_agent_faults_are_invalid_for_the_machine() -> None:
    m = machine()
    with pytest.raises(InvalidRequest, match="no link"):
        m.inject_fault(Fault(FaultKind.LINK_DOWN, link_id="ipulink99"))
    with pytest.raises(InvalidRequest, match="fault of the agent"):
        m.inject_fault(Fault(FaultKind.AGENT_HANG))
    with pytest.raises(InvalidRequest, match="device id"):
        m.inject_fault(Fault(FaultKind.IPU, device_id=7))


def test_clear_all_faults() -> None:
    m = machine()
    m.inject_fault(Fault(FaultKind.IPU, device_id=0))
    m.inject_fault(Fault(FaultKind.LINK_DOWN, link_id="synclink0"))
    assert len(m.faults()) == 2
    assert m.clear_fault(None) == []
    assert kinds(m).count(EventKind.FAULT_CLEARED) == 2


def test_link_tests_pass_on_a_healthy_machine() -> None:
    results = machine().run_link_tests()
    assert [r.test for r in results] == list(LinkTestKind)
    assert all(r.passed and not r.details for r in results)
    assert "8 of 8 IPU-Links" in results[1].summary


def test_link_tests_report_each_failure() -> None:
    m = machine()
    m.inject_fault(Fault(FaultKind.LINK_DOWN, link_id="gwlink0"))
    m.inject_fault(Fault(FaultKind.IPU, device_id=1))
    by_test = {r.test: r for r in m.run_link_tests()}
    assert not by_test[LinkTestKind.GW_LINK].passed
    assert by_test[LinkTestKind.GW_LINK].details == ("ag1 gwlink0: link gwlink0 down",)
    assert len(by_test[LinkTestKind.IPU_LINK].details) == 2
    assert not by_test[LinkTestKind.TRAFFIC].passed
    assert not by_test[LinkTestKind.CABLING].passed
    assert by_test[LinkTestKind.SYNC_LINK].passed
    only = m.run_link_tests([LinkTestKind.SYNC_LINK])
    assert [r.test for r in only] == [LinkTestKind.SYNC_LINK]


# -------------------------------------------------------------------- events


def test_events_since_and_truncation() -> None:
    """Readers get events after their sequence; a reader that fell behind is told so."""
    m = machine(event_capacity=3)
    for n in range(5):
        m.configure(config(f"p{n}", devices=(0,)))
        m.release(f"p{n}")
    batch = m.events_since(0)
    assert batch.truncated
    assert [e.sequence for e in batch.events] == [8, 9, 10]
    assert batch.last_event == 10
    fresh = m.events_since(9)
    assert (fresh.truncated, [e.sequence for e in fresh.events]) == (False, [10])
    assert m.events_since(10).events == ()


def test_subscribers_see_events_until_they_unsubscribe() -> None:
    m = machine()
    seen: list[EventKind] = []
    stop = m.subscribe(lambda e: seen.append(e.kind))
    m.configure(config())
    stop()
    m.release("p1")
    assert seen == [EventKind.CONFIGURED]
