"""The README's story: `vpod up`, then the real CLIs and a generated gRPC client."""

from __future__ import annotations

import json
import subprocess
from contextlib import closing
from pathlib import Path

import grpc

from vpod.launch.address_claims import AddressClaims, block_of
from vpod.launch.up_state import choose_address_base
from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire import virmgrpc_pb2_grpc as pb_grpc

from .conftest import BIN, Pod, start_pod


def test_ready_line_says_what_to_type_next(pod64: Pod) -> None:
    """The ready line names the pod, every endpoint and the next command."""
    assert "Bow-2000 pod64 (16 machines, 64 IPUs)" in pod64.ready_line
    assert "vipu create partition p1 --size 4" in pod64.ready_line
    assert pod64.config.is_file()


def test_partition_life_cycle_through_the_cli(pod64: Pod) -> None:
    """create, list, get --ipuof-configs, remove: the commands a new user types first."""
    pod64.run("vipu", "create", "partition", "p1", "--size", "4")
    listing = pod64.run("vipu", "list", "partitions").stdout
    assert "p1" in listing
    config = json.loads(pod64.run("vipu", "get", "partition", "p1", "--ipuof-configs").stdout)
    gcds = config if isinstance(config, list) else [config]
    devices = gcds[0]["devices"]
    assert [d["routing_id"] for d in devices] == [0, 1, 2, 3]
    assert [d["device_id"] for d in devices] == [3, 2, 1, 0]
    assert {d["server_port"] for d in devices} == {50052, 50053, 50054, 50055}
    assert len({d["ip"] for d in devices}) == 1
    pod64.run("vipu", "remove", "partition", "p1")
    assert "p1" not in pod64.run("vipu", "list", "partitions").stdout


def test_a_generated_grpc_client_does_the_same(pod64: Pod) -> None:
    """A client built from the public V-IPU user proto works unchanged."""
    with grpc.insecure_channel(f"127.0.0.1:{pod64.user_port}") as channel:
        users = pb_grpc.UserServiceStub(channel)
        version = pb_grpc.VersionServiceStub(channel).GetVersion(pb.VersionRequest())
        assert version.version.count(".") == 2
        users.CreatePartition(
            pb.CreatePartitionRequest(requirements=pb.PartitionRequirements(id="g1", size=16))
        )
        status = users.GetPartitionStatus(pb.GetPartitionStatusRequest(partition_id="g1"))
        assert status.status.ready_state == pb.PS_ACTIVE
        assert status.status.operation_state == pb.POS_IDLE
        config = users.GetPartitionIpuofConfig(
            pb.GetPartitionIpuofConfigRequest(partition_id="g1")
        ).ipuof_config
        devices = config.gcd_configs[0].devices
        assert sorted(d.routing_id for d in devices) == list(range(16))
        assert len({d.ip for d in devices}) == 4  # four neighbouring machines
        assert config.ipulink_routing_type == pb.IRT_SWNC
        users.RemovePartition(pb.RemovePartitionRequest(partition_id="g1"))
        listed = users.ListPartitions(pb.ListPartitionsRequest())
        assert "g1" not in [p.id for p in listed.partitions]


def test_restart_brings_back_the_same_partitions(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Stopping and starting `vpod up` on the same data directory keeps partitions usable."""
    first = start_pod(tmp_path / "data")
    try:
        first.run("vipu", "create", "partition", "keep", "--size", "8")
        before = json.loads(first.run("vipu", "get", "partition", "keep", "--ipuof-configs").stdout)
    finally:
        assert first.stop() == 0
    second = start_pod(tmp_path / "data")
    try:
        after = json.loads(second.run("vipu", "get", "partition", "keep", "--ipuof-configs").stdout)
        assert after == before
        second.run("vipu", "remove", "partition", "keep")
    finally:
        second.stop()


def test_two_instances_run_side_by_side(pod64: Pod, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A second `vpod up` with another data directory does not collide with the first."""
    other = start_pod(tmp_path / "other", "--pod", "pod16")
    try:
        assert other.user_port != pod64.user_port
        other.run("vipu", "create", "partition", "o1", "--size", "16")
        pod64.run("vipu", "create", "partition", "o1", "--size", "16")
        assert "o1" in other.run("vipu", "list", "partitions").stdout
        other.run("vipu", "remove", "partition", "o1")
        pod64.run("vipu", "remove", "partition", "o1")
    finally:
        other.stop()


def test_a_loopback_block_another_vpod_up_claims_is_never_taken(tmp_path: Path) -> None:
    """Two `vpod up` started at once must not both choose one block of loopback addresses.

    A starting `vpod up` claims its block host-wide before probing it; this test holds
    the claim a concurrent start would hold. A new data directory then passes over the
    block it would otherwise choose, and a data directory whose saved block is claimed
    is refused with the holder named, before anything starts.
    """
    data_dir = tmp_path / "pod"
    with closing(AddressClaims(tmp_path / "probe-claims")) as probe:
        wanted = choose_address_base(data_dir, 4, probe)  # what it picks with nothing claimed
    with closing(AddressClaims()) as held:
        assert held.take(block_of(wanted), "this test")
        pod = start_pod(data_dir, "--pod", "pod16", "--cloud-pod", "none")
        try:
            chosen = json.loads((data_dir / "up.json").read_text())["address_base"]
            assert block_of(chosen) != block_of(wanted)
            assert "o1" in pod.run("vipu", "create", "partition", "o1", "--size", "4").stdout
        finally:
            pod.stop()
        assert held.take(block_of(chosen), "this test")
        refused = subprocess.run(
            [str(BIN / "vpod"), "up", "--data-dir", str(data_dir), "--port", "0"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert refused.returncode != 0
    assert f"{block_of(chosen)}.0.0/16 is held by another vpod up" in refused.stderr
    assert "this test" in refused.stderr
