"""A vPOD's data plane answers only its owners: attacks on agents and IPUoF endpoints.

Real processes on loopback: a ``vipu-server --secure`` (trusted hosts
127.0.0.1 only) and one ``vipu-agent`` process of two machines, registered with
a token and a ``--key-file`` key (so the test can check, as the controller, that
an attack changed nothing), started *without* ``--enable-fault-injection``.
Allocation ``alloc-a`` (machine ag1) admits host 127.0.0.1; ``alloc-b`` (ag2)
the trusted hosts. An attacker is any other caller: a process without the
agent's key, or an application on another host (a socket bound to 127.0.0.77).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf import symbol_database

from vpod.agent.trust import KEY_METADATA
from vpod.wire import admin_pb2 as apb
from vpod.wire import admin_pb2_grpc as apb_grpc
from vpod.wire import agent_pb2 as agpb
from vpod.wire import agent_pb2_grpc as agpb_grpc
from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire import virmgrpc_pb2_grpc as pb_grpc

from .procs import (
    CALL_TIMEOUT_S,
    Agents,
    Metadata,
    Server,
    access_key_of,
    credentials,
    issue_agent_token,
    run_tool,
    start_agents,
    start_server,
    wait_for_agents,
)

AGENT_KEY = "agent-trust-test-key-" + "k" * 24
OWNER_HOST = "127.0.0.1"
STRANGER_HOST = "127.0.0.77"
SERVICE = agpb.DESCRIPTOR.services_by_name["AgentService"]


@dataclass
class Trust:
    server: Server
    agents: Agents
    admin_md: Metadata
    alice_md: Metadata
    agent_address: dict[str, str]

    def admin(self, channel: grpc.Channel) -> apb_grpc.AdminServiceStub:
        return apb_grpc.AdminServiceStub(channel)

    def agent(self, agent_id: str) -> tuple[grpc.Channel, agpb_grpc.AgentServiceStub]:
        channel = grpc.insecure_channel(self.agent_address[agent_id])
        return channel, agpb_grpc.AgentServiceStub(channel)


@pytest.fixture(scope="module")
def trust(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trust]:
    data_dir = tmp_path_factory.mktemp("trust")
    init = run_tool("vipu-server", "--init", "--secure", "--data-dir", str(data_dir))
    assert init.returncode == 0, init.stderr
    admin_md = credentials("admin", access_key_of(init.stdout))
    server = start_server(
        data_dir, "--secure", "--trusted-hosts", f"{OWNER_HOST}/32", "--recovery-interval", "1"
    )
    key_file = data_dir / "agent.key"
    key_file.write_text(AGENT_KEY + "\n")
    agents: Agents | None = None
    try:
        with grpc.insecure_channel(server.admin_target) as channel:
            admin = apb_grpc.AdminServiceStub(channel)
            token = issue_agent_token(admin, admin_md)
            agents = start_agents(
                server.admin_target,
                2,
                data_dir / "agents.log",
                token=token,
                extra=("--key-file", str(key_file)),
            )
            wait_for_agents(admin, admin_md, agents.ids)
            t = CALL_TIMEOUT_S
            admin.CreateCluster(
                apb.CreateClusterRequest(cluster_id="pod", agent_ids=agents.ids),
                metadata=admin_md,
                timeout=t,
            )
            for alloc, agent, hosts in (("alloc-a", "ag1", [OWNER_HOST]), ("alloc-b", "ag2", [])):
                admin.CreateAllocation(
                    apb.CreateAllocationRequest(
                        allocation_id=alloc, cluster_id="pod", agent_ids=[agent], hosts=hosts
                    ),
                    metadata=admin_md,
                    timeout=t,
                )
            alice = admin.CreateUser(
                apb.CreateUserRequest(user_id="alice", allocation_ids=["alloc-a"]),
                metadata=admin_md,
                timeout=t,
            )
            listed = admin.ListAgents(apb.ListAgentsRequest(), metadata=admin_md, timeout=t)
        alice_md = credentials("alice", alice.access_key)
        with grpc.insecure_channel(server.user_target) as channel:
            pb_grpc.UserServiceStub(channel).CreatePartition(
                pb.CreatePartitionRequest(
                    requirements=pb.PartitionRequirements(
                        id="part-a", size=4, allocation_id="alloc-a"
                    )
                ),
                metadata=alice_md,
                timeout=CALL_TIMEOUT_S,
            )
        addresses = {a.id: f"{a.host}:{a.port}" for a in listed.agents}
        yield Trust(server, agents, admin_md, alice_md, addresses)
    finally:
        if agents is not None:
            agents.stop()
        server.stop()


KEY = ((KEY_METADATA, AGENT_KEY),)


def _configurations(trust: Trust, agent_id: str) -> dict[str, agpb.ConfiguredPartition]:
    channel, stub = trust.agent(agent_id)
    with channel:
        reply = stub.ListConfigurations(
            agpb.ListConfigurationsRequest(), metadata=KEY, timeout=CALL_TIMEOUT_S
        )
    return {p.config.partition_id: p for p in reply.partitions}


def _harmful_request(method: Any) -> Any:
    """A request that would change or reveal something if the agent obeyed it."""
    request = symbol_database.Default().GetSymbol(method.input_type.full_name)()
    if method.name in ("ReleasePartition", "ResetPartition"):
        request.partition_id = "part-a"
    elif method.name == "SetPartitionHosts":
        request.partition_id = "part-a"
        request.allowed_hosts.append("0.0.0.0/0")
    elif method.name == "ConfigurePartition":
        request.config.partition_id = "evil"
        request.config.generation = 1
        request.config.ipus.add(device_id=0)
        request.allowed_hosts.append("0.0.0.0/0")
    elif method.name == "InjectFault":
        request.fault.kind = agpb.FAULT_AGENT_HANG
    elif method.name == "ClearFault":
        request.all = True
    elif method.name == "FleetHealth":
        request.machines.add(agent_id="ag1")
    elif method.name == "FleetConfigurations":
        request.agent_ids.append("ag1")
    return request


@pytest.mark.parametrize("method", list(SERVICE.methods), ids=lambda m: m.name)
@pytest.mark.parametrize("presented", [None, "wrong-key-" + "x" * 30], ids=["no-key", "wrong-key"])
def test_every_agent_rpc_refuses_callers_without_the_agents_key(
    trust: Trust, method: Any, presented: str | None
) -> None:
    """Every rpc of the agent's service (from its descriptor: a new rpc is covered too)
    answers UNAUTHENTICATED without the agent's key, and the call changed nothing."""
    before = _configurations(trust, "ag1")
    reply_class = symbol_database.Default().GetSymbol(method.output_type.full_name)
    path = f"/{SERVICE.full_name}/{method.name}"
    metadata = None if presented is None else ((KEY_METADATA, presented),)
    with grpc.insecure_channel(trust.agent_address["ag1"]) as channel:
        kind = channel.unary_stream if method.server_streaming else channel.unary_unary
        call = kind(
            path,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=reply_class.FromString,
        )

        def attempt() -> None:
            answer = call(_harmful_request(method), metadata=metadata, timeout=CALL_TIMEOUT_S)
            if method.server_streaming:
                next(iter(answer))

        with pytest.raises(grpc.RpcError) as refused:
            attempt()
    assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert "answers only its controller" in (refused.value.details() or "")
    after = _configurations(trust, "ag1")
    assert after.keys() == before.keys() == {"part-a"}
    assert after["part-a"].reset_count == before["part-a"].reset_count
    assert list(after["part-a"].allowed_hosts) == [f"{OWNER_HOST}/32"]


def test_the_controller_still_drives_its_agents(trust: Trust) -> None:
    """The controller presents the key it learnt at registration: the partition is ACTIVE
    and the agent holds it with the allocation's hosts."""
    with grpc.insecure_channel(trust.server.user_target) as channel:
        status = pb_grpc.UserServiceStub(channel).GetPartitionStatus(
            pb.GetPartitionStatusRequest(partition_id="part-a"),
            metadata=trust.alice_md,
            timeout=CALL_TIMEOUT_S,
        )
    assert status.status.ready_state == pb.PS_ACTIVE
    assert list(_configurations(trust, "ag1")["part-a"].allowed_hosts) == ["127.0.0.1/32"]


def test_fault_injection_is_refused_on_an_agent_started_without_it(trust: Trust) -> None:
    """Even with the right key, and through the admin API: FAILED_PRECONDITION with a
    sentence naming the flag; no fault becomes active."""
    channel, stub = trust.agent("ag1")
    with channel, pytest.raises(grpc.RpcError) as direct:
        stub.InjectFault(
            agpb.InjectFaultRequest(fault=agpb.Fault(kind=agpb.FAULT_IPU, device_id=0)),
            metadata=KEY,
            timeout=CALL_TIMEOUT_S,
        )
    assert direct.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert "--enable-fault-injection" in (direct.value.details() or "")
    with (
        grpc.insecure_channel(trust.server.admin_target) as admin_channel,
        pytest.raises(grpc.RpcError) as via_admin,
    ):
        trust.admin(admin_channel).InjectFault(
            apb.InjectFaultRequest(
                agent_id="ag1", fault=agpb.Fault(kind=agpb.FAULT_LINK_DOWN, link_id="gwlink0")
            ),
            metadata=trust.admin_md,
            timeout=CALL_TIMEOUT_S,
        )
    assert via_admin.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    channel, stub = trust.agent("ag1")
    with channel:
        health = stub.Health(agpb.HealthRequest(), metadata=KEY, timeout=CALL_TIMEOUT_S)
    assert not health.faults
    assert all(i.healthy for i in health.ipus)


# ------------------------------------------------------------------------------ IPUoF


def _server_ports(trust: Trust, agent_id: str) -> list[int]:
    channel, stub = trust.agent(agent_id)
    with channel:
        identity = stub.GetIdentity(agpb.GetIdentityRequest(), metadata=KEY, timeout=30)
    return [ipu.server_port for ipu in identity.ipus]


class IpuofPeer:
    """A connection to an IPU's IPUoF port from ``source`` (another host: another address)."""

    def __init__(self, port: int, source: str) -> None:
        self.sock = socket.create_connection(
            ("127.0.0.1", port), timeout=30, source_address=(source, 0)
        )
        self.file = self.sock.makefile("rw", encoding="utf-8", newline="\n")

    def say(self, line: str) -> str:
        self.file.write(line + "\n")
        self.file.flush()
        return self.file.readline().strip()

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def _one_line(port: int, source: str, line: str) -> str:
    peer = IpuofPeer(port, source)
    try:
        return peer.say(line)
    finally:
        peer.close()


def test_ipuof_refuses_strangers_alike_and_admits_the_owner(trust: Trust) -> None:
    """From a host outside the partition's hosts, ATTACH, STATUS and DETACH are refused with
    the very answer an IPU in no partition gives (nothing about the partition leaks), before
    and while the owner is attached; the owner's host attaches as before."""
    port = _server_ports(trust, "ag1")[0]
    free_port = _server_ports(trust, "ag2")[0]  # alloc-b has no partition: a free IPU
    expected = (
        "ERR ipu-not-configured IPU 0 of agent {agent} is in no active partition that host"
        f" {STRANGER_HOST} may use"
    )
    for line in ("ATTACH part-a pid=66 host=evil", "ATTACH", "STATUS", "STATUS part-a", "DETACH"):
        answer = _one_line(port, STRANGER_HOST, line)
        assert answer.startswith(expected.format(agent="ag1")), (line, answer)
        assert "part-a" not in answer
        free = _one_line(free_port, STRANGER_HOST, line)
        assert free.replace("ag2", "ag1") == answer
    owner = IpuofPeer(port, OWNER_HOST)
    try:
        assert owner.say("ATTACH part-a pid=42 host=owner").startswith("OK ag1 0 ")
        during = _one_line(port, STRANGER_HOST, "ATTACH part-a")
        assert during.startswith(expected.format(agent="ag1"))
        assert "42" not in during
        assert "owner" not in during
        assert owner.say("PING") == "PONG"
    finally:
        owner.close()


def test_changed_hosts_of_a_live_allocation_take_effect_at_once(trust: Trust) -> None:
    """SetAllocationHosts pushes the new hosts to the partition's agent: the old host's
    application is detached and refused from then on, the new host attaches; the listing
    shows them; setting them back restores."""
    port = _server_ports(trust, "ag1")[1]
    owner = IpuofPeer(port, OWNER_HOST)
    assert owner.say("ATTACH part-a pid=7").startswith("OK ag1 1 ")
    with grpc.insecure_channel(trust.server.admin_target) as channel:
        admin = trust.admin(channel)
        moved = admin.SetAllocationHosts(
            apb.SetAllocationHostsRequest(allocation_id="alloc-a", hosts=[STRANGER_HOST]),
            metadata=trust.admin_md,
            timeout=CALL_TIMEOUT_S,
        )
        assert list(moved.allocation.hosts) == [f"{STRANGER_HOST}/32"]
        try:
            # The application of a host no longer admitted is detached at once.
            bye = owner.file.readline().strip()
            owner.close()
            assert bye == f"BYE host {OWNER_HOST} is no longer admitted to partition part-a"
            assert list(_configurations(trust, "ag1")["part-a"].allowed_hosts) == [
                f"{STRANGER_HOST}/32"
            ]
            refused = _one_line(port, OWNER_HOST, "ATTACH part-a")
            assert refused.startswith("ERR ipu-not-configured"), refused
            assert _one_line(port, STRANGER_HOST, "ATTACH part-a").startswith("OK ag1 1 ")
            listed = admin.ListAllocations(
                apb.ListAllocationsRequest(), metadata=trust.admin_md, timeout=CALL_TIMEOUT_S
            )
            shown = {a.allocation.id: list(a.hosts) for a in listed.allocations}
            assert shown == {"alloc-a": [f"{STRANGER_HOST}/32"], "alloc-b": []}
            with pytest.raises(grpc.RpcError) as bad:
                admin.SetAllocationHosts(
                    apb.SetAllocationHostsRequest(allocation_id="alloc-a", hosts=["not-a-host"]),
                    metadata=trust.admin_md,
                    timeout=CALL_TIMEOUT_S,
                )
            assert bad.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        finally:
            admin.SetAllocationHosts(
                apb.SetAllocationHostsRequest(allocation_id="alloc-a", hosts=[OWNER_HOST]),
                metadata=trust.admin_md,
                timeout=CALL_TIMEOUT_S,
            )
    assert _one_line(port, OWNER_HOST, "STATUS part-a").startswith("STATUS agent=ag1 device=1")


def test_reconciliation_restores_hosts_an_agent_lost(trust: Trust) -> None:
    """Hosts an agent holds that differ from the store's (a missed push) are re-applied by
    the leader's reconciliation (every second here)."""
    channel, stub = trust.agent("ag1")
    with channel:
        stub.SetPartitionHosts(
            agpb.SetPartitionHostsRequest(partition_id="part-a", allowed_hosts=["10.9.9.9"]),
            metadata=KEY,
            timeout=CALL_TIMEOUT_S,
        )
    deadline = time.monotonic() + 60
    while list(_configurations(trust, "ag1")["part-a"].allowed_hosts) != ["127.0.0.1/32"]:
        assert time.monotonic() < deadline, "reconciliation did not restore the hosts"
        time.sleep(0.2)
