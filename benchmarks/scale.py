"""How the embedded pod scales: ``vpod up`` from pod64 to pod4096 on this machine.

For each shape this starts a real ``vpod up --no-cloud`` (a ``vipu-server`` on
SQLite and one ``vipu-agent`` process hosting every machine) in a temporary
data directory on free ports and measures:

- **ready**: seconds from the start until ``vpod up`` prints that the pod is up
  (every agent registered, the cluster, allocation and user made);
- **resident memory** of the controller and of the agent process (``VmRSS``);
- **idle CPU** of each, as a share of one core over ``--idle`` seconds after the
  pod settled, with no call from outside: heartbeats and recovery rounds only;
- **detection**: an extra agent (its own process) registers, is SIGKILLed, and
  the benchmark polls until the controller reports it offline; the
  controller's rule is silence for 3 s, so about 3 to 4 s is the target;
- **create**: seconds to create the shape's largest partition (every IPU,
  one GCD per 64 IPUs) through the user API, until it is ACTIVE.

    .venv/bin/python benchmarks/scale.py [--json PATH] [--shapes pod64,pod256,pod1024,pod4096]

Numbers on a shared 2-core machine move with whatever else runs: compare rows of
one run, not runs of different days.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bench_processes import LOOPBACK_AGENT, cpu_seconds, stop, tied

from vpod.client import AdminClient, UserClient
from vpod.client.admin_records import AgentState
from vpod.domain.topology import shape

BIN = Path(sys.executable).parent
SHAPES = "pod64,pod256,pod1024,pod4096"


@dataclass
class Row:
    pod: str
    machines: int
    ready_s: float
    controller_rss_mb: float
    agents_rss_mb: float
    controller_idle_cpu: float
    """Share of one core, 0..1."""
    agents_idle_cpu: float
    detection_s: float
    largest_partition: int
    create_s: float


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.extend(int(p) for p in text)
    return found


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _wait_line(proc: subprocess.Popen[str], marker: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    seen: list[str] = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            said = "".join(seen[-5:])
            program = str(proc.args[0]) if isinstance(proc.args, list) else str(proc.args)
            raise RuntimeError(f"{program} exited ({proc.wait()}) before {marker!r}: {said}")
        if marker in line:
            return line
        seen.append(line)
    raise RuntimeError(f"no {marker!r} in {timeout:.0f} s")


def _detection(admin: AdminClient, admin_port: int, probe_id: str, env: dict[str, str]) -> float:
    """Seconds from SIGKILL of a lone agent until the controller reports it offline."""
    probe = subprocess.Popen(
        [
            str(BIN / "vipu-agent"),
            "--agent-id",
            probe_id,
            *LOOPBACK_AGENT,
            "--register",
            f"127.0.0.1:{admin_port}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        preexec_fn=tied(),
    )
    try:
        _wait_line(probe, "vipu-agent ready", 30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # registered, and heard by a heartbeat
            agent = next((a for a in admin.list_agents() if a.id == probe_id), None)
            if agent is not None and agent.state is AgentState.ONLINE and agent.last_seen:
                break
            time.sleep(0.2)
        else:
            raise RuntimeError(f"{probe_id} never came online")
        probe.kill()
        killed = time.monotonic()
        while time.monotonic() - killed < 30:
            agent = next(a for a in admin.list_agents() if a.id == probe_id)
            if agent.state is AgentState.OFFLINE:
                return time.monotonic() - killed
            time.sleep(0.1)
        raise RuntimeError(f"{probe_id} not reported offline in 30 s")
    finally:
        probe.kill()
        probe.wait()


def measure(pod_name: str, idle_s: float) -> Row:
    pod = shape(pod_name)
    with tempfile.TemporaryDirectory(prefix=f"vpod-scale-{pod_name}-") as tmp:
        data = Path(tmp) / "data"
        port, admin_port, http_port = _free_port(), _free_port(), _free_port()
        argv = [str(BIN / "vpod"), "up", "--data-dir", str(data), "--pod", pod_name]
        argv += ["--port", str(port), "--admin-port", str(admin_port)]
        argv += ["--http-port", str(http_port), "--no-cloud"]
        started = time.monotonic()
        up = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=tied()
        )
        try:
            _wait_line(up, "vpod is up", 300)
            ready_s = time.monotonic() - started
            kids = {_cmdline(p): p for p in _children(up.pid)}
            server = next(p for c, p in kids.items() if "vipu-server" in c)
            agents = next(p for c, p in kids.items() if "vipu-agent" in c)
            time.sleep(3)  # the first recovery round and reconciliation pass
            cpu0 = (cpu_seconds(server), cpu_seconds(agents), time.monotonic())
            time.sleep(idle_s)
            cpu1 = (cpu_seconds(server), cpu_seconds(agents), time.monotonic())
            wall = cpu1[2] - cpu0[2]
            rss = (_rss_mb(server), _rss_mb(agents))
            admin_config = data / "admin.vipu-cli.hcl"
            user_config = data / "vipu-cli.hcl"
            admin = AdminClient.from_config(
                str(admin_config if admin_config.exists() else user_config)
            )
            env = dict(os.environ)
            token = data / "agent.token"  # a secure pod admits agents with its token
            if token.exists():
                env["VIPU_AGENT_TOKEN"] = token.read_text().splitlines()[0].strip()
            with admin, UserClient.from_config(str(user_config)) as user:
                detection_s = _detection(admin, admin_port, f"probe-{pod_name}", env)
                size = pod.num_ipus
                t0 = time.monotonic()
                user.create_partition("largest", size, num_gcds=max(1, size // 64))
                create_s = time.monotonic() - t0
            return Row(
                pod=pod_name,
                machines=pod.num_machines,
                ready_s=round(ready_s, 1),
                controller_rss_mb=round(rss[0], 1),
                agents_rss_mb=round(rss[1], 1),
                controller_idle_cpu=round((cpu1[0] - cpu0[0]) / wall, 3),
                agents_idle_cpu=round((cpu1[1] - cpu0[1]) / wall, 3),
                detection_s=round(detection_s, 2),
                largest_partition=size,
                create_s=round(create_s, 2),
            )
        finally:
            stop(up, timeout=60)


def _table(rows: list[Row]) -> str:
    head = (
        f"{'pod':<9}{'machines':>9}{'ready s':>9}{'ctl MB':>8}{'agt MB':>8}"
        f"{'ctl idle':>10}{'agt idle':>10}{'detect s':>10}{'create s':>10}"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"{r.pod:<9}{r.machines:>9}{r.ready_s:>9.1f}{r.controller_rss_mb:>8.0f}"
            f"{r.agents_rss_mb:>8.0f}{r.controller_idle_cpu:>10.1%}{r.agents_idle_cpu:>10.1%}"
            f"{r.detection_s:>10.2f}{r.create_s:>10.2f}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="Also write the rows as JSON to this file.")
    parser.add_argument("--shapes", default=SHAPES, help=f"Pod shapes [{SHAPES}].")
    parser.add_argument("--idle", type=float, default=10.0, help="Seconds of idle CPU sampling.")
    args = parser.parse_args()
    rows: list[Row] = []
    for name in args.shapes.split(","):
        rows.append(measure(name.strip(), args.idle))
        print(_table(rows[-1:]).splitlines()[-1] if len(rows) > 1 else _table(rows), flush=True)
    print()
    print(_table(rows))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n")


if __name__ == "__main__":
    main()
