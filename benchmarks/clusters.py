"""Time to create an AI cluster (to ACTIVE), to suspend it and to resume it, with local drivers.

Runs, in this process, what ``vpod up`` runs in two: a secure controller
(SQLite in a temporary directory) serving the cloud layer, and 16 emulated
Bow-2000 machines (one Bow Pod64, V-IPU cluster ``pod``). Every call goes
through the cloud's REST API over loopback HTTP, as a client's would; a
task's end is awaited with ``GET /tasks/{id}?wait=60`` (the server answers the
moment the task ends), so a time is from the mutating call to the task's end.

For each flavor (virtual vPOD-16 and vPOD-64 by default) and each run: create
the cluster and wait for ACTIVE; create ``--partitions`` partitions in its
allocation (so that suspension has specs to save and partitions to remove,
and resume has partitions to re-create); suspend; resume; delete. Prints a
table (median and worst of the runs) and writes JSON.

    .venv/bin/python benchmarks/clusters.py [--json PATH] [--runs 5] [--flavors a,b]
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
from vpod.agent.fleet import AgentFleet, FleetSettings
from vpod.cloud.extension import CloudServer
from vpod.cloud.settings import CloudSettings
from vpod.controller.caller import SYSTEM
from vpod.controller.server import RunningServer, serve
from vpod.controller.settings import Settings
from vpod.domain.partitions import PartitionRequirements

TARGET_S = 5.0
MACHINES = 16
DEFAULT_FLAVORS = ("g2a-ai-fast-v1pod-16", "g2a-ai-fast-v1pod-64")


@dataclass
class Run:
    create_s: float
    suspend_s: float
    resume_s: float
    delete_s: float
    partitions: int


@dataclass
class Result:
    flavor: str
    ipus: int
    runs: list[Run] = field(default_factory=list)

    def stat(self, name: str) -> tuple[float, float]:
        values = [getattr(r, name) for r in self.runs]
        return statistics.median(values), max(values)


async def _task(http: httpx.AsyncClient, reply: httpx.Response) -> tuple[dict[str, Any], float]:
    """Wait for the task a 202 reply started; returns it and the seconds since ``reply`` began."""
    if reply.status_code != 202:
        raise SystemExit(f"{reply.request.method} {reply.request.url.path}: {reply.text}")
    task = reply.json()
    while task["state"] not in ("FINISHED", "ERROR"):
        task = (await http.get(f"/tasks/{task['id']}", params={"wait": 60})).json()
    if task["state"] == "ERROR":
        raise SystemExit(f"task {task['operation']} failed: {task['error']}")
    return task, 0.0


async def _timed(http: httpx.AsyncClient, method: str, path: str, **kwargs: Any) -> float:
    started = time.perf_counter()
    reply = await http.request(method, path, **kwargs)
    await _task(http, reply)
    return time.perf_counter() - started


async def _bench(flavors: list[str], runs: int, partitions: int) -> list[Result]:
    data_dir = Path(tempfile.mkdtemp(prefix="vpod-bench-clusters-"))
    plan = AddressPlan(
        mode=AddressMode.PER_MACHINE, base_host="127.0.0.1", agent_port=0, server_port=0,
        rdma_port=0,
    )  # fmt: skip
    fleet = AgentFleet(FleetSettings(machines=MACHINES, plan=plan, stop_grace=0))
    await fleet.start()
    settings = Settings(data_dir=data_dir, user_port=0, admin_port=0, http_port=0, secure=True)
    cloud = CloudServer(CloudSettings(data_dir=data_dir, vipu_clusters=("pod",), task_poll_s=0.2))
    ready: asyncio.Future[RunningServer] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()

    async def on_ready(running: RunningServer) -> None:
        cloud.listening(running)
        inventory = running.controller.inventory
        for host in fleet.hosts:
            await inventory.create_agent(SYSTEM, host.agent_id, host.host, host.port, key=host.key)
        await inventory.create_cluster(SYSTEM, "pod", [h.agent_id for h in fleet.hosts])
        ready.set_result(running)

    serving = asyncio.ensure_future(serve(settings, ready=on_ready, stop=stop, extensions=[cloud]))
    running = await ready
    assert cloud.cloud is not None
    projects = cloud.cloud.projects
    _, token = await projects.create("bench", quotas={"ipus": -1, "clusters": -1})
    controller = running.controller
    results = []
    base = f"http://127.0.0.1:{running.http_port}/api/cloud/v1"
    headers = {"Authorization": f"Bearer {token.token}"}
    try:
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as http:
            for flavor in flavors:
                ipus = int(flavor.rsplit("-", 1)[1])
                result = Result(flavor=flavor, ipus=ipus)
                for index in range(runs):
                    name = f"bench-{ipus}-{index}"
                    body = {"name": name, "flavor": flavor}
                    create_s = await _timed(http, "POST", "/clusters", json=body)
                    cluster = (await http.get(f"/clusters/{name}")).json()
                    allocation = cluster["vipu"]["allocation_id"]
                    share = ipus // max(partitions, 1)
                    size = max(s for s in (1, 2, 4, 8, 16, 64) if s <= max(share, 1))
                    for n in range(partitions):
                        req = PartitionRequirements(
                            id=f"{name}-p{n}", size=size, allocation_id=allocation
                        )
                        await controller.partitions.create(SYSTEM, req)
                    suspend_s = await _timed(http, "POST", f"/clusters/{name}/suspend")
                    resume_s = await _timed(http, "POST", f"/clusters/{name}/resume")
                    back = (await http.get(f"/clusters/{name}")).json()
                    restored = await controller.partitions.list_partitions(
                        SYSTEM, allocation_id=allocation
                    )
                    if back["status"] != "ACTIVE" or len(restored) != partitions:
                        raise SystemExit(
                            f"{name} is {back['status']} with {len(restored)} partitions after"
                            " resume"
                        )
                    delete_s = await _timed(http, "DELETE", f"/clusters/{name}")
                    result.runs.append(Run(create_s, suspend_s, resume_s, delete_s, partitions))
                results.append(result)
    finally:
        stop.set()
        await serving
        await fleet.stop()
    return results


def _table(results: list[Result]) -> str:
    rows = [
        f"{'flavor':<22} {'runs':>4} {'create->ACTIVE s':>18} {'suspend s':>14} {'resume s':>14}"
        f" {'delete s':>14}",
    ]
    for result in results:
        cells = []
        for name in ("create_s", "suspend_s", "resume_s", "delete_s"):
            median, worst = result.stat(name)
            cells.append(f"{median:6.2f} / {worst:5.2f}")
        rows.append(
            f"{result.flavor:<22} {len(result.runs):>4} {cells[0]:>18} {cells[1]:>14}"
            f" {cells[2]:>14} {cells[3]:>14}"
        )
    rows.append(f"(median / worst of the runs; target <= {TARGET_S:.0f} s each)")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--runs", type=int, default=5, help="runs per flavor (default 5)")
    parser.add_argument("--partitions", type=int, default=2, help="partitions per cluster")
    parser.add_argument("--flavors", default=",".join(DEFAULT_FLAVORS), help="comma-separated")
    args = parser.parse_args()
    flavors = [f for f in args.flavors.split(",") if f]
    results = asyncio.run(_bench(flavors, args.runs, args.partitions))
    print(_table(results))
    worst = max(max(r.stat(n)[1] for n in ("create_s", "suspend_s", "resume_s")) for r in results)
    if args.json:
        document = {
            "target_s": TARGET_S,
            "machines": MACHINES,
            "results": [
                {**asdict(r), **{f"{n}_median": r.stat(n)[0] for n in ("create_s", "suspend_s",
                                                                         "resume_s", "delete_s")}}
                for r in results
            ],
        }  # fmt: skip
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    if worst > TARGET_S:
        print(
            f"slowest operation took {worst:.2f} s, over the {TARGET_S:.0f} s target",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
