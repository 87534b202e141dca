"""GPU host agents on the emulated NVML backend: a real ``vpod-gpu-agent`` process registers
its hosts with a real controller (agent token checked), its GPUs decide capacity and
placement, a failing GPU degrades the cluster that holds it, a server sees only its own
GPUs, and ``/metrics`` carries the DCGM exporter's series."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from vpod.agent.gpu.emulated import EmulatorControls, emulated_uuid
from vpod.cloud.drivers.sandbox import sandbox_problem
from vpod.cloud.services.health import check_gpu_clusters
from vpod.controller.caller import SYSTEM

from .conftest import VPOD, error, in_shell, ok, run_task
from .live import LiveCloud, start_cloud, stop_cloud

AGENT = str(Path(sys.executable).with_name("vpod-gpu-agent"))
WAIT_S = 60.0
"""A safety net for a hung wait, not a performance threshold."""
VM_2 = "g3-ai-48-464-2500-h100-80-2"
BM_A100 = "bm2-ai-large-a100-40-8"
HOSTS = [
    {"host_id": "ghv-1", "model": "h100-80", "gpus": 4, "role": "hypervisor"},
    {"host_id": "gbm-1", "model": "a100-40", "gpus": 8, "role": "baremetal"},
    {"host_id": "gbm-2", "model": "a100-40", "gpus": 8, "role": "baremetal"},
]


@dataclass
class GpuCloud:
    live: LiveCloud
    devices: Path
    token: str
    agent: subprocess.Popen[str]
    hosts_file: Path

    def controls(self, host: str) -> EmulatorControls:
        return EmulatorControls(self.devices / host)

    def start_agent(self) -> None:
        self.agent = _start_agent(self.live, self.hosts_file, self.devices, self.token)


def _start_agent(live: LiveCloud, hosts: Path, devices: Path, token: str) -> subprocess.Popen[str]:
    env = {**os.environ, "VIPU_AGENT_TOKEN": token}
    argv = [AGENT, "--controller", live.url, "--emulate-hosts", str(hosts)]
    argv += ["--device-dir", str(devices), "--interval", "0.2"]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)


def wait_for(what: str, check: Callable[[], Any], live: LiveCloud | None = None) -> Any:
    """``check()`` once true; with ``live``, the cloud's health round runs before each try
    (its runner paces rounds by the tests' fake clock, which stands still)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        if live is not None:
            live.run(check_gpu_clusters(live.cloud.ctx))
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {WAIT_S} s for {what}")
        time.sleep(0.1)


def gpus_of(live: LiveCloud) -> dict[str, dict[str, Any]]:
    with live.admin() as admin:
        return {h["host_id"]: h for h in ok(admin.get("/admin/gpus"))}


def all_healthy(live: LiveCloud, host: str) -> bool:
    found = gpus_of(live).get(host)
    return found is not None and all(g["healthy"] for g in found["gpus"])


@pytest.fixture(scope="module")
def gpu_cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GpuCloud]:
    data_dir = tmp_path_factory.mktemp("gpu-agents")
    live = start_cloud(data_dir)
    issued = live.run(live.running.controller.agent_tokens.issue(SYSTEM, "gpu hosts"))  # type: ignore[union-attr]
    hosts_file = data_dir / "gpu-hosts.json"
    hosts_file.write_text(json.dumps(HOSTS))
    devices = data_dir / "cloud" / "gpu-devices"
    agent = _start_agent(live, hosts_file, devices, issued.token)
    cloud = GpuCloud(live, devices, issued.token, agent, hosts_file)
    try:
        assert agent.stdout is not None
        ready = agent.stdout.readline()
        assert ready.startswith("vpod-gpu-agent ready: ghv-1 (4 GPUs)"), ready
        for host in HOSTS:
            wait_for(f"{host['host_id']} healthy", lambda h=host: all_healthy(live, h["host_id"]))
        yield cloud
    finally:
        cloud.agent.send_signal(signal.SIGTERM)
        cloud.agent.wait(30)
        stop_cloud(live)


def test_the_agent_registers_each_host_with_its_inventory(gpu_cloud: GpuCloud) -> None:
    live = gpu_cloud.live
    listed = gpus_of(live)
    assert sorted(listed) == ["gbm-1", "gbm-2", "ghv-1"]
    hv = listed["ghv-1"]
    assert (hv["role"], hv["model"], hv["backend"], hv["driver_version"], hv["cuda_version"]) == (
        "hypervisor",
        "h100-80",
        "emulated",
        "550.90.07",
        "12.4",
    )
    assert [g["uuid"] for g in hv["gpus"]] == [emulated_uuid("ghv-1", i) for i in range(4)]
    assert {g["name"] for g in hv["gpus"]} == {"NVIDIA H100 80GB HBM3"}
    assert all(g["nvlinks"] == 3 and g["mig_mode"] is False for g in hv["gpus"])
    assert listed["gbm-1"]["model"] == "a100-40"  # derived from "NVIDIA A100-PCIE-40GB"
    with live.admin() as admin:
        hosts = {h["id"]: h for h in ok(admin.get("/admin/hosts"))}
    assert (hosts["ghv-1"]["slots"], hosts["gbm-1"]["slots"]) == (4, 8)


def test_registration_needs_the_agent_token_the_host_is_bound_to(gpu_cloud: GpuCloud) -> None:
    live = gpu_cloud.live
    body = _registration("ghv-1", "b1", "x", "GPU-00000000-1111-2222-3333-444444444444")
    with httpx.Client(base_url=live.url + "/api/cloud/v1") as http:
        message = error(http.post("/gpu-agents/register", json=body), 401, "UNAUTHENTICATED")
        assert "agent token" in message
        wrong = {"vipu-agent-token": "vat_0123456789abcdef.not-the-secret-at-all-000"}
        error(http.post("/gpu-agents/register", json=body, headers=wrong), 401, "UNAUTHENTICATED")
        other = live.run(live.running.controller.agent_tokens.issue(SYSTEM, "other"))  # type: ignore[union-attr]
        headers = {"vipu-agent-token": other.token}
        message = error(
            http.post("/gpu-agents/register", json=body, headers=headers), 403, "PERMISSION_DENIED"
        )
        assert "another agent token" in message
        samples = {"boot_id": "b1", "samples": []}
        error(
            http.post("/gpu-agents/ghv-1/samples", json=samples, headers=headers),
            403,
            "PERMISSION_DENIED",
        )
        # what a server could be shown is checked: only NVIDIA's device nodes
        bad = json.loads(json.dumps(body))
        bad["host_id"] = "evil-1"
        bad["inventory"]["gpus"][0]["devices"] = [{"path": "/dev/sda", "source": "/dev/sda"}]
        message = error(
            http.post("/gpu-agents/register", json=bad, headers=headers), 400, "INVALID_ARGUMENT"
        )
        assert "not an NVIDIA device node" in message
        bad["inventory"]["gpus"][0]["devices"] = [
            {"path": "/dev/nvidia0", "source": "/dev/nvidia0"}
        ]
        bad["inventory"]["gpus"][0]["name"] = "Some Other GPU"
        message = error(
            http.post("/gpu-agents/register", json=bad, headers=headers), 400, "INVALID_ARGUMENT"
        )
        assert "--model" in message


def test_each_server_gets_its_own_gpus_and_sees_only_them(gpu_cloud: GpuCloud) -> None:
    live = gpu_cloud.live
    with live.client(live.project("gpuvm")) as http:
        body = {"name": "pair", "flavor": VM_2, "server_count": 2}
        assert run_task(live, http, "POST", "/clusters", json=body)["state"] == "FINISHED"
        cluster = ok(http.get("/clusters/pair"))
        held = [[g["uuid"] for g in s["gpus"]] for s in cluster["servers"]]
        assert [len(h) for h in held] == [2, 2]
        assert set(held[0]).isdisjoint(held[1])
        assert set(held[0]) | set(held[1]) == {emulated_uuid("ghv-1", i) for i in range(4)}
        shown = subprocess.run(
            [VPOD, "cluster", "show", "pair"],
            env={**_vpod_env(http)},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        for uuid in held[0] + held[1]:
            assert uuid in shown
        if sandbox_problem() is not None:
            pytest.skip(f"servers are not sandboxed here: {sandbox_problem()}")
        for position, uuids in enumerate(held, start=1):
            seen = in_shell(
                http,
                "pair",
                "ls /dev | grep nvidia; echo $CUDA_VISIBLE_DEVICES; echo $NVIDIA_VISIBLE_DEVICES;"
                " head -c 40 /dev/nvidia-uvm",
                server=position,
            )
            assert seen.returncode == 0, seen.stderr
            lines = seen.stdout.splitlines()
            indexes = sorted(
                int(u) for u in (line.removeprefix("nvidia") for line in lines[:-3]) if u.isdigit()
            )
            expected = sorted(int(g["index"]) for g in cluster["servers"][position - 1]["gpus"])
            assert indexes == expected
            assert {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"} <= set(lines[:-3])
            assert lines[-3] == lines[-2] == ",".join(uuids)
            assert lines[-1].startswith("stand-in for /dev/nvidia-uvm")
        assert (
            run_task(live, http, "DELETE", "/clusters/pair?delete_volumes=true")["state"]
            == "FINISHED"
        )


def _vpod_env(http: httpx.Client) -> dict[str, str]:
    base = str(http.base_url).rstrip("/").removesuffix("/api/cloud/v1")
    token = http.headers["Authorization"].removeprefix("Bearer ")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VPOD_")}
    return {**env, "VPOD_URL": base, "VPOD_TOKEN": token}


def test_a_gpu_that_fails_in_use_degrades_its_cluster_naming_gpu_and_error(
    gpu_cloud: GpuCloud,
) -> None:
    live = gpu_cloud.live
    with live.client(live.project("gpubm")) as http:
        body = {"name": "bm-x", "flavor": BM_A100, "server_count": 1}
        assert run_task(live, http, "POST", "/clusters", json=body)["state"] == "FINISHED"
        cluster = ok(http.get("/clusters/bm-x"))
        server = cluster["servers"][0]
        host = server["host_id"]
        gpu = server["gpus"][3]
        gpu_cloud.controls(host).inject_xid(3, 79)
        try:
            degraded = wait_for(
                "DEGRADED",
                lambda: (c := ok(http.get("/clusters/bm-x")))["status"] == "DEGRADED" and c,
                live,
            )
            assert f"GPU 3 ({gpu['uuid']}) of host {host}" in degraded["error"]
            assert "XID 79 (GPU has fallen off the bus)" in degraded["error"]
            assert server["name"] in degraded["error"]
            shown = ok(http.get("/clusters/bm-x"))["servers"][0]["gpus"][3]
            assert (shown["healthy"], shown["last_xid"]) == (False, 79)
        finally:
            gpu_cloud.controls(host).clear(3)
        wait_for("ACTIVE again", lambda: ok(http.get("/clusters/bm-x"))["status"] == "ACTIVE", live)
        assert ok(http.get("/clusters/bm-x"))["error"] == ""
        assert run_task(live, http, "DELETE", "/clusters/bm-x")["state"] == "FINISHED"


def test_an_unhealthy_gpu_is_never_handed_out(gpu_cloud: GpuCloud) -> None:
    live = gpu_cloud.live
    with live.client(live.project("hot")) as http:

        def capacity(flavor: str) -> int:
            return int(next(f for f in ok(http.get("/flavors")) if f["name"] == flavor)["capacity"])

        assert capacity(BM_A100) == 2
        assert capacity(VM_2) == 2
        gpu_cloud.controls("gbm-1").make_hot(5)
        gpu_cloud.controls("ghv-1").set(0, ecc_uncorrected=2)
        try:
            wait_for("gbm-1 unhealthy", lambda: not all_healthy(live, "gbm-1"))
            wait_for("ghv-1 unhealthy", lambda: not all_healthy(live, "ghv-1"))
            problems = {g["index"]: g["problems"] for g in gpus_of(live)["gbm-1"]["gpus"]}
            assert problems[5] == "temperature 95 °C at or above 90 °C"
            assert capacity(BM_A100) == 1
            assert capacity(VM_2) == 1  # GPUs 1..3 of ghv-1: one 2-GPU VM
            body = {"name": "two-1", "flavor": BM_A100, "server_count": 2}
            message = error(http.post("/clusters", json=body), 409, "RESOURCE_EXHAUSTED")
            assert "not enough free a100-40 hosts" in message
            body = {"name": "one-1", "flavor": BM_A100, "server_count": 1}
            assert run_task(live, http, "POST", "/clusters", json=body)["state"] == "FINISHED"
            assert ok(http.get("/clusters/one-1"))["servers"][0]["host_id"] == "gbm-2"
            body = {"name": "vm-1", "flavor": VM_2, "server_count": 1}
            assert run_task(live, http, "POST", "/clusters", json=body)["state"] == "FINISHED"
            vm = ok(http.get("/clusters/vm-1"))["servers"][0]
            assert 0 not in {g["index"] for g in vm["gpus"]}
            for name in ("one-1", "vm-1"):
                assert (
                    run_task(live, http, "DELETE", f"/clusters/{name}?delete_volumes=true")["state"]
                    == "FINISHED"
                )
        finally:
            gpu_cloud.controls("gbm-1").clear()
            gpu_cloud.controls("ghv-1").clear()
        wait_for("healthy again", lambda: all_healthy(live, "gbm-1") and all_healthy(live, "ghv-1"))
        assert capacity(BM_A100) == 2


def test_metrics_carry_the_dcgm_exporter_series(gpu_cloud: GpuCloud) -> None:
    live = gpu_cloud.live
    gpu_cloud.controls("gbm-2").set(2, utilization_pct=87, memory_used_mib=1234, power_w=250.5)
    try:

        def line(series: str) -> str | None:
            text = live.metrics()
            uuid = emulated_uuid("gbm-2", 2)
            return next(
                (x for x in text.splitlines() if x.startswith(series + "{") and uuid in x), None
            )

        wait_for(
            "utilisation",
            lambda: (found := line("DCGM_FI_DEV_GPU_UTIL")) and found.endswith(" 87.0"),
        )
        text = live.metrics()
        assert "# TYPE DCGM_FI_DEV_GPU_UTIL gauge" in text
        assert "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB)." in text
        fb = line("DCGM_FI_DEV_FB_USED")
        assert fb is not None
        assert fb.endswith(" 1234.0")
        for label in (
            'gpu="2"',
            'device="nvidia2"',
            'modelName="NVIDIA A100-PCIE-40GB"',
            'Hostname="gbm-2"',
            'DCGM_FI_DRIVER_VERSION="550.90.07"',
        ):
            assert label in fb
        power = line("DCGM_FI_DEV_POWER_USAGE")
        assert power is not None
        assert power.endswith(" 250.5")
        for series in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_FB_FREE"):
            assert line(series) is not None
        assert sum(1 for x in text.splitlines() if x.startswith("DCGM_FI_DEV_GPU_UTIL{")) == 20
    finally:
        gpu_cloud.controls("gbm-2").clear()


def test_a_silent_agent_takes_its_hosts_out_and_degrades_their_clusters(
    gpu_cloud: GpuCloud,
) -> None:
    live = gpu_cloud.live
    with live.client(live.project("quiet")) as http:
        body = {"name": "quiet-1", "flavor": BM_A100, "server_count": 1}
        assert run_task(live, http, "POST", "/clusters", json=body)["state"] == "FINISHED"
        host = ok(http.get("/clusters/quiet-1"))["servers"][0]["host_id"]
        gpu_cloud.agent.send_signal(signal.SIGTERM)
        gpu_cloud.agent.wait(30)
        try:
            live.clock.advance(60)
            degraded = wait_for(
                "DEGRADED",
                lambda: (c := ok(http.get("/clusters/quiet-1")))["status"] == "DEGRADED" and c,
                live,
            )
            assert f"the GPU agent of host {host} is silent" in degraded["error"]
            flavors = {f["name"]: f["capacity"] for f in ok(http.get("/flavors"))}
            assert (flavors[BM_A100], flavors[VM_2]) == (0, 0)
        finally:
            gpu_cloud.start_agent()
        wait_for(
            "ACTIVE again", lambda: ok(http.get("/clusters/quiet-1"))["status"] == "ACTIVE", live
        )
        assert run_task(live, http, "DELETE", "/clusters/quiet-1")["state"] == "FINISHED"


def test_operators_see_the_gpu_hosts_with_either_credentials_tenants_do_not(
    gpu_cloud: GpuCloud,
) -> None:
    """The web console's operators hold V-IPU credentials: a V-IPU administrator reads
    ``/admin/gpus`` as a cloud administrator does; a V-IPU user and a project do not."""
    live = gpu_cloud.live
    inventory = live.running.controller.inventory  # type: ignore[union-attr]
    admin_key = live.run(inventory.create_user(SYSTEM, "gpu-ops", [], admin=True)).access_key
    user_key = live.run(inventory.create_user(SYSTEM, "gpu-user", [])).access_key
    with httpx.Client(base_url=live.url + "/api/cloud/v1", timeout=60) as http:
        headers = {"x-vipu-user-id": "gpu-ops", "x-vipu-access-key": admin_key}
        assert sorted(h["host_id"] for h in ok(http.get("/admin/gpus", headers=headers))) == [
            "gbm-1",
            "gbm-2",
            "ghv-1",
        ]
        headers = {"x-vipu-user-id": "gpu-user", "x-vipu-access-key": user_key}
        error(http.get("/admin/gpus", headers=headers), 403, "PERMISSION_DENIED")
        headers = {"x-vipu-user-id": "gpu-ops", "x-vipu-access-key": "wrong"}
        error(http.get("/admin/gpus", headers=headers), 401, "UNAUTHENTICATED")
        error(http.get("/admin/gpus"), 401, "UNAUTHENTICATED")
    with live.client(live.project("nosy")) as http:
        error(http.get("/admin/gpus"), 403, "PERMISSION_DENIED")


def _requests_to(live: LiveCloud, route: str) -> int:
    """How many requests ``route`` (a route template) has served, any status, by ``/metrics``."""
    return sum(
        int(sample.value)
        for family in text_string_to_metric_families(live.metrics())
        for sample in family.samples
        if sample.name == "vpod_http_requests_total" and sample.labels.get("route") == route
    )


BATCH = "/api/cloud/v1/gpu-agents/samples"
ALONE = "/api/cloud/v1/gpu-agents/{host}/samples"


def test_an_agent_serving_several_hosts_sends_their_samples_in_one_request(
    gpu_cloud: GpuCloud,
) -> None:
    """The agent process emulating three hosts reports them together, one request per
    interval for all three, never a request per host."""
    live = gpu_cloud.live
    before, alone = _requests_to(live, BATCH), _requests_to(live, ALONE)
    wait_for("five more batches", lambda: _requests_to(live, BATCH) >= before + 5)
    assert _requests_to(live, ALONE) == alone
    # ... and the samples of all three arrived through it
    for host in HOSTS:
        assert all(
            g["temperature_c"] is not None for g in gpus_of(live)[host["host_id"]]["gpus"]
        ), host


def _registration(host_id: str, boot_id: str, hostname: str, uuid: str) -> dict[str, Any]:
    """A registration of a hypervisor host with one H100, as an agent sends it."""
    gpu = {
        "index": 0,
        "uuid": uuid,
        "name": "NVIDIA H100 80GB HBM3",
        "memory_mib": 81559,
        "pci_bus_id": "00000000:18:00.0",
        "minor": 0,
        "mig_mode": None,
        "devices": [{"path": "/dev/nvidia0", "source": "/dev/nvidia0"}],
    }
    inventory = {
        "hostname": hostname,
        "driver_version": "1",
        "cuda_version": "12.0",
        "backend": "emulated",
        "gpus": [gpu],
    }
    return {"host_id": host_id, "role": "hypervisor", "boot_id": boot_id, "inventory": inventory}


def _register(http: httpx.Client, host_id: str, boot_id: str, token: str) -> None:
    body = _registration(host_id, boot_id, host_id, emulated_uuid(host_id, 0))
    ok(http.post("/gpu-agents/register", json=body, headers={"vipu-agent-token": token}))


def _sample(host_id: str, *, healthy: bool = True) -> dict[str, Any]:
    reading = {"index": 0, "uuid": emulated_uuid(host_id, 0), "temperature_c": 40}
    problems = [] if healthy else ["GPU 0 reported XID 79 (fell off the bus)"]
    return {"reading": reading, "healthy": healthy, "problems": problems}


def test_a_batch_of_samples_judges_each_host_on_its_own(gpu_cloud: GpuCloud) -> None:
    """A host refused in a batch (not registered, registered by another run, bound to another
    token, a GPU it did not register) is refused as the single-host route refuses it, in its
    own entry, and the other hosts' samples are taken."""
    live = gpu_cloud.live
    own = {"vipu-agent-token": gpu_cloud.token}
    with httpx.Client(base_url=live.url + "/api/cloud/v1", timeout=60) as http:
        _register(http, "gbatch-1", "run-1", gpu_cloud.token)
        _register(http, "gbatch-2", "run-2", gpu_cloud.token)
        strange = _sample("gbatch-2")
        strange["reading"] = {**strange["reading"], "index": 7}
        reports = [
            {"host_id": "gbatch-1", "boot_id": "run-1", "samples": [_sample("gbatch-1")]},
            {"host_id": "gnone-1", "boot_id": "run-9", "samples": []},
            {"host_id": "ghv-1", "boot_id": "an-older-run", "samples": []},
            {"host_id": "gbatch-2", "boot_id": "run-2", "samples": [strange]},
        ]
        results = ok(http.post("/gpu-agents/samples", json={"reports": reports}, headers=own))
        outcome = {r["host_id"]: r for r in results["results"]}
        assert [r["host_id"] for r in results["results"]] == [r["host_id"] for r in reports]
        assert outcome["gbatch-1"] == {"host_id": "gbatch-1", "accepted": True, "error": None}
        for host, words in (
            ("gnone-1", "is not registered"),
            ("ghv-1", "another agent run"),
            ("gbatch-2", "GPU 7 of host gbatch-2 is not the one registered"),
        ):
            assert not outcome[host]["accepted"], outcome[host]
            assert outcome[host]["error"]["code"] == "NOT_FOUND", outcome[host]
            assert words in outcome[host]["error"]["message"], outcome[host]
        # the sample taken is the one shown, and a failing GPU is taken out as by the route
        gpu = gpus_of(live)["gbatch-1"]["gpus"][0]
        assert gpu["healthy"]
        assert gpu["temperature_c"] == 40
        sick = [
            {
                "host_id": "gbatch-1",
                "boot_id": "run-1",
                "samples": [_sample("gbatch-1", healthy=False)],
            }
        ]
        ok(http.post("/gpu-agents/samples", json={"reports": sick}, headers=own))
        assert not gpus_of(live)["gbatch-1"]["gpus"][0]["healthy"]
        # another token, or none, reaches no host bound to this one
        other = live.run(live.running.controller.agent_tokens.issue(SYSTEM, "batch-other"))  # type: ignore[union-attr]
        for headers in ({"vipu-agent-token": other.token}, {}):
            reply = ok(
                http.post("/gpu-agents/samples", json={"reports": reports[:1]}, headers=headers)
            )
            [only] = reply["results"]
            assert (only["accepted"], only["error"]["code"]) == (False, "PERMISSION_DENIED"), only
    with live.admin() as admin:
        for host in ("gbatch-1", "gbatch-2"):
            ok(admin.delete(f"/admin/hosts/{host}"), 204)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"reports": []}, "reports"),
        ({"reports": [{"host_id": "g-1", "boot_id": "b", "samples": []}] * 2}, "more than once"),
        (
            {
                "reports": [
                    {"host_id": f"g-{n}", "boot_id": "b", "samples": []} for n in range(1025)
                ]
            },
            "reports",
        ),
        ({"reports": [{"host_id": "g-1", "boot_id": "b", "samples": [], "extra": 1}]}, "extra"),
        ({"reports": [], "surplus": True}, "surplus"),
        ({"reports": [{"host_id": "g" * 64, "boot_id": "b", "samples": []}]}, "host_id"),
    ],
    ids=[
        "empty",
        "repeated-host",
        "too-many-hosts",
        "unknown-field",
        "unknown-top-field",
        "long-id",
    ],
)
def test_a_malformed_batch_is_refused_whole_with_what_to_fix(
    gpu_cloud: GpuCloud, body: dict[str, Any], words: str
) -> None:
    headers = {"vipu-agent-token": gpu_cloud.token}
    with httpx.Client(base_url=gpu_cloud.live.url + "/api/cloud/v1", timeout=60) as http:
        message = error(
            http.post("/gpu-agents/samples", json=body, headers=headers), 400, "INVALID_ARGUMENT"
        )
    assert words in message or words in json.dumps(message), message
