"""CloudClient and AsyncCloudClient against a real controller serving the cloud."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from tests.cloud.live import LiveCloud, start_cloud, stop_cloud
from vpod.client import (
    AsyncCloudClient,
    CloudClient,
    CloudSettings,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Phase,
    TaskState,
    Unauthenticated,
    Unreachable,
)

pytestmark = [pytest.mark.e2e]
VPOD8 = "g2a-ai-fast-v1pod-8"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCloud]:
    cloud = start_cloud(tmp_path_factory.mktemp("client-cloud"))
    try:
        yield cloud
    finally:
        stop_cloud(cloud)


def tenant(live: LiveCloud, project: str) -> CloudClient:
    return CloudClient(CloudSettings(live.url, live.project(project)))


def test_a_vpod_through_the_client_with_its_phases(live: LiveCloud) -> None:
    with tenant(live, "c-acme") as cloud:
        flavors = {f.name: f for f in cloud.flavors()}
        assert isinstance(flavors[VPOD8].price_per_hour, Decimal)
        assert flavors[VPOD8].capacity >= 1
        assert cloud.check_limits(VPOD8).fits
        task = cloud.create_cluster(
            "train", VPOD8, volumes=[{"name": "data", "size_gib": 10}], metadata={"team": "a"}
        )
        assert task.state in (TaskState.NEW, TaskState.RUNNING)
        seen: list[Phase] = []
        done = cloud.wait_task(task, on_phase=seen.append, timeout=300)
        assert done.state is TaskState.FINISHED
        assert [p.phase for p in seen] == list(done.expected_phases)
        cluster = cloud.get_cluster("train")
        assert (cluster.status, cluster.ipus) == ("ACTIVE", 8)
        assert cluster.vipu is not None
        assert cluster.vipu.allocation_id
        assert {v.name for v in cluster.volumes} >= {"data"}
        assert cloud.cluster_metadata("train") == {"team": "a"}
        assert cloud.shell("train").kind == "relay"
        assert [c.name for c in cloud.list_clusters()] == ["train"]
        assert cloud.list_tasks(resource=cluster.id)[0].id == task.id
        gone = cloud.wait_task(cloud.delete_cluster("train", delete_volumes=True), timeout=300)
        assert gone.state is TaskState.FINISHED
        assert cloud.list_clusters() == []
        assert cloud.project().id == "c-acme"
        assert cloud.invoice().project_id == "c-acme"
        start = datetime(2025, 12, 31, 12, tzinfo=UTC)
        end = datetime(2026, 1, 2, tzinfo=UTC)
        daily = cloud.invoice_days(start, end)
        assert [(d.start, d.end) for d in daily.days] == [
            (start, start + timedelta(days=1)),
            (start + timedelta(days=1), end),
        ]
        assert isinstance(daily.total, Decimal)
        assert daily.total == sum(d.total for d in daily.days) == cloud.invoice(start, end).total


def test_async_client_follows_a_volume(live: LiveCloud) -> None:
    async def story() -> tuple[list[str], str, list[str]]:
        settings = CloudSettings(live.url, live.project("c-globex"))
        async with AsyncCloudClient(settings) as cloud:
            phases: list[str] = []
            task = await cloud.create_volume("scratch", 5)
            await cloud.wait_task(task.id, on_phase=lambda p: phases.append(p.phase))
            status = (await cloud.get_volume("scratch")).status
            await cloud.wait_task(await cloud.delete_volume("scratch"))
            left = [v.name for v in await cloud.list_volumes()]
            return phases, status, left

    phases, status, left = asyncio.run(story())
    assert phases[-1] == "FINISHED"
    assert status == "available"
    assert left == []


def test_cloud_administration(live: LiveCloud) -> None:
    with CloudClient(CloudSettings(live.url, live.admin_token)) as admin:
        created = admin.create_project("c-initech", name="Initech", quotas={"ipus": 8})
        assert created.token.token
        assert created.project.quotas["ipus"] == 8
        assert "c-initech" in [p.id for p in admin.list_projects()]
        assert admin.set_quotas("c-initech", {"ipus": 16}).quotas["ipus"] == 16
        extra = admin.issue_token("c-initech", "ci")
        assert extra.token
        assert {t.id for t in admin.list_tokens("c-initech")} >= {extra.id, created.token.id}
        with CloudClient(CloudSettings(live.url, extra.token)) as initech:
            assert initech.project().name == "Initech"
            admin.revoke_token(extra.id)
            with pytest.raises(Unauthenticated):
                initech.project()
        assert admin.project_invoice("c-initech").project_id == "c-initech"
        host = admin.register_host("c-gpu-1", "baremetal", "h100-80")
        assert (host.slots, host.enabled) == (8, True)
        admin.set_host_enabled("c-gpu-1", False)
        assert [h.enabled for h in admin.list_hosts() if h.id == "c-gpu-1"] == [False]
        admin.remove_host("c-gpu-1")
        assert "c-gpu-1" not in [h.id for h in admin.list_hosts()]
        admin.remove_project("c-initech")
        with pytest.raises(NotFound):
            admin.get_project("c-initech")


def test_cloud_errors_map_to_the_tree(live: LiveCloud, tmp_path: Path) -> None:
    cloud = tenant(live, "c-errors")
    with pytest.raises(NotFound, match="does not exist") as missing:
        cloud.get_cluster("nowhere")
    assert missing.value.status == 404
    with pytest.raises(InvalidArgument, match="no flavor") as bad:
        cloud.create_cluster("oops", "g2a-ai-fast-v1pod-61")
    assert bad.value.status == 400
    with pytest.raises(PermissionDenied):
        cloud.list_projects()
    with pytest.raises(Unauthenticated):
        CloudClient(CloudSettings(live.url, "vpod_nope.nope")).flavors()
    with pytest.raises(
        Unreachable, match=re.escape("cannot reach the cloud API at http://127.0.0.1:9")
    ):
        CloudClient(CloudSettings("http://127.0.0.1:9", "t")).flavors()
