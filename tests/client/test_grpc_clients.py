"""UserClient and AdminClient, blocking and asyncio, against a real secure controller."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.e2e.conftest import Pod
from vpod.client import (
    AdminClient,
    AsyncAdminClient,
    AsyncUserClient,
    Fault,
    FaultKind,
    IpuofConfig,
    LinkTest,
    UserClient,
    connect,
    connect_admin,
)
from vpod.domain.partition_states import OperationState, ReadyState
from vpod.domain.routing import IpuLinkRouting

pytestmark = [pytest.mark.e2e]


def test_user_client_runs_a_partition_through_its_life(pod: Pod) -> None:
    """Create, wait, read, IPUoF files, reset, remove: typed records all the way."""
    with UserClient.from_config(str(pod.config)) as vipu:
        assert vipu.version().version
        assert vipu.create_partition("c-sync", 4, routing=IpuLinkRouting.DNC) == "c-sync"
        status = vipu.wait_until_active("c-sync", timeout=60)
        assert (status.ready_state, status.operation_state) == (
            ReadyState.ACTIVE,
            OperationState.IDLE,
        )
        partition = vipu.get_partition("c-sync")
        assert (partition.size, partition.allocation_id) == (4, "default")
        assert partition.ipulink_routing is IpuLinkRouting.DNC
        assert "c-sync" in [p.id for p in vipu.list_partitions()]
        config = vipu.ipuof_config("c-sync")
        assert isinstance(config, IpuofConfig)
        [file] = config.files()
        assert [d["ipulink_segment_id"] for d in file["devices"]] == [0, 0, 0, 0]
        assert sorted(d.routing_id for d in config.gcds[0].devices) == [0, 1, 2, 3]
        assert [a.id for a in vipu.list_allocations()] == ["default"]
        attributes = vipu.list_ipu_attributes()
        assert attributes
        assert all(entry.ipus for entry in attributes)
        vipu.reset_partition("c-sync")
        vipu.remove_partition("c-sync")
        assert "c-sync" not in [p.id for p in vipu.list_partitions()]


def test_async_user_client_does_the_same(pod: Pod) -> None:
    async def story() -> list[str]:
        async with AsyncUserClient.from_config(str(pod.config)) as vipu:
            await vipu.create_partition("c-async", 2)
            await vipu.wait_until_active("c-async", timeout=60)
            partition = await vipu.get_partition("c-async")
            files = (await vipu.ipuof_config("c-async", gcd=0)).files()
            allocations = [a.id for a in await vipu.list_allocations()]
            await vipu.remove_partition("c-async")
            remaining = [p.id for p in await vipu.list_partitions()]
            assert partition.size == 2
            assert len(files) == 1
            assert allocations == ["default"]
            return remaining

    assert "c-async" not in asyncio.run(story())


def test_connect_reads_vipu_cli_config_from_the_environment(
    pod: Pod, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VIPU_CLI_CONFIG", str(pod.config))
    with connect() as vipu:
        assert vipu.endpoint.port == pod.user_port
        assert vipu.endpoint.user_id == "default"
        assert vipu.version().endpoint == f"127.0.0.1:{pod.user_port}"


def test_admin_client_manages_users_and_reads_the_system(pod: Pod, admin_config: Path) -> None:
    with AdminClient.from_config(str(admin_config)) as admin:
        agents = admin.list_agents()
        assert len(agents) == 4
        assert all(a.cluster_id == "cluster" for a in agents)
        [cluster] = admin.list_clusters()
        assert (cluster.id, cluster.num_ipus) == ("cluster", 16)
        [allocation] = admin.list_allocations()
        assert "default" in allocation.user_ids
        created = admin.create_user("c-alice", allocation_ids=["default"])
        assert created.access_key
        assert created.user.allocation_ids == ("default",)
        assert "c-alice" in [u.id for u in admin.list_users()]
        with UserClient.from_config(
            str(pod.config), api_user_id="c-alice", api_access_key=created.access_key
        ) as alice:
            alice.create_partition("c-alice-p", 1)
        infos = admin.list_partitions(allocation="default")
        mine = next(i for i in infos if i.partition.id == "c-alice-p")
        assert [loc.agent_id for loc in mine.locations]
        assert mine.status.partition_id == "c-alice-p"
        events = admin.list_events(actor="c-alice", action="create_partition")
        assert [e.target for e in events] == ["c-alice-p"]
        assert events[0].outcome not in ("failed", "denied")
        assert events[0].time is not None
        report = admin.test_cluster("cluster", [LinkTest.CABLING])
        assert report.passed
        assert [r.test for r in report.results] == [LinkTest.CABLING]
        agent = agents[0].id
        faults = admin.inject_fault(agent, Fault(FaultKind.AGENT_SLOW, delay_ms=10, reason="t"))
        assert [f.kind for f in faults.active_faults] == [FaultKind.AGENT_SLOW]
        assert admin.clear_fault(agent).active_faults == ()
        found = admin.discover_agents([f"{agents[0].host}:{agents[0].port}"])
        assert [(d.agent_id, d.known) for d in found] == [(agent, True)]
        with UserClient.from_config(str(pod.config)) as vipu:  # the same allocation
            vipu.remove_partition("c-alice-p")
        admin.remove_user("c-alice")
        assert "c-alice" not in [u.id for u in admin.list_users()]


def test_async_admin_client_does_the_same(pod: Pod, admin_config: Path) -> None:
    async def story() -> tuple[list[str], list[str]]:
        async with AsyncAdminClient.from_config(str(admin_config)) as admin:
            created = await admin.create_user("c-bob")
            users = [u.id for u in await admin.list_users()]
            await admin.remove_user(created.user.id)
            events = await admin.list_events(target="c-bob", limit=10)
            return users, [e.action for e in events]

    users, actions = asyncio.run(story())
    assert "c-bob" in users
    assert {"create_user", "remove_user"} <= set(actions)


def test_connect_admin_uses_the_admin_port(pod: Pod, admin_config: Path) -> None:
    with connect_admin(str(admin_config)) as admin:
        assert admin.endpoint.port == pod.admin_port
        assert admin.version().version
