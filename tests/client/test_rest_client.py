"""RestClient, blocking and asyncio, against the REST API of a real secure controller."""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path

import pytest

from tests.e2e.conftest import Pod
from vpod.client import (
    AlreadyExists,
    AsyncRestClient,
    Fault,
    FaultKind,
    InvalidArgument,
    LinkTest,
    NotFound,
    PermissionDenied,
    RestClient,
    Unauthenticated,
    Unreachable,
)
from vpod.domain.partition_states import OperationState, ReadyState
from vpod.domain.routing import SyncType

pytestmark = [pytest.mark.e2e]


def rest(pod: Pod, config: Path, **overrides: str | int) -> RestClient:
    return RestClient.from_config(str(config), url=f"http://127.0.0.1:{pod.http_port}", **overrides)


def test_rest_client_runs_a_partition_and_reads_the_same_records(pod: Pod) -> None:
    with rest(pod, pod.config) as api:
        assert api.version().version
        made = api.create_partition("r-sync", 4, sync_type=SyncType.POD_NATIVE_DEFAULT)
        assert (made.id, made.size, made.sync_type) == ("r-sync", 4, SyncType.POD_NATIVE_DEFAULT)
        status = api.wait_until_active("r-sync", timeout=60)
        assert (status.ready_state, status.operation_state) == (
            ReadyState.ACTIVE,
            OperationState.IDLE,
        )
        got = api.get_partition("r-sync")
        assert got.operation_state is OperationState.IDLE
        assert {ipu.agent_id for ipu in got.ipus} <= {f"ag{i}" for i in range(1, 5)}
        assert "r-sync" in [p.id for p in api.list_partitions(allocation="default")]
        files = api.ipuof_files("r-sync")
        assert list(files) == ["r-sync_gcd0.conf"]
        assert api.ipuof_file("r-sync", 0) == files["r-sync_gcd0.conf"]
        assert [a.id for a in api.list_allocations()] == ["default"]
        assert all(entry.ipus for entry in api.list_ipu_attributes())
        api.reset_partition("r-sync")
        api.remove_partition("r-sync")
        with pytest.raises(NotFound):
            api.get_partition("r-sync")


def test_rest_admin_calls(pod: Pod, admin_config: Path) -> None:
    with rest(pod, admin_config) as admin:
        agents = admin.list_agents(cluster="cluster")
        assert len(agents) == 4
        [cluster] = admin.list_clusters()
        assert cluster.num_ipus == 16
        created = admin.create_user("r-carol", allocation_ids=["default"])
        assert created.access_key
        assert "r-carol" in [u.id for u in admin.list_users()]
        with rest(pod, pod.config, api_user_id="r-carol", api_access_key=created.access_key) as c:
            c.create_partition("r-carol-p", 1)
        infos = admin.list_partition_infos(allocation="default")
        mine = next(i for i in infos if i.partition.id == "r-carol-p")
        assert mine.locations[0].agent_id.startswith("ag")
        events = admin.list_events(actor="r-carol", action="create_partition")
        assert [e.target for e in events] == ["r-carol-p"]
        report = admin.test_cluster("cluster", [LinkTest.CABLING])
        cabling = next(r for r in report.results if r.test is LinkTest.CABLING)
        assert cabling.passed
        assert cabling.agents_tested == 4
        agent = agents[0].id
        faults = admin.inject_fault(agent, Fault(FaultKind.AGENT_SLOW, delay_ms=10))
        assert [f.kind for f in faults.active_faults] == [FaultKind.AGENT_SLOW]
        assert admin.clear_fault(agent).active_faults == ()
        assert admin.list_all_ipu_attributes([agent])[0].agent == agent
        with rest(pod, pod.config) as owner:
            owner.remove_partition("r-carol-p")
        admin.remove_user("r-carol")


def test_rest_errors_map_to_the_same_tree(pod: Pod, admin_config: Path) -> None:
    with rest(pod, pod.config) as api:
        with pytest.raises(NotFound) as missing:
            api.partition_status("nowhere")
        assert missing.value.status == 404
        with pytest.raises(InvalidArgument) as bad:
            api.create_partition("r-bad", 3)
        assert bad.value.status == 400
        with pytest.raises(PermissionDenied):
            api.list_users()
    with pytest.raises(Unauthenticated):
        rest(pod, pod.config, api_access_key="wrong").list_partitions()
    with rest(pod, admin_config) as admin, pytest.raises(AlreadyExists):
        admin.create_user("default")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    down = RestClient.from_config(str(pod.config), url=f"http://127.0.0.1:{port}")
    where = re.escape(f"cannot reach the REST API at http://127.0.0.1:{port}")
    with pytest.raises(Unreachable, match=where):
        down.version()


def test_async_rest_client(pod: Pod) -> None:
    async def story() -> tuple[ReadyState | None, list[str]]:
        url = f"http://127.0.0.1:{pod.http_port}"
        async with AsyncRestClient.from_config(str(pod.config), url=url) as api:
            await api.create_partition("r-async", 2)
            status = await api.wait_until_active("r-async", timeout=60)
            await api.remove_partition("r-async")
            try:
                await api.partition_status("r-async")
            except NotFound as exc:
                return status.ready_state, [exc.code]
            return status.ready_state, []

    assert asyncio.run(story()) == (ReadyState.ACTIVE, ["NOT_FOUND"])
