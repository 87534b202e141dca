"""The agent protocol and the admin API declare what their users rely on."""

from __future__ import annotations

from vpod.wire import admin_pb2, agent_pb2


def _methods(file: object, service: str) -> dict[str, tuple[str, str, bool]]:
    desc = file.DESCRIPTOR.services_by_name[service]  # type: ignore[attr-defined]
    return {
        m.name: (m.input_type.name, m.output_type.name, m.server_streaming) for m in desc.methods
    }


def test_agent_service_rpcs() -> None:
    """The agent offers identity, attributes, configuration (per machine and for every
    machine its process serves), health (the same), events, tests and faults."""
    methods = _methods(agent_pb2, "AgentService")
    assert set(methods) == {
        "GetIdentity",
        "ListIpuAttributes",
        "ConfigurePartition",
        "ReleasePartition",
        "FleetConfigurePartition",
        "FleetReleasePartition",
        "ResetPartition",
        "SetPartitionHosts",
        "ListConfigurations",
        "FleetConfigurations",
        "RunLinkTests",
        "Health",
        "FleetHealth",
        "WatchEvents",
        "InjectFault",
        "ClearFault",
    }
    assert methods["WatchEvents"][2] is True
    assert [name for name, m in methods.items() if m[2]] == ["WatchEvents"]
    assert agent_pb2.DESCRIPTOR.package == "vpod.agent.v1"


def test_agent_configuration_reuses_user_api_enums() -> None:
    """Routing and sync types on the agent wire are the user API's enums, so numbers never drift."""
    fields = agent_pb2.PartitionConfiguration.DESCRIPTOR.fields_by_name
    assert fields["ipulink_routing_type"].enum_type.full_name == "virmgrpc.IpuLinkRoutingType"
    assert fields["sync_type"].enum_type.full_name == "virmgrpc.SyncType"
    assert fields["gw_routing_type"].enum_type.full_name == "virmgrpc.GatewayRoutingType"


def test_admin_service_covers_vipu_admin_commands() -> None:
    """Every vipu-admin command has an rpc (agents, clusters, allocations, users, faults ...)."""
    methods = _methods(admin_pb2, "AdminService")
    assert set(methods) == {
        "CreateAgent",
        "ListAgents",
        "RemoveAgent",
        "DiscoverAgents",
        "CreateCluster",
        "ListClusters",
        "RemoveCluster",
        "TestCluster",
        "CreateAllocation",
        "ListAllocations",
        "SetAllocationHosts",
        "RemoveAllocation",
        "CreateUser",
        "ListUsers",
        "RemoveUser",
        "RotateUserKey",
        "GrantAllocation",
        "RevokeAllocation",
        "ListPartitions",
        "InjectFault",
        "ClearFault",
        "ListIpuAttributes",
        "ListEvents",
        "CreateAgentToken",
        "ListAgentTokens",
        "RemoveAgentToken",
        "ListIpuTelemetry",
    }
    assert methods["ListIpuAttributes"][:2] == (
        "ListIPUAttributesRequest",
        "ListIPUAttributesReply",
    )
    assert admin_pb2.DESCRIPTOR.package == "vpod.admin.v1"


def test_agents_register_through_their_own_service() -> None:
    """RegisterAgent lives apart from AdminService so agents need no admin credentials."""
    assert _methods(admin_pb2, "AgentRegistrationService") == {
        "RegisterAgent": ("RegisterAgentRequest", "RegisterAgentReply", False)
    }


def test_create_user_reply_carries_the_access_key() -> None:
    reply = admin_pb2.CreateUserReply(user=admin_pb2.User(id="alice"), access_key="k")
    again = admin_pb2.CreateUserReply.FromString(reply.SerializeToString())
    assert (again.user.id, again.access_key) == ("alice", "k")
