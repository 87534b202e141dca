"""The cloud's story on the real OpenStack: the REST API of a live controller whose compute
driver is ``openstack`` and whose volume driver is ``cinder``.

A tenant creates a virtual vPOD with a data volume (a Nova server booted from a Cinder
volume, its V-IPU settings in Nova metadata), reboots, rebuilds, suspends (Nova
shelve-offload) and resumes it (unshelve, its key kept), and deletes it (nothing left in
Nova, Cinder or Neutron); a GPU VM cluster grows and shrinks; a dedicated vPOD is stopped
and started by suspension; quotas refuse what does not fit before OpenStack is asked; the
invoice bills the minutes. The steps of one cluster depend on each other: one test each.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from vpod.cloud.api.convert import task_out
from vpod.cloud.drivers.openstack_setup import HCL, from_metadata

from ..cloud.conftest import error, ok
from ..cloud.live import LiveCloud, start_cloud, stop_cloud
from .conftest import LocalOpenStack

pytestmark = [pytest.mark.openstack, pytest.mark.timeout(3600)]

VPOD4 = "g2a-ai-fast-v1pod-4"
DEDICATED4 = "bm1-ai-small-v1pod-4"
H100_VM = "g3-ai-24-232-1250-h100-80-1"
TASK_TIMEOUT_S = 1500.0
"""A safety net: Nova boots take a minute or more on a loaded test machine."""
HOSTS = [
    {"id": "hv-os", "role": "hypervisor", "model": "h100-80", "slots": 4},
    {"id": "poplar-os", "role": "baremetal", "model": "poplar"},
]


@pytest.fixture(scope="module")
def live(
    openstack_cloud: LocalOpenStack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveCloud]:
    data_dir: Path = tmp_path_factory.mktemp("openstack-cloud")
    cloud = start_cloud(
        data_dir,
        settings={
            "compute_driver": "openstack",
            "volume_driver": "cinder",
            "openstack": openstack_cloud.options,
        },
    )
    try:
        with cloud.admin() as admin:
            for host in HOSTS:
                ok(admin.post("/admin/hosts", json=host), 201)
        yield cloud
    finally:
        stop_cloud(cloud)


def run_task(live: LiveCloud, http: Any, method: str, path: str, **kwargs: Any) -> Any:
    """Start a task (202) and return its JSON once it has ended."""
    task = ok(http.request(method, path, **kwargs), 202)
    done = live.run(live.cloud.runner.wait(task["id"], TASK_TIMEOUT_S), TASK_TIMEOUT_S + 60)
    return task_out(done).model_dump(mode="json")


def finished(live: LiveCloud, http: Any, method: str, path: str, **kwargs: Any) -> Any:
    task = run_task(live, http, method, path, **kwargs)
    assert task["state"] == "FINISHED", (task.get("error"), task)
    return task


def nova_servers(openstack_cloud: LocalOpenStack, cluster: dict[str, Any]) -> list[Any]:
    conn = openstack_cloud.project()
    found = list(conn.compute.servers(tags=f"vpod-cluster-{cluster['id']}"))
    return [conn.compute.get_server(s.id) for s in found]


def test_a_virtual_vpod_lives_on_nova_and_cinder(
    live: LiveCloud, openstack_cloud: LocalOpenStack
) -> None:
    conn = openstack_cloud.project()
    with live.client(live.project("acme")) as acme:
        body = {"name": "train", "flavor": VPOD4, "volumes": [{"name": "data", "size_gib": 2}]}
        task = run_task(live, acme, "POST", "/clusters", json=body)
        assert task["state"] == "FINISHED", (task.get("error"), task)
        cluster = ok(acme.get("/clusters/train"))
        assert cluster["status"] == "ACTIVE"
        [nova] = nova_servers(openstack_cloud, cluster)
        assert (nova.status, nova.name) == ("ACTIVE", cluster["servers"][0]["name"])
        assert [a["addr"] for a in next(iter(nova.addresses.values()))] == [
            cluster["servers"][0]["address"]
        ]
        hcl = from_metadata(nova.metadata)[HCL]["content"]
        assert cluster["vipu"]["user_id"] in hcl
        assert "api-access-key" in hcl
        attached = {a["id"] for a in nova.attached_volumes}
        cinder = {v.name: v for v in conn.block_storage.volumes()}
        for volume in cluster["volumes"]:
            assert volume["status"] == "in-use"
            assert cinder[f"vpod-{volume['id']}"].status == "in-use"
            assert cinder[f"vpod-{volume['id']}"].id in attached
        shell = ok(acme.get("/clusters/train/shell"))
        assert (shell["kind"], shell["host"]) == ("ssh", cluster["servers"][0]["address"])
        assert "token" in shell["console"]

        live.clock.advance(10 * 60)
        for action in ("reboot", "rebuild"):  # rebuild takes a body (its image: the default)
            finished(live, acme, "POST", f"/clusters/train/{action}", json={})
            assert nova_servers(openstack_cloud, cluster)[0].status == "ACTIVE"

        # Suspension shelves and offloads the server; resuming brings it back, key kept.
        finished(live, acme, "POST", "/clusters/train/suspend")
        assert ok(acme.get("/clusters/train"))["servers"][0]["status"] == "SHELVED_OFFLOADED"
        assert nova_servers(openstack_cloud, cluster)[0].status == "SHELVED_OFFLOADED"
        live.clock.advance(30 * 60)
        finished(live, acme, "POST", "/clusters/train/resume")
        [nova] = nova_servers(openstack_cloud, cluster)
        assert nova.status == "ACTIVE"
        assert "api-access-key" in from_metadata(nova.metadata)[HCL]["content"]
        live.clock.advance(5 * 60)

        deleted = run_task(live, acme, "DELETE", "/clusters/train?delete_volumes=true")
        assert deleted["state"] == "FINISHED", deleted
        assert nova_servers(openstack_cloud, cluster) == []
        assert [v.name for v in conn.block_storage.volumes() if v.name.startswith("vpod-v")] == []
        assert conn.network.find_network(f"vpod-{cluster['id']}") is None

        invoice = ok(
            acme.get(
                "/invoice",
                params={"start": "2000-01-01T00:00:00Z", "end": "2100-01-01T00:00:00Z"},
            )
        )
        compute = [line for line in invoice["lines"] if line["resource_type"] == "cluster"]
        assert [(line["item"], line["minutes"]) for line in compute] == [(VPOD4, 15)]
        assert Decimal(compute[0]["amount"]) == Decimal("2.40") * 15 / 60


def test_a_gpu_vm_cluster_grows_and_shrinks_on_nova(
    live: LiveCloud, openstack_cloud: LocalOpenStack
) -> None:
    with live.client(live.project("gpus")) as http:
        key = ok(http.post("/keypairs", json={"name": "laptop"}), 201)
        body = {"name": "vms", "flavor": H100_VM, "server_count": 1, "keypairs": ["laptop"]}
        finished(live, http, "POST", "/clusters", json=body)
        cluster = ok(http.get("/clusters/vms"))
        [nova] = nova_servers(openstack_cloud, cluster)
        assert nova.flavor.original_name == "vpod.gpu"
        # The cluster's keypair reaches Nova at boot: a Nova keypair of its public key.
        assert nova.key_name == f"vpod-{cluster['servers'][0]['id']}"
        nova_key = openstack_cloud.project().compute.find_keypair(nova.key_name)
        assert nova_key is not None
        assert nova_key.public_key.split()[:2] == key["public_key"].split()[:2]
        grown = run_task(live, http, "POST", "/clusters/vms/resize", json={"server_count": 2})
        assert grown["state"] == "FINISHED", grown
        assert sorted(s.status for s in nova_servers(openstack_cloud, cluster)) == ["ACTIVE"] * 2
        shrunk = run_task(live, http, "POST", "/clusters/vms/resize", json={"server_count": 1})
        assert shrunk["state"] == "FINISHED", shrunk
        assert len(nova_servers(openstack_cloud, cluster)) == 1
        gone = run_task(live, http, "DELETE", "/clusters/vms?delete_volumes=true")
        assert gone["state"] == "FINISHED"
        assert nova_servers(openstack_cloud, cluster) == []


def test_a_dedicated_vpod_is_stopped_not_shelved(
    live: LiveCloud, openstack_cloud: LocalOpenStack
) -> None:
    with live.client(live.project("bare")) as http:
        body = {"name": "metal", "flavor": DEDICATED4}
        finished(live, http, "POST", "/clusters", json=body)
        cluster = ok(http.get("/clusters/metal"))
        finished(live, http, "POST", "/clusters/metal/suspend")
        assert nova_servers(openstack_cloud, cluster)[0].status == "SHUTOFF"
        finished(live, http, "POST", "/clusters/metal/resume")
        assert nova_servers(openstack_cloud, cluster)[0].status == "ACTIVE"
        finished(live, http, "DELETE", "/clusters/metal")
        assert nova_servers(openstack_cloud, cluster) == []


def test_quotas_refuse_before_openstack_is_asked(
    live: LiveCloud, openstack_cloud: LocalOpenStack
) -> None:
    conn = openstack_cloud.project()
    before = {s.id for s in conn.compute.servers()}
    with live.client(live.project("tight", volume_gib=1)) as http:
        body = {"name": "big", "flavor": VPOD4, "volumes": [{"name": "dataset", "size_gib": 50}]}
        message = error(http.post("/clusters", json=body), 409, "RESOURCE_EXHAUSTED")
        assert "quota" in message
    assert {s.id for s in conn.compute.servers()} == before
