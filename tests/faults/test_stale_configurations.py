"""An agent that still holds a partition the store no longer has (a configure or release
that timed out and was carried out late) does not make creates on those IPUs fail."""

from __future__ import annotations

import grpc

from vpod.wire import agent_pb2 as agpb
from vpod.wire import agent_pb2_grpc as agpb_grpc
from vpod.wire import virmgrpc_pb2 as pb

from .conftest import FaultPod
from .live import AGENT_KEY_METADATA, CHANNEL_OPTIONS, agent_holdings


def _configurations(address: str) -> list[agpb.ConfiguredPartition]:
    with grpc.insecure_channel(address, options=CHANNEL_OPTIONS) as channel:
        stub = agpb_grpc.AgentServiceStub(channel)
        reply = stub.ListConfigurations(
            agpb.ListConfigurationsRequest(), timeout=15, metadata=AGENT_KEY_METADATA
        )
    return list(reply.partitions)


def _configure(address: str, config: agpb.PartitionConfiguration) -> None:
    with grpc.insecure_channel(address, options=CHANNEL_OPTIONS) as channel:
        stub = agpb_grpc.AgentServiceStub(channel)
        stub.ConfigurePartition(
            agpb.ConfigurePartitionRequest(config=config), timeout=15, metadata=AGENT_KEY_METADATA
        )


def test_a_create_on_ipus_an_agent_still_holds_for_a_gone_partition_succeeds(
    pod: FaultPod,
) -> None:
    """The agent is given back the configuration of a removed partition behind the
    controller's back; a create that needs those IPUs clears it and becomes ACTIVE."""
    agent = pod.live.agent_ids[0]
    address = pod.live.address(agent)
    pod.user.create("gone", 16)
    (held,) = [p.config for p in _configurations(address) if p.config.partition_id == "gone"]
    pod.user.remove("gone")
    _configure(address, held)  # what a late configure does
    assert [h.partition_id for h in agent_holdings(address)[1]] == ["gone"]

    pod.user.create("fresh", 16)

    assert pod.user.status("fresh").ready_state == pb.PS_ACTIVE
    assert [h.partition_id for h in agent_holdings(address)[1]] == ["fresh"]
