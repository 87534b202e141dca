"""The real-hardware check of the GPU host agent: run it as is on a machine with NVIDIA GPUs.

    scripts/gpu-check [--data-dir DIR] [--json PATH] [--keep]

Each step prints what it ran and what came back, and the end is a summary table:

1. the real backend (NVML, ``nvidia-ml-py``) finds the GPUs: ``vpod-gpu-agent --inventory``;
2. ``vpod up --secure`` starts a controller with the cloud (its emulated GPU hosts are
   disabled for the check), and ``vpod-gpu-agent`` registers this machine as hypervisor
   ``real-gpu-1`` with the agent token ``vpod up`` made;
3. a one-GPU cluster (``g3-ai-24-232-1250-h100-80-1``; a GPU the catalog has no model for
   stands in for H100 80 GB) is created on it;
4. inside the server's sandbox: ``ls /dev/nvidia*``, ``CUDA_VISIBLE_DEVICES``,
   ``nvidia-smi -L`` and a PyTorch matmul on its one GPU (when a Python there has torch);
5. ``/metrics`` carries this host's ``DCGM_FI_DEV_*`` series.

Exit status 0 when every step that could run passed, 1 when one failed, 2 when there is
no GPU (NVML does not start). Without root and bubblewrap the server runs unsandboxed
(``--unsafe-shared-host``), and where the kernel cannot give it a network of its own it
runs sandboxed on the host's network (``unsafe_shared_network``); the output says which.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from bench_processes import start

from vpod.cloud.drivers.nvidia_userland import host_userland
from vpod.cloud.drivers.sandbox import sandbox_problem
from vpod.cloud.drivers.tenant_network import network_problem
from vpod.cloud.gpu_rules import host_model_of
from vpod.launch.cloud_up import write_cloud_settings

BIN = Path(sys.executable).parent
HOST_ID = "real-gpu-1"
FLAVOR = "g3-ai-24-232-1250-h100-80-1"
CLUSTER = "gpu-check"
IN_SERVER = r"""
echo "== device nodes"; ls -l /dev | grep nvidia
echo "== CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
echo "== NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"
echo "== nvidia-smi -L"; nvidia-smi -L
echo "== PyTorch"
for py in python3 /usr/bin/python3 /usr/local/bin/python3; do
  if $py -c 'import torch' 2>/dev/null; then
    $py - <<'PY'
import time, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "devices", torch.cuda.device_count())
assert torch.cuda.device_count() == 1, "the server must see exactly its one GPU"
print("device 0:", torch.cuda.get_device_name(0))
ok = True
for dtype in (torch.float32, torch.bfloat16):
    a = torch.randn(8192, 8192, device="cuda", dtype=dtype)
    b = torch.randn(8192, 8192, device="cuda", dtype=dtype)
    c = a @ b  # warm-up: the first product loads the kernels
    torch.cuda.synchronize(); start = time.perf_counter()
    for _ in range(10): c = a @ b
    torch.cuda.synchronize(); took = time.perf_counter() - start
    print(f"matmul {dtype} 8192^3 x10: {took:.3f} s, {10 * 2 * 8192**3 / took / 1e12:.1f} TFLOP/s")
    ok = ok and bool(torch.isfinite(c).all())
print("MATMUL OK" if ok else "MATMUL NOT FINITE")
PY
    exit $?
  fi
done
echo "PyTorch is not installed for any python3 the server sees: matmul skipped"
"""


def say(text: str) -> None:
    print(text, flush=True)


def run(
    argv: list[str], *, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    say("$ " + " ".join(argv))
    done = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    for line in (done.stdout + done.stderr).rstrip().splitlines():
        say("  " + line)
    say(f"  (exit {done.returncode})")
    return done


class Check:
    def __init__(self) -> None:
        self.results: list[tuple[str, str, str]] = []

    def record(self, step: str, ok: bool | None, detail: str) -> None:
        state = "skipped" if ok is None else "ok" if ok else "FAILED"
        self.results.append((step, state, detail))
        say(f"-> {step}: {state} {detail}")

    @property
    def failed(self) -> bool:
        return any(state == "FAILED" for _, state, _ in self.results)


def wait_ready(proc: subprocess.Popen[str], marker: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        say("  | " + line.rstrip())
        if line.startswith(marker):
            return line
    raise RuntimeError(f"no {marker!r} line within {timeout:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="Write the summary as JSON here.")
    parser.add_argument("--keep", action="store_true", help="Leave vpod up running at the end.")
    args = parser.parse_args()
    check = Check()
    agent_bin = str(BIN / "vpod-gpu-agent")
    found = run([agent_bin, "--inventory", "--json"])
    if found.returncode != 0:
        check.record("NVML inventory", False, found.stderr.strip()[-300:])
        return finish(check, args.json, 2)
    inventory = json.loads(found.stdout)["inventory"]
    gpus = inventory["gpus"]
    check.record(
        "NVML inventory",
        True,
        f"{len(gpus)} × {gpus[0]['name']}, driver {inventory['driver_version']},"
        f" CUDA {inventory['cuda_version']}",
    )
    if shutil.which("nvidia-modprobe"):  # the uvm nodes CUDA needs, made before the sandbox
        run(["nvidia-modprobe", "-u", "-c=0"])
    model = host_model_of(gpus[0]["name"], gpus[0]["memory_mib"])
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="vpod-gpu-check-"))
    up_argv = [str(BIN / "vpod"), "up", "--data-dir", str(data_dir), "--secure", "--pod", "pod16"]
    up_argv += ["--port", "0", "--admin-port", "0", "--http-port", "0"]
    problem = sandbox_problem()
    if problem is not None:
        say(f"NOTE: servers run UNSANDBOXED here ({problem})")
        up_argv.append("--unsafe-shared-host")
    else:
        network = network_problem()
        if network is not None:
            say(f"NOTE: servers are sandboxed on the host's network here ({network})")
            data_dir.mkdir(parents=True, exist_ok=True)
            write_cloud_settings(data_dir)  # what vpod up writes (an existing one is kept)
            settings = data_dir / "cloud.toml"
            if "unsafe_shared_network" not in settings.read_text():
                with settings.open("a") as toml:
                    toml.write("unsafe_shared_network = true\n")
    driver = host_userland()
    say(f"driver userland beyond /usr and the linker cache: {driver.dirs or 'none'}")
    say("$ " + " ".join(up_argv))
    up = start(up_argv)
    agent: subprocess.Popen[str] | None = None
    try:
        ready = wait_ready(up, "vpod is up:", 240)
        url = ready.split("HTTP ", 1)[1].split(",", 1)[0].strip()
        admin = httpx.Client(
            base_url=url + "/api/cloud/v1",
            headers={
                "Authorization": "Bearer " + (data_dir / "cloud-admin.token").read_text().strip()
            },
            timeout=60,
        )
        agent_argv = [agent_bin, "--controller", url, "--token-file", str(data_dir / "agent.token")]
        agent_argv += ["--host-id", HOST_ID, "--role", "hypervisor", "--interval", "1"]
        if model != "h100-80":
            say(f"NOTE: {gpus[0]['name']} stands in for h100-80 (catalog model: {model})")
            agent_argv += ["--model", "h100-80"]
        say("$ " + " ".join(agent_argv))
        agent = start(agent_argv, stderr=None)
        wait_ready(agent, "vpod-gpu-agent ready:", 60)
        host = wait_host(admin, 60)
        check.record(
            "registration",
            host is not None and all(g["healthy"] for g in host["gpus"]),
            json.dumps(host, indent=1) if host else "not registered in 60 s",
        )
        for other in admin.get("/admin/hosts").json():
            if other["id"] != HOST_ID and other["model"] != "poplar":
                admin.put(f"/admin/hosts/{other['id']}/enabled", json={"enabled": False})
        env = {k: v for k, v in os.environ.items() if not k.startswith("VPOD_")}
        env["VPOD_CONFIG"] = str(data_dir / "vpod-cli.toml")
        vpod = str(BIN / "vpod")
        made = run([vpod, "cluster", "create", CLUSTER, "--flavor", FLAVOR, "--wait"], env=env)
        check.record("GPU cluster", made.returncode == 0, "")
        shown = run([vpod, "cluster", "show", CLUSTER], env=env)
        uuids = [g["uuid"] for g in (host or {}).get("gpus", [])]
        named = [u for u in uuids if u in shown.stdout]
        check.record("cluster show names its GPU", len(named) == 1, ", ".join(named))
        inside = run([vpod, "cluster", "ssh", CLUSTER, "--", IN_SERVER], env=env, timeout=300)
        out = inside.stdout
        nodes = [
            x
            for x in out.splitlines()
            if x.rstrip().endswith(tuple(f"nvidia{i}" for i in range(64)))
        ]
        check.record(
            "only its GPU's node in /dev", len(nodes) == 1, "; ".join(n.split()[-1] for n in nodes)
        )
        listed = [x for x in out.splitlines() if x.startswith("GPU ")]
        check.record("nvidia-smi -L in the sandbox", len(listed) == 1, " | ".join(listed))
        if "matmul skipped" in out:
            check.record("PyTorch matmul on its GPU", None, "no torch in the server")
        else:
            check.record(
                "PyTorch matmul on its GPU",
                "MATMUL OK" in out,
                out.split("== PyTorch", 1)[-1].strip()[:300],
            )
        scrape = (data_dir / "metrics.token").read_text().strip()  # what Prometheus sends
        answer = httpx.get(
            url + "/metrics", headers={"Authorization": f"Bearer {scrape}"}, timeout=30
        )
        ours = [x for x in answer.text.splitlines() if x.startswith("DCGM_FI_") and HOST_ID in x]
        util = [x for x in ours if x.startswith("DCGM_FI_DEV_GPU_UTIL{")]
        for line in ours:
            say("  " + line)
        check.record(
            "DCGM series on /metrics",
            answer.status_code == 200 and len(util) == len(gpus),
            f"HTTP {answer.status_code}, {len(ours)} series, {len(util)} GPU_UTIL",
        )
        run([vpod, "cluster", "delete", CLUSTER, "--wait"], env=env)
    except Exception as exc:
        check.record("run", False, f"{type(exc).__name__}: {exc}")
    finally:
        if agent is not None:
            agent.send_signal(signal.SIGTERM)
            agent.wait(30)
        if not args.keep:
            os.killpg(up.pid, signal.SIGTERM)
            up.wait(60)
    return finish(check, args.json, 1 if check.failed else 0)


def wait_host(admin: httpx.Client, timeout: float) -> dict[str, Any] | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for host in admin.get("/admin/gpus").json():
            if host["host_id"] == HOST_ID and all(
                g["problems"] != "no health sample yet" for g in host["gpus"]
            ):
                return dict(host)
        time.sleep(0.5)
    return None


def finish(check: Check, path: Path | None, code: int) -> int:
    width = max((len(step) for step, _, _ in check.results), default=4)
    say("\nstep".ljust(width + 1) + " | result")
    for step, state, detail in check.results:
        say(f"{step.ljust(width)} | {state} {detail.splitlines()[0] if detail else ''}")
    if path is not None:
        path.write_text(
            json.dumps(
                [{"step": s, "result": r, "detail": d} for s, r, d in check.results], indent=1
            )
            + "\n"
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
