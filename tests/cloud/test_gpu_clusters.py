"""GPU clusters: whole bare-metal servers in one InfiniBand fabric, resize, GPU VMs with volumes,
what bare metal refuses, GPU quotas, and dedicated vPODs on bare-metal Poplar hosts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from vpod.cloud.drivers import Layout, LocalCompute

from .conftest import error, in_shell, meter_of, ok, run_task
from .gates import GatedCompute
from .live import LiveCloud, start_cloud, stop_cloud

H100_BM = "bm3-ai-1xlarge-h100-80-8"
H100_VM = "g3-ai-24-232-1250-h100-80-1"

HOSTS = [
    *(
        {"id": f"h100-a{i}", "role": "baremetal", "model": "h100-80", "fabric": "ib-a"}
        for i in range(3)
    ),
    *(
        {"id": f"h100-b{i}", "role": "baremetal", "model": "h100-80", "fabric": "ib-b"}
        for i in range(2)
    ),
    {"id": "hv-1", "role": "hypervisor", "model": "h100-80", "slots": 2},
    {"id": "poplar-1", "role": "baremetal", "model": "poplar"},
]


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveCloud, GatedCompute]]:
    """A live cloud whose compute driver can be made to fail, with the hosts above."""
    data_dir: Path = tmp_path_factory.mktemp("gpu")
    compute = GatedCompute(LocalCompute(Layout(data_dir / "cloud")))
    live = start_cloud(data_dir, compute=compute)
    try:
        with live.admin() as admin:
            for host in HOSTS:
                ok(admin.post("/admin/hosts", json=host), 201)
        yield live, compute
    finally:
        stop_cloud(live)


@pytest.fixture
def live(gated: tuple[LiveCloud, GatedCompute]) -> LiveCloud:
    return gated[0]


def fabric_of(live: LiveCloud, cluster: dict[str, object]) -> set[str]:
    with live.admin() as admin:
        fabrics = {h["id"]: h["fabric"] for h in ok(admin.get("/admin/hosts"))}
    return {fabrics[s["host_id"]] for s in cluster["servers"]}  # type: ignore[attr-defined,index]


def test_an_ib_cluster_takes_whole_servers_in_one_fabric_and_resizes_within_it(
    live: LiveCloud,
) -> None:
    """Two servers land in ib-b (best fit); growing to 3 is refused there and rolled back;
    shrinking to 1 frees a host."""
    with live.client(live.project("trainers")) as http:
        body = {"name": "llm", "flavor": H100_BM, "server_count": 2}
        task = run_task(live, http, "POST", "/clusters", json=body)
        assert [p["phase"] for p in task["phases"]] == [
            "NETWORK",
            "POPLAR_SERVERS",
            "POST_DEPLOY_SETUP",
            "FINISHED",
        ]
        cluster = ok(http.get("/clusters/llm"))
        assert (cluster["gpus"], cluster["fabric"]) == (16, "ib-b")
        assert fabric_of(live, cluster) == {"ib-b"}
        assert ok(http.get("/project"))["usage"]["gpus_h100"] == 16
        env = in_shell(http, "llm", "echo $VPOD_IB_FABRIC $CUDA_VISIBLE_DEVICES; cat ../etc/hosts")
        assert env.stdout.split()[:2] == ["ib-b", "0,1,2,3,4,5,6,7"]
        assert "llm-gpu-2" in env.stdout

        message = error(
            http.post("/clusters/llm/resize", json={"server_count": 3}), 409, "RESOURCE_EXHAUSTED"
        )
        assert "fabric ib-b, where the cluster's servers are, has no room" in message
        assert ok(http.get("/clusters/llm"))["status"] == "ACTIVE"

        shrunk = run_task(live, http, "POST", "/clusters/llm/resize", json={"server_count": 1})
        assert [p["phase"] for p in shrunk["phases"]] == [
            "CLUSTER_RESIZE",
            "POST_DEPLOY_SETUP",
            "FINISHED",
        ]
        cluster = ok(http.get("/clusters/llm"))
        assert [s["name"] for s in cluster["servers"]] == ["llm-gpu-1"]
        with live.admin() as admin:
            free = {h["id"]: h["free_slots"] for h in ok(admin.get("/admin/hosts"))}
        assert sorted(h for h, n in free.items() if h.startswith("h100-b") and n == 8) == [
            "h100-b1"
        ]

        grown = run_task(live, http, "POST", "/clusters/llm/resize", json={"server_count": 2})
        assert grown["state"] == "FINISHED"
        assert fabric_of(live, ok(http.get("/clusters/llm"))) == {"ib-b"}
        assert run_task(live, http, "DELETE", "/clusters/llm")["state"] == "FINISHED"


def test_a_growth_that_fails_is_rolled_back_to_the_old_size(
    gated: tuple[LiveCloud, GatedCompute],
) -> None:
    """The new server cannot be built: the task ends ERROR, the cluster is ACTIVE with its
    old servers, and the quota and host it took are given back."""
    live, compute = gated
    with live.client(live.project("growers")) as http:
        body = {"name": "grow", "flavor": H100_BM}
        assert run_task(live, http, "POST", "/clusters", json=body)["state"] == "FINISHED"
        compute.fail_next("create_server", "the BMC of the new server does not answer")
        task = run_task(live, http, "POST", "/clusters/grow/resize", json={"server_count": 2})
        assert task["state"] == "ERROR"
        assert task["error"] == "the BMC of the new server does not answer"
        cluster = ok(http.get("/clusters/grow"))
        assert (cluster["status"], cluster["server_count"], cluster["gpus"]) == ("ACTIVE", 1, 8)
        assert [s["name"] for s in cluster["servers"]] == ["grow-gpu-1"]
        assert ok(http.get("/project"))["usage"]["gpus_h100"] == 8
        meter = meter_of(live, cluster["id"])
        assert [(m.state, m.quantity) for m in meter[-2:]] == [("RESIZING", 1), ("ACTIVE", 1)]
        assert run_task(live, http, "DELETE", "/clusters/grow")["state"] == "FINISHED"


def test_bare_metal_refuses_volumes_and_suspension(live: LiveCloud) -> None:
    """Attaching a volume to bare metal and suspending bare-metal GPUs are refused."""
    with live.client(live.project("metal")) as http:
        assert run_task(live, http, "POST", "/clusters", json={"name": "iron", "flavor": H100_BM})
        assert run_task(live, http, "POST", "/volumes", json={"name": "data", "size_gib": 10})
        message = error(
            http.post("/volumes/data/attach", json={"cluster": "iron"}), 409, "FAILED_PRECONDITION"
        )
        assert "bare-metal servers take no external volumes" in message
        message = error(http.post("/clusters/iron/suspend"), 400, "INVALID_ARGUMENT")
        assert "cannot be suspended; delete the cluster to stop paying" in message
        assert run_task(live, http, "DELETE", "/clusters/iron")["state"] == "FINISHED"


def test_a_gpu_vm_cluster_takes_volumes_and_suspends(live: LiveCloud) -> None:
    """Two 1-GPU VMs share a 2-GPU hypervisor; suspension shelves them, keeps volumes, stops
    compute billing; a third VM finds no room."""
    with live.client(live.project("vms")) as http:
        body = {
            "name": "vms",
            "flavor": H100_VM,
            "server_count": 2,
            "volumes": [{"name": "dataset", "size_gib": 5}],
        }
        assert run_task(live, http, "POST", "/clusters", json=body)["state"] == "FINISHED"
        cluster = ok(http.get("/clusters/vms"))
        assert {s["host_id"] for s in cluster["servers"]} == {"hv-1"}
        assert sorted(v["name"] for v in cluster["volumes"]) == [
            "dataset",
            "vms-gpu-1-boot",
            "vms-gpu-2-boot",
        ]
        message = error(
            http.post("/clusters", json={"name": "more", "flavor": H100_VM}),
            409,
            "RESOURCE_EXHAUSTED",
        )
        assert "no capacity for g3-ai-24-232-1250-h100-80-1" in message
        assert run_task(live, http, "POST", "/clusters/vms/suspend")["state"] == "FINISHED"
        cluster = ok(http.get("/clusters/vms"))
        assert {s["status"] for s in cluster["servers"]} == {"SHELVED_OFFLOADED"}
        assert {v["status"] for v in cluster["volumes"]} == {"in-use"}
        meter = meter_of(live, cluster["id"])
        assert (meter[-1].state, meter[-1].billable, meter[-1].quantity) == ("SUSPENDED", False, 2)
        assert run_task(live, http, "POST", "/clusters/vms/resume")["state"] == "FINISHED"
        assert (
            run_task(live, http, "DELETE", "/clusters/vms?delete_volumes=true")["state"]
            == "FINISHED"
        )
        assert ok(http.get("/volumes")) == []


def test_gpu_quotas_count_gpus_per_family(live: LiveCloud) -> None:
    """gpus_h100 = 8: one 8-GPU server fits, two do not."""
    with live.client(live.project("frugal", gpus_h100=8)) as http:
        body = {"name": "two", "flavor": H100_BM, "server_count": 2}
        message = error(http.post("/clusters", json=body), 409, "RESOURCE_EXHAUSTED")
        assert "quota gpus_h100 is 8 and 0 are in use" in message
        limits = ok(http.post("/check_limits", json={"flavor": H100_BM, "server_count": 1}))
        assert limits["fits"] is True


def test_a_dedicated_vpod_takes_a_bare_metal_poplar_host_and_bills_while_suspended(
    live: LiveCloud,
) -> None:
    """bm1-ai-small-v1pod-4 uses the one Poplar host; suspended, it powers off and still bills."""
    with live.client(live.project("dedicated")) as http:
        body = {"name": "ded", "flavor": "bm1-ai-small-v1pod-4"}
        assert run_task(live, http, "POST", "/clusters", json=body)["state"] == "FINISHED"
        cluster = ok(http.get("/clusters/ded"))
        assert cluster["servers"][0]["host_id"] == "poplar-1"
        assert cluster["volumes"] == []
        assert in_shell(http, "ded", "vipu create partition dp --size 4").returncode == 0
        second = error(
            http.post("/clusters", json={**body, "name": "ded2"}), 409, "RESOURCE_EXHAUSTED"
        )
        assert "no capacity for bm1-ai-small-v1pod-4" in second
        assert run_task(live, http, "POST", "/clusters/ded/suspend")["state"] == "FINISHED"
        cluster = ok(http.get("/clusters/ded"))
        assert cluster["servers"][0]["status"] == "SHUTOFF"
        meter = meter_of(live, cluster["id"])
        assert (meter[-1].state, meter[-1].billable) == ("SUSPENDED", True)
        assert run_task(live, http, "POST", "/clusters/ded/resume")["state"] == "FINISHED"
        assert "dp" in in_shell(http, "ded", "vipu list partitions").stdout
        assert run_task(live, http, "DELETE", "/clusters/ded")["state"] == "FINISHED"
