"""Emulated telemetry and the holder of an IPU: what device tools and /metrics read."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpod.agent.client import AgentClient
from vpod.agent.errors import MachineConflict, Reason
from vpod.agent.fleet import EmulatedAgentHost
from vpod.agent.ipuof import STATUS_KEYS
from vpod.agent.model import Fault, FaultKind, Holder
from vpod.agent.telemetry import AMBIENT_C, POWER, TelemetryModel
from vpod.domain.catalog import MachineType

from .test_emulated_machine import FakeClock, config, machine
from .test_ipuof import App, configure

HOLDER = Holder(pid=4242, host="node7", command="python train.py --epochs 3")


def test_an_idle_ipu_reads_idle_and_cool() -> None:
    m = machine()
    m.configure(config())
    t = m.ipu_status(3).telemetry
    assert t.utilisation == 0.0
    assert t.temperature_c == pytest.approx(AMBIENT_C)
    assert t.power_w == pytest.approx(POWER[m.identity().machine_type].idle_w)


def test_a_sensor_at_rest_reads_the_same_until_loaded_and_counts_link_errors() -> None:
    """At rest (never loaded) a reading is the idle one however much time passes; a load
    moves it at once, and a link error shows although the sensor is at rest."""
    clock = FakeClock()
    m = machine(clock=clock)
    m.configure(config())
    idle = m.ipu_status(3).telemetry
    clock.now += 3600.0
    assert m.ipu_status(3).telemetry == idle
    assert idle.power_w == pytest.approx(POWER[m.identity().machine_type].idle_w)
    assert (idle.utilisation, idle.temperature_c, idle.link_errors) == (0.0, AMBIENT_C, 0)
    m.inject_fault(Fault(FaultKind.LINK_DOWN, link_id="ipulink6", reason="cable"))
    faulted = m.ipu_status(3).telemetry
    assert faulted.link_errors == idle.link_errors + 1
    assert faulted.links_down == 1
    attachment = m.attach("p1", 3, "app:1", HOLDER)
    m.set_load(attachment.attachment_id, 0.5)
    clock.now += 1.0
    loaded = m.ipu_status(3).telemetry
    assert loaded.utilisation > 0
    assert loaded.power_w > idle.power_w


def test_load_drives_utilisation_at_once_then_power_and_temperature() -> None:
    """Utilisation follows the reported load; power within seconds; temperature more slowly."""
    clock = FakeClock()
    m = machine(clock=clock)
    m.configure(config())
    attachment = m.attach("p1", 3, "app:1", HOLDER)
    assert m.set_load(attachment.attachment_id, 0.9)
    first = m.ipu_status(3).telemetry
    assert 0.85 <= first.utilisation <= 0.95
    clock.now += 3.0
    warm = m.ipu_status(3).telemetry
    clock.now += 60.0
    hot = m.ipu_status(3).telemetry
    peak = POWER[m.identity().machine_type].peak_w
    assert warm.power_w > 0.9 * 0.9 * peak
    assert AMBIENT_C < warm.temperature_c < hot.temperature_c <= AMBIENT_C + 40.0
    assert m.ipu_status(2).telemetry.utilisation == 0.0, "the neighbour is not attached"


def test_detaching_drops_utilisation_to_zero() -> None:
    m = machine()
    m.configure(config())
    attachment = m.attach("p1", 3, "app:1", HOLDER)
    m.set_load(attachment.attachment_id, 1.0)
    m.detach(attachment.attachment_id)
    assert m.ipu_status(3).telemetry.utilisation == 0.0
    assert not m.set_load(attachment.attachment_id, 1.0), "an ended attachment reports nothing"


def test_the_refused_application_is_told_who_holds_the_ipu() -> None:
    m = machine()
    m.configure(config())
    m.attach("p1", 3, "127.0.0.1:5000", HOLDER)
    with pytest.raises(MachineConflict) as refused:
        m.attach("p1", 3, "127.0.0.1:5001", Holder(pid=1))
    assert refused.value.reason is Reason.IPU_ATTACHED
    assert "pid 4242 on node7 (python train.py --epochs 3)" in refused.value.message
    status = m.ipu_status(3)
    assert status.holder == HOLDER
    assert (status.partition_id, status.routing_id) == ("p1", 0)


def test_attach_without_a_partition_takes_the_active_one() -> None:
    """A static IPUoF config names no partition: the IPU's active partition is attached."""
    m = machine()
    m.configure(config(devices=(1,)))
    assert m.attach(None, 1, "app:1").partition_id == "p1"


def test_a_link_going_down_counts_a_link_error_on_its_ipu() -> None:
    m = machine()
    m.inject_fault(Fault(FaultKind.LINK_DOWN, link_id="ipulink4"))
    m.inject_fault(Fault(FaultKind.LINK_DOWN, link_id="ipulink4"))  # the same fault again
    t = m.ipu_status(2).telemetry
    assert (t.link_errors, t.links_down) == (1, 1)
    assert m.ipu_status(1).telemetry.link_errors == 0
    assert all(i.telemetry.links_down == 0 for i in m.health().ipus if i.device_id != 2)


# ---------------------------------------------------------------------- over the wire


@pytest.mark.anyio
async def test_attach_line_carries_the_holder_and_status_shows_it(
    host: EmulatedAgentHost, agent: AgentClient
) -> None:
    await configure(agent)
    app = await App.connect(host, 3)
    assert (await app.say("ATTACH p1 pid=77 host=n1 cmd=train%20--fast")).startswith("OK ag1 3 0")
    assert await app.say("LOAD 0.5") == "OK load 0.5"
    other = await App.connect(host, 3)
    refused = await other.say("ATTACH p1 pid=78")
    assert refused.startswith("ERR ipu-attached")
    assert "pid 77 on n1 (train --fast)" in refused
    probe = await App.connect(host, 3)
    status = await probe.say("STATUS p1")
    values = dict(word.split("=", 1) for word in status.split()[1:])
    assert list(values) == list(STATUS_KEYS)
    assert (values["agent"], values["pid"], values["cmd"]) == ("ag1", "77", "train%20--fast")
    assert float(values["util"]) > 0.4
    health = await agent.health()
    held = next(i for i in health.ipus if i.device_id == 3)
    assert held.holder == Holder(pid=77, host="n1", command="train --fast")
    assert held.telemetry.utilisation > 0.4
    assert held.serial
    await app.close()
    for _ in range(100):
        if not next(i for i in (await agent.health()).ipus if i.device_id == 3).attached:
            break
        await asyncio.sleep(0.02)
    idle = await App.connect(host, 3)
    assert "util=0.0000" in await idle.say("STATUS")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("LOAD 2", "invalid-request"),
        ("LOAD nan", "invalid-request"),
        ("ATTACH p1 colour=red", "invalid-request"),
        ("ATTACH p1 pid=abc", "invalid-request"),
        ("ATTACH p1 p2", "invalid-request"),
        ("STATUS other", "wrong-partition"),
    ],
)
async def test_malformed_lines_are_refused_with_a_reason(
    host: EmulatedAgentHost, agent: AgentClient, line: str, reason: str
) -> None:
    await configure(agent)
    app = await App.connect(host, 3)
    if line.startswith("LOAD"):
        assert (await app.say("ATTACH p1")).startswith("OK")
    answer = await app.say(line)
    assert answer.startswith(f"ERR {reason} "), answer


STEPS = st.lists(
    st.tuples(
        st.sampled_from([0.0, 0.1, 0.2, 1.0, 3.0, 60.0]),  # seconds until the next step
        st.one_of(st.none(), st.sampled_from([0.0, 0.3, 0.5, 1.0])),  # a new load, or none
        st.booleans(),  # whether the often-read sensor is read at this step
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(STEPS)
def test_a_reading_does_not_depend_on_how_often_the_sensor_was_read(
    steps: list[tuple[float, float | None, bool]],
) -> None:
    """Two machines under the same loads at the same times, one read at every step (a
    heartbeat a second), one only at the load changes and at the end: the same readings.
    Power and temperature were stepped from one reading to the next, so how often a sensor
    was read moved its temperature."""
    clock = FakeClock()
    often = TelemetryModel(MachineType.BOW2000, clock)
    seldom = TelemetryModel(MachineType.BOW2000, clock)
    for seconds, load, read in steps:
        clock.now += seconds
        if read:
            often.read(0)
        if load is not None:
            often.set_load(0, load)
            seldom.set_load(0, load)
    assert often.read(0) == seldom.read(0)
