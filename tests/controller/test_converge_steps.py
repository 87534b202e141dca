"""What reconciliation does to bring one agent in step: a pure function of what the agent
holds, what the store wants there and which partitions an operation is changing."""

from __future__ import annotations

from vpod.agent.model import ConfiguredPartition, IpuAssignment, PartitionConfig
from vpod.controller.fleet import ConvergeSteps, Wanted, converge_steps


def _config(pid: str, *devices: int, generation: int = 1) -> PartitionConfig:
    return PartitionConfig(
        partition_id=pid,
        generation=generation,
        ipus=tuple(
            IpuAssignment(device_id=d, routing_id=r, segment_id=0, gcd_id=0)
            for r, d in enumerate(devices)
        ),
        partition_size=len(devices),
    )


def _held(config: PartitionConfig, *hosts: str) -> ConfiguredPartition:
    return ConfiguredPartition(config=config, allowed_hosts=hosts)


def test_an_agent_holding_what_is_wanted_needs_nothing() -> None:
    a, b = _config("a", 0, 1), _config("b", 2)
    steps = converge_steps(
        [_held(a, "127.0.0.1/32"), _held(b)],
        {"a": Wanted(a, ("127.0.0.1/32",)), "b": Wanted(b, ())},
        set(),
    )
    assert steps == ConvergeSteps()
    assert not steps


def test_each_kind_of_drift_gets_its_step() -> None:
    kept, hosts_changed = _config("kept", 0), _config("hosts", 1)
    moved_before, moved_now = _config("moved", 2), _config("moved", 3, generation=2)
    missing = _config("missing", 0)
    stray, busy = _config("stray", 2), _config("busy", 3)
    wanted = {
        "kept": Wanted(kept, ()),
        "hosts": Wanted(hosts_changed, ("127.0.0.2/32",)),
        "moved": Wanted(moved_now, ()),
        "missing": Wanted(missing, ()),
    }
    held = [_held(kept), _held(hosts_changed), _held(moved_before), _held(stray), _held(busy)]
    steps = converge_steps(held, wanted, {"busy"})
    assert steps.release == ("stray",)  # "busy" is left to the operation changing it
    assert steps.push_hosts == (wanted["hosts"],)
    assert steps.configure == ((wanted["missing"], False), (wanted["moved"], True))
    assert steps
