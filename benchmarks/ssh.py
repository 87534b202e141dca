"""SSH through the controller's tunnel and its direct port, beside a plain sshd on loopback,
in one run.

Runs, in this process, a secure controller serving the cloud (SQLite in a
temporary directory) over four emulated Bow-2000 machines, creates a
project, imports a fresh ed25519 key as its keypair and a virtual vPOD-4
holding it, and writes its OpenSSH configuration with the real `vpod
cluster ssh-config` (and `--direct`: the cloud gives servers direct SSH
ports, ``ssh_direct_ports``, forwarded by the controller to the same
per-connection sshd). Beside it, a plain `sshd` on a free loopback port
(host keys and authorized_keys of its own, the same client key). For each
path, with the real OpenSSH client:

- connect: `ssh HOST true`, ``--connects`` times (median and p90 seconds):
  the tunnel adds the WebSocket, the controller's authentication and a
  sandbox (bwrap + setpriv) starting `sshd -i` per connection; the direct
  port only the sandbox and the controller's byte relay;
- throughput: ``--mib`` MiB up (`cat > /dev/null`) and down (`head -c`),
  MiB/s, compression off.

Prints a table and writes JSON (``--json``). Needs root, bubblewrap and
openssh-server (scripts/ensure-system-deps).

    .venv/bin/python benchmarks/ssh.py [--json PATH] [--connects 10] [--mib 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from bench_processes import tied

from vpod.agent.addressing import AddressMode, AddressPlan
from vpod.agent.fleet import AgentFleet, FleetSettings
from vpod.cloud.drivers.sandbox import sandbox_problem
from vpod.cloud.extension import CloudServer
from vpod.cloud.settings import CloudSettings
from vpod.controller.caller import SYSTEM
from vpod.controller.server import RunningServer, serve
from vpod.controller.settings import Settings

MACHINES = 4
FLAVOR = "g2a-ai-fast-v1pod-4"
VPOD = str(Path(sys.executable).with_name("vpod"))
SSHD = "/usr/sbin/sshd"


class Controller:
    """The controller and its agents on an event loop of their own (the benchmark blocks)."""

    def __init__(self, data_dir: Path, direct_port: int) -> None:
        self.data_dir = data_dir
        self.direct_port = direct_port
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self._stop = asyncio.Event()
        self.url, self.token = self._call(self._start())

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(600)

    async def _start(self) -> tuple[str, str]:
        plan = AddressPlan(
            mode=AddressMode.PER_MACHINE, base_host="127.0.0.1", agent_port=0, server_port=0,
            rdma_port=0,
        )  # fmt: skip
        self.fleet = AgentFleet(FleetSettings(machines=MACHINES, plan=plan, stop_grace=0))
        await self.fleet.start()
        settings = Settings(
            data_dir=self.data_dir,
            user_port=0,
            admin_port=0,
            http_port=0,
            secure=True,
            agent_timeout_s=5.0,  # as the tests' live cloud: a loaded host answers slowly
        )
        cloud = CloudServer(
            CloudSettings(
                data_dir=self.data_dir,
                vipu_clusters=("pod",),
                task_poll_s=0.2,
                ssh_direct_ports=str(self.direct_port),
            )
        )
        ready: asyncio.Future[RunningServer] = self.loop.create_future()

        async def on_ready(running: RunningServer) -> None:
            cloud.listening(running)
            inventory = running.controller.inventory
            for host in self.fleet.hosts:
                await inventory.create_agent(
                    SYSTEM, host.agent_id, host.host, host.port, key=host.key
                )
            await inventory.create_cluster(SYSTEM, "pod", [h.agent_id for h in self.fleet.hosts])
            ready.set_result(running)

        self._serving = asyncio.ensure_future(
            serve(settings, ready=on_ready, stop=self._stop, extensions=[cloud])
        )
        running = await ready
        assert cloud.cloud is not None
        _, token = await cloud.cloud.projects.create("bench", quotas={"ipus": -1, "clusters": -1})
        return f"http://127.0.0.1:{running.http_port}", token.token

    def close(self) -> None:
        async def stop() -> None:
            self._stop.set()
            await self._serving
            await self.fleet.stop()

        self._call(stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(60)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run(argv: list[str], env: dict[str, str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    done = subprocess.run(argv, env=env, capture_output=True, timeout=600, check=False, **kwargs)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])}... failed: {done.stderr[-500:]!r}")
    return done


def _direct_sshd(work: Path, public_key: str) -> tuple[subprocess.Popen[bytes], str]:
    """A plain sshd on a free loopback port; its ssh_config Host block."""
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation (root's sshd)
    keys = work / "direct"
    keys.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / "host")],
                   check=True)  # fmt: skip
    (keys / "authorized_keys").write_text(public_key)
    os.chmod(keys / "authorized_keys", 0o600)
    port = _free_port()
    config = keys / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {keys / 'host'}\n"
        f"AuthorizedKeysFile {keys / 'authorized_keys'}\nPasswordAuthentication no\n"
        "UsePAM no\nPermitRootLogin prohibit-password\nPidFile none\nStrictModes no\n"
        "Subsystem sftp internal-sftp\n"
    )
    sshd = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.DEVNULL, preexec_fn=tied()
    )
    for _ in range(100):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    host_key = (keys / "host.pub").read_text().split()[:2]
    (work / "known_direct").write_text(f"[127.0.0.1]:{port} {' '.join(host_key)}\n")
    block = (
        f"Host direct\n    HostName 127.0.0.1\n    Port {port}\n    User root\n"
        f"    UserKnownHostsFile {work / 'known_direct'}\n    StrictHostKeyChecking yes\n"
        f"    IdentityFile {work / 'client'}\n    IdentitiesOnly yes\n"
    )
    return sshd, block


def _measure(
    config: Path, host: str, env: dict[str, str], connects: int, mib: int
) -> dict[str, Any]:
    ssh = ["ssh", "-F", str(config), "-o", "Compression=no", host]
    times = []
    for _ in range(connects):
        started = time.perf_counter()
        _run([*ssh, "true"], env)
        times.append(time.perf_counter() - started)
    size = mib * 1024 * 1024
    payload = os.urandom(1024 * 1024) * mib
    started = time.perf_counter()
    _run([*ssh, "cat > /dev/null"], env, input=payload)
    up_s = time.perf_counter() - started
    started = time.perf_counter()
    down = _run([*ssh, f"head -c {size} /dev/zero"], env)
    down_s = time.perf_counter() - started
    if len(down.stdout) != size:
        raise SystemExit(f"{host}: {len(down.stdout)} bytes down of {size}")
    ordered = sorted(times)
    return {
        "connect_median_s": statistics.median(times),
        "connect_p90_s": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
        "connect_runs": times,
        "upload_mib_s": mib / up_s,
        "download_mib_s": mib / down_s,
    }


def _delete_cluster(controller: Controller) -> None:
    """Delete the benchmark's cluster (its scratch image and sandboxes), best effort."""
    headers = {"Authorization": f"Bearer {controller.token}"}
    with httpx.Client(base_url=controller.url + "/api/cloud/v1", headers=headers,
                      timeout=600) as http:  # fmt: skip
        reply = http.delete("/clusters/sshbench")
        if reply.status_code == 202:
            task = reply.json()
            while task["state"] not in ("FINISHED", "ERROR"):
                task = http.get(f"/tasks/{task['id']}", params={"wait": 60}).json()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--connects", type=int, default=10, help="connections per path")
    parser.add_argument("--mib", type=int, default=64, help="MiB each way per path")
    args = parser.parse_args()
    problem = sandbox_problem()
    missing = [t for t in ("ssh", "ssh-keygen") if shutil.which(t) is None]
    if problem is not None or missing or not os.access(SSHD, os.X_OK):
        raise SystemExit(f"cannot run: {problem or ''} {missing or ''} (needs {SSHD})")
    work = Path(tempfile.mkdtemp(prefix="vpod-bench-ssh-"))
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(work / "client")],
                   check=True)  # fmt: skip
    public_key = (work / "client.pub").read_text()
    controller = Controller(work / "data", _free_port())
    sshd: subprocess.Popen[bytes] | None = None
    try:
        env = {**os.environ, "VPOD_URL": controller.url, "VPOD_TOKEN": controller.token,
               "VPOD_SSH_DIR": str(work / "vpod")}  # fmt: skip
        base = controller.url + "/api/cloud/v1"
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {controller.token}"},
                          timeout=600) as http:  # fmt: skip
            http.post("/keypairs", json={"name": "bench", "public_key": public_key})
            task = http.post(
                "/clusters", json={"name": "sshbench", "flavor": FLAVOR, "keypairs": ["bench"]}
            ).json()
            while task["state"] not in ("FINISHED", "ERROR"):
                task = http.get(f"/tasks/{task['id']}", params={"wait": 60}).json()
            if task["state"] != "FINISHED":
                raise SystemExit(f"the cluster failed: {task['error']}")
        tunnel_config = _run(
            [VPOD, "cluster", "ssh-config", "sshbench", "--identity", str(work / "client")],
            env, text=True,
        ).stdout  # fmt: skip
        port_config = _run(
            [VPOD, "cluster", "ssh-config", "--direct", "sshbench", "--identity",
             str(work / "client")],
            env, text=True,
        ).stdout  # fmt: skip
        sshd, direct_block = _direct_sshd(work, public_key)
        config, by_port = work / "ssh_config", work / "ssh_config_direct_port"
        config.write_text(tunnel_config + "\n" + direct_block)
        by_port.write_text(port_config)
        results = {
            "direct sshd (loopback)": _measure(config, "direct", env, args.connects, args.mib),
            "vpod tunnel": _measure(config, "sshbench", env, args.connects, args.mib),
            "vpod direct port": _measure(by_port, "sshbench", env, args.connects, args.mib),
        }
    finally:
        if sshd is not None:
            sshd.terminate()
            sshd.wait(30)
        _delete_cluster(controller)
        controller.close()
    direct = results["direct sshd (loopback)"]
    rows = [
        f"{'path':<24} {'connect median s':>17} {'p90 s':>7} {'up MiB/s':>9} {'down MiB/s':>11}"
    ]
    for name, r in results.items():
        rows.append(
            f"{name:<24} {r['connect_median_s']:>17.3f} {r['connect_p90_s']:>7.3f}"
            f" {r['upload_mib_s']:>9.1f} {r['download_mib_s']:>11.1f}"
        )
    for name in ("vpod tunnel", "vpod direct port"):
        r = results[name]
        connect = r["connect_median_s"] / direct["connect_median_s"]
        rows.append(
            f"{name} / plain sshd: connect x{connect:.1f},"
            f" up {r['upload_mib_s'] / direct['upload_mib_s']:.2f},"
            f" down {r['download_mib_s'] / direct['download_mib_s']:.2f}"
        )
    rows.append(f"({args.connects} connects, {args.mib} MiB each way, one run)")
    print("\n".join(rows))
    if args.json:
        document = {"flavor": FLAVOR, "connects": args.connects, "mib": args.mib, **results}
        args.json.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
