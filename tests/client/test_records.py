"""Reading replies into records: fields by name from a message and the messages it nests,
``raw`` declared once, and the cloud's records that are their API shape."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from vpod.client import (
    Allocation,
    Partition,
    PartitionStatus,
    ProjectCreated,
    admin_calls,
    partition_keys,
    user_calls,
)
from vpod.client.cloud_records import Project, Token
from vpod.client.grpc_transport import nothing
from vpod.client.records import IpuofConfig, PartitionIpu, routing_of
from vpod.domain.partition_states import ReadyState
from vpod.domain.routing import GwRouting, IpuLinkRouting, SyncType
from vpod.wire import admin_pb2 as apb
from vpod.wire import virmgrpc_pb2 as pb


def _partition_message() -> pb.Partition:
    spec = pb.PartitionSpec(
        cluster_id="c1",
        allocation_id="a1",
        ipus=[pb.PartitionIpu(topology_id=i, routing_id=i) for i in range(4)],
        ipulink_routing_type=pb.IRT_SWNC,
        gw_routing_type=pb.GRT_RING,
        sync_type=pb.ST_POD_NATIVE_DEFAULT,
        num_gcds=2,
        num_replicas=1,
        num_ipulink_segments=1,
        reconfigurable=True,
    )
    return pb.Partition(id="p1", spec=spec, ready_state=pb.PS_ACTIVE, ipuof_server_version="2.6.0")


def test_a_partition_reads_its_own_fields_and_its_specs() -> None:
    message = _partition_message()
    partition = Partition.from_wire(message)
    # the message's own fields
    assert (partition.id, partition.ready_state) == ("p1", ReadyState.ACTIVE)
    assert partition.ipuof_server_version == "2.6.0"
    # the spec's, by name
    assert (partition.cluster_id, partition.allocation_id) == ("c1", "a1")
    assert (partition.num_gcds, partition.num_replicas, partition.reconfigurable) == (2, 1, True)
    assert partition.ipus[3] == PartitionIpu(0, 0, 3, 3)
    # named otherwise on the wire
    assert partition.ipulink_routing is IpuLinkRouting.SWNC
    assert partition.gw_routing is GwRouting.RING
    assert partition.sync_type is SyncType.POD_NATIVE_DEFAULT
    # neither carries them over gRPC
    assert partition.operation_state is None
    assert partition.created_at is None
    assert partition.raw is message


def test_an_allocation_reads_the_allocation_and_its_spec_it_nests() -> None:
    message = apb.AllocationInfo(
        allocation=pb.Allocation(
            id="a1", spec=pb.AllocationSpec(cluster_id="c1", agent_ids=["ag1", "ag2"])
        ),
        size=8,
        user_ids=["alice"],
        num_partitions=2,
        hosts=["10.0.0.0/24"],
    )
    allocation = Allocation.from_wire(message)
    assert (allocation.id, allocation.cluster_id) == ("a1", "c1")
    assert allocation.agent_ids == ("ag1", "ag2")
    assert (allocation.size, allocation.user_ids, allocation.num_partitions) == (
        8,
        ("alice",),
        2,
    )
    assert allocation.hosts == ("10.0.0.0/24",)
    assert allocation.raw is message


def test_an_ipuof_config_reads_the_routing_as_a_partition_does() -> None:
    message = pb.PartitionConfig(
        ipulink_routing_type=pb.IRT_DNC, gw_routing_type=pb.GRT_SWRING, sync_type=pb.ST_UNDEFINED
    )
    config = IpuofConfig.from_wire(message)
    assert routing_of(message) == {
        "ipulink_routing": IpuLinkRouting.DNC,
        "gw_routing": GwRouting.SWRING,
        "sync_type": None,
    }
    assert (config.ipulink_routing, config.gw_routing, config.sync_type) == (
        IpuLinkRouting.DNC,
        GwRouting.SWRING,
        None,
    )


def test_raw_is_keyword_only_not_compared_not_shown_and_none_for_a_record_made_by_hand() -> None:
    made = PartitionStatus("p1", ReadyState.ACTIVE, None, (), 3, 0, None)
    assert made.raw is None
    read = PartitionStatus.from_wire(
        pb.PartitionStatus(partition_id="p1", ready_state=pb.PS_ACTIVE, max_auto_reset_retries=3)
    )
    assert read.raw is not None
    assert read == made
    assert "raw" not in repr(read)
    with pytest.raises(TypeError):
        PartitionStatus("p1", ReadyState.ACTIVE, None, (), 3, 0, None, "raw")  # type: ignore[call-arg]
    with pytest.raises(FrozenInstanceError):
        read.raw = None  # type: ignore[misc]


def test_the_removals_of_every_grpc_api_read_their_empty_reply_alike() -> None:
    calls = (
        user_calls.remove_partition("p1"),
        user_calls.reset_partition("p1"),
        admin_calls.remove_user("alice"),
        partition_keys.remove_partition_key("k1"),
    )
    assert all(call.parse is nothing for call in calls)


def test_a_created_project_is_its_api_shape_with_its_parts_records() -> None:
    data = {
        "project": {
            "id": "acme",
            "name": "Acme",
            "quotas": {"vpods": 2},
            "usage": {},
            "created_at": "2026-01-01T00:00:00Z",
        },
        "token": {
            "id": "t1",
            "project_id": "acme",
            "label": "",
            "created_at": "2026-01-01T00:00:00Z",
            "token": "vpt_secret",
        },
    }
    created = ProjectCreated.read(data)
    assert isinstance(created.project, Project)
    assert isinstance(created.token, Token)
    assert (created.project.id, created.token.token) == ("acme", "vpt_secret")
    assert created.raw is data
    assert created.project.raw is data["project"]
