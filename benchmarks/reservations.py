"""Time to list the flavor catalog with 1,000 reservations across 100 projects.

Runs, in this process, a secure controller (SQLite in a temporary directory)
serving the cloud layer over 16 emulated Bow-2000 machines (V-IPU cluster
``pod``) and 1,200 registered bare-metal GPU hosts (400 each of H100, A100 and
L40S). Every call goes through the cloud's REST API over loopback HTTP.

Baseline (same run, same hardware): ``GET /flavors`` with no reservation.
Then 100 projects buy 1,000 reservations between them (10 each: 10 vPOD-4
reservations of one unit in all, the rest one GPU server each, spread over
the three models), and ``GET /flavors`` is timed again, for an owner and
for a project with no reservation. Prints a table (median, p95, worst) and
writes JSON.

    .venv/bin/python benchmarks/reservations.py [--json PATH] [--repeat 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from vpod.agent.addressing import AddressMode, AddressPlan
from vpod.agent.fleet import AgentFleet, FleetSettings
from vpod.cloud.extension import CloudServer
from vpod.cloud.model.hosts import HostRegistration
from vpod.cloud.settings import CloudSettings
from vpod.controller.caller import SYSTEM
from vpod.controller.server import RunningServer, serve
from vpod.controller.settings import Settings

MACHINES = 16
PROJECTS = 100
PER_PROJECT = 10
HOSTS = (("h100-80", 400, "bm3-ai-1xlarge-h100-80-8"), ("a100-80", 400, "bm3-ai-1xlarge-a100-80-8"),
         ("l40s-48", 400, "bm3-ai-large-l40s-48-8"))  # fmt: skip
VPOD = "g2a-ai-fast-v1pod-4"


@dataclass
class Timing:
    case: str
    reservations: int
    median_ms: float
    p95_ms: float
    worst_ms: float


def _timing(case: str, reservations: int, samples: list[float]) -> Timing:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return Timing(case, reservations, statistics.median(ordered) * 1e3, p95 * 1e3,
                  ordered[-1] * 1e3)  # fmt: skip


async def _catalog(http: httpx.AsyncClient, repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        reply = await http.get("/flavors")
        samples.append(time.perf_counter() - started)
        if reply.status_code != 200:
            raise SystemExit(f"GET /flavors: {reply.text}")
    return samples


async def _bench(repeat: int, projects: int, per_project: int) -> tuple[list[Timing], float]:
    data_dir = Path(tempfile.mkdtemp(prefix="vpod-bench-reservations-"))
    plan = AddressPlan(
        mode=AddressMode.PER_MACHINE, base_host="127.0.0.1", agent_port=0, server_port=0,
        rdma_port=0,
    )  # fmt: skip
    fleet = AgentFleet(FleetSettings(machines=MACHINES, plan=plan, stop_grace=0))
    await fleet.start()
    settings = Settings(data_dir=data_dir, user_port=0, admin_port=0, http_port=0, secure=True)
    cloud = CloudServer(CloudSettings(data_dir=data_dir, vipu_clusters=("pod",)))
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
    timings: list[Timing] = []
    free_vpods = 0
    try:
        assert cloud.cloud is not None
        service = cloud.cloud
        for model, count, _ in HOSTS:
            for n in range(count):
                await service.hosts.register(
                    HostRegistration(f"{model}-{n}", "baremetal", model, slots=1)
                )
        tokens = []
        for n in range(projects + 1):
            _, token = await service.projects.create(f"p{n:03d}", quotas={"reserved_units": -1})
            tokens.append(token.token)
        base = f"http://127.0.0.1:{running.http_port}/api/cloud/v1"
        async with httpx.AsyncClient(base_url=base, timeout=120) as http:
            owner = {"Authorization": f"Bearer {tokens[0]}"}
            stranger = {"Authorization": f"Bearer {tokens[projects]}"}
            http.headers.update(owner)
            timings.append(_timing("catalog, no reservations", 0, await _catalog(http, repeat)))
            buying = []
            for n in range(projects * per_project):
                flavor = VPOD if n < projects // per_project else HOSTS[n % 3][2]
                http.headers.update({"Authorization": f"Bearer {tokens[n % projects]}"})
                started = time.perf_counter()
                reply = await http.post(
                    "/reservations", json={"flavor": flavor, "units": 1, "term": "1y"}
                )
                buying.append(time.perf_counter() - started)
                if reply.status_code != 201:
                    raise SystemExit(f"reservation {n}: {reply.text}")
            total = projects * per_project
            timings.append(_timing("reserve one (REST)", total, buying))
            http.headers.update(owner)
            timings.append(_timing("catalog, an owner", total, await _catalog(http, repeat)))
            http.headers.update(stranger)
            timings.append(_timing("catalog, no reservation", total, await _catalog(http, repeat)))
            shown = {f["name"]: f["capacity"] for f in (await http.get("/flavors")).json()}
            free_vpods = shown[VPOD]
    finally:
        stop.set()
        await serving
        await fleet.stop()
    return timings, free_vpods


def _table(timings: list[Timing]) -> str:
    rows = [f"{'case':<26} {'reservations':>12} {'median ms':>10} {'p95 ms':>8} {'worst ms':>9}"]
    rows += [
        f"{t.case:<26} {t.reservations:>12} {t.median_ms:>10.1f} {t.p95_ms:>8.1f}"
        f" {t.worst_ms:>9.1f}"
        for t in timings
    ]
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--repeat", type=int, default=30, help="catalog listings per case")
    parser.add_argument("--projects", type=int, default=PROJECTS)
    parser.add_argument("--per-project", type=int, default=PER_PROJECT, help="reservations")
    args = parser.parse_args()
    timings, free_vpods = asyncio.run(_bench(args.repeat, args.projects, args.per_project))
    print(_table(timings))
    print(f"(a project with no reservation sees {free_vpods} of {MACHINES} vPOD-4: the rest are"
          " reserved)")  # fmt: skip
    if args.json:
        document = {
            "machines": MACHINES,
            "gpu_hosts": sum(count for _, count, _ in HOSTS),
            "projects": args.projects,
            "reservations": args.projects * args.per_project,
            "timings": [asdict(t) for t in timings],
            "vpod4_capacity_for_others": free_vpods,
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
