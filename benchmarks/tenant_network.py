"""What tenant networks cost: cluster create, resume and a shell round trip, with and without.

Runs, in this process, a secure controller serving the cloud over four
emulated Bow-2000s, twice in one run: once as the cloud runs (every server in
a network namespace of its own on its vPOD's bridge, nftables per vPOD,
IPUoF on link-local fabric addresses) and once with sandboxed servers left on
the host's network (``LocalCompute(isolate_network=False)``, how vpod ran
before tenant networks; never built by the cloud itself). For each mode and
run: create a vPOD-4 and wait for ACTIVE, run ``--shells`` commands (``true``)
through the shell relay (a WebSocket into the server's sandbox, as ``vpod
cluster ssh`` does), suspend, resume, delete. Prints a table (medians and
worst) and writes JSON. Needs root, bubblewrap, iproute2 and nftables.

    .venv/bin/python benchmarks/tenant_network.py [--runs 3] [--shells 10] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from vpod.agent.addressing import AddressMode, AddressPlan
from vpod.agent.fabric import claim_addresses, release_addresses
from vpod.agent.fleet import AgentFleet, FleetSettings
from vpod.client.cloud_shell import ShellExit, open_relay
from vpod.client.http_transport import HttpSite
from vpod.cloud.drivers import Layout, LocalCompute
from vpod.cloud.drivers.sandbox import sandbox_problem
from vpod.cloud.drivers.tenant_network import network_problem
from vpod.cloud.extension import CloudServer
from vpod.cloud.settings import CloudSettings
from vpod.controller.caller import SYSTEM
from vpod.controller.server import RunningServer, serve
from vpod.controller.settings import Settings

MACHINES = 4
FLAVOR = "g2a-ai-fast-v1pod-4"


@dataclass
class Mode:
    name: str
    isolated: bool
    create_s: list[float] = field(default_factory=list)
    resume_s: list[float] = field(default_factory=list)
    shell_s: list[float] = field(default_factory=list)


async def _task(http: httpx.AsyncClient, method: str, path: str, **kwargs: Any) -> float:
    started = time.perf_counter()
    reply = await http.request(method, path, **kwargs)
    if reply.status_code != 202:
        raise SystemExit(f"{method} {path}: {reply.status_code} {reply.text}")
    task = reply.json()
    while task["state"] not in ("FINISHED", "FAILED"):
        task = (await http.get(f"/tasks/{task['id']}", params={"wait": 60})).json()
    if task["state"] != "FINISHED":
        raise SystemExit(f"{method} {path} failed: {task.get('error')}")
    return time.perf_counter() - started


def _shell_round_trip(url: str, token: str, cluster: str) -> float:
    site = HttpSite(url, "/api/cloud/v1", headers={"Authorization": f"Bearer {token}"})
    path = f"/api/cloud/v1/clusters/{cluster}/shell/connect?server=1"
    started = time.perf_counter()
    with open_relay(site, path, command="true") as shell:
        while not isinstance(shell.receive(), ShellExit):
            pass
    return time.perf_counter() - started


async def _measure(mode: Mode, runs: int, shells: int) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix=f"vpod-bench-net-{mode.name}-"))
    fabric = claim_addresses(MACHINES) if mode.isolated else []
    plan = AddressPlan(
        mode=AddressMode.PER_MACHINE, base_host="127.0.0.1", agent_port=0, server_port=0,
        rdma_port=0, ipuof_base_host=fabric[0] if fabric else None,
    )  # fmt: skip
    fleet = AgentFleet(FleetSettings(machines=MACHINES, plan=plan, stop_grace=0))
    await fleet.start()
    settings = Settings(data_dir=data_dir, user_port=0, admin_port=0, http_port=0, secure=True)
    compute = LocalCompute(Layout(data_dir / "cloud"), isolate_network=mode.isolated)
    cloud = CloudServer(
        CloudSettings(data_dir=data_dir, vipu_clusters=("pod",), task_poll_s=0.2),
        compute=compute,
    )
    ready: asyncio.Future[RunningServer] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()

    async def on_ready(running: RunningServer) -> None:
        cloud.listening(running)
        inventory = running.controller.inventory
        for host in fleet.hosts:
            await inventory.create_agent(SYSTEM, host.agent_id, host.host, host.port)
        await inventory.create_cluster(SYSTEM, "pod", [h.agent_id for h in fleet.hosts])
        ready.set_result(running)

    serving = asyncio.ensure_future(serve(settings, ready=on_ready, stop=stop, extensions=[cloud]))
    running = await ready
    assert cloud.cloud is not None
    _, token = await cloud.cloud.projects.create("bench", quotas={"ipus": -1, "clusters": -1})
    url = f"http://127.0.0.1:{running.http_port}"
    headers = {"Authorization": f"Bearer {token.token}"}
    try:
        async with httpx.AsyncClient(
            base_url=f"{url}/api/cloud/v1", headers=headers, timeout=120
        ) as http:
            for index in range(runs):
                name = f"net-{index}"
                body = {"name": name, "flavor": FLAVOR}
                mode.create_s.append(await _task(http, "POST", "/clusters", json=body))
                for _ in range(shells):
                    mode.shell_s.append(
                        await asyncio.to_thread(_shell_round_trip, url, token.token, name)
                    )
                await _task(http, "POST", f"/clusters/{name}/suspend")
                mode.resume_s.append(await _task(http, "POST", f"/clusters/{name}/resume"))
                await _task(http, "DELETE", f"/clusters/{name}")
    finally:
        stop.set()
        await serving
        await fleet.stop()
        release_addresses(fabric)


def _stat(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:8.0f} {max(values) * 1000:8.0f}"


def _table(modes: list[Mode]) -> str:
    lines = [
        f"{'servers':<22} {'create ms':>17} {'resume ms':>17} {'shell round trip ms':>17}",
        f"{'':<22}" + " {:>8} {:>8}".format("median", "worst") * 3,
    ]
    for mode in modes:
        stats = [_stat(values) for values in (mode.create_s, mode.resume_s, mode.shell_s)]
        lines.append(f"{mode.name:<22} " + " ".join(stats))
    base, isolated = modes[1], modes[0]
    costs = [
        f"{label} {(statistics.median(a) - statistics.median(b)) * 1000:+.0f} ms"
        for label, a, b in (
            ("create", isolated.create_s, base.create_s),
            ("resume", isolated.resume_s, base.resume_s),
            ("shell", isolated.shell_s, base.shell_s),
        )
    ]
    lines.append("isolation costs (median): " + ", ".join(costs))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="clusters per mode (default 3)")
    parser.add_argument("--shells", type=int, default=10, help="shell round trips per cluster")
    parser.add_argument("--json", type=Path, default=Path("tenant_network.json"))
    args = parser.parse_args()
    problem = sandbox_problem() or network_problem()
    if problem is not None:
        sys.exit(f"this host cannot run sandboxed tenant networks: {problem}")
    modes = [Mode("own network (default)", True), Mode("host network", False)]
    for mode in modes:
        asyncio.run(_measure(mode, args.runs, args.shells))
    print(_table(modes))
    args.json.write_text(json.dumps([asdict(m) for m in modes], indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
