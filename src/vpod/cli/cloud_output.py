"""What the ``vpod`` cloud commands print, and waiting on tasks with a progress display.

Tables follow the CLIs' one format (:mod:`.render`: `` | `` columns, ``-``
for empty cells); ``--json`` prints the API's JSON. Waiting (``--wait``)
shows the task's ``detailed_state`` on stderr (a spinner on a terminal), and
one line per phase once it is over, with the time that phase took, so stdout
stays for the result. Times come from the controller's timestamps of the
phases, not from when this process happened to poll: phases seen in one poll
(or a task that ended before the first) still show their own times, and the
total runs from the task's creation to its end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from .render import details, json_text, table

if TYPE_CHECKING:
    from vpod.client import CloudClient, Task

DONE = ("FINISHED", "ERROR")


def emit(data: Any, as_json: bool, text: Callable[[Any], str]) -> None:
    click.echo(json_text(data) if as_json else text(data))


def _when(stamp: str | None) -> str:
    return stamp.replace("T", " ").removesuffix("Z")[:19] if stamp else "-"


def flavors_table(flavors: Sequence[dict[str, Any]]) -> str:
    return table(
        [
            "Flavor",
            "Kind",
            "vCPUs",
            "RAM GiB",
            "Disk GiB",
            "Accelerators",
            "Poplar",
            "Price/h",
            "Price/month",
            "Capacity",
        ],
        [
            [
                f["name"],
                f["kind"],
                f["vcpus"],
                f["ram_gib"],
                f["disk_gib"],
                f["accelerators"],
                f["poplar_count"],
                f["price_per_hour"],
                f["price_per_month"],
                f["capacity"],
            ]
            for f in flavors
        ],
    )


def _size(cluster: dict[str, Any]) -> str:
    if cluster["ipus"]:
        return f"{cluster['ipus']} IPUs"
    return f"{cluster['gpus']} GPUs"


def clusters_table(clusters: Sequence[dict[str, Any]]) -> str:
    return table(
        ["Cluster", "Id", "Flavor", "Status", "Servers", "Accelerators", "Task", "Created"],
        [
            [
                c["name"],
                c["id"],
                c["flavor"],
                c["status"],
                c["server_count"],
                _size(c),
                c["task_id"],
                _when(c["created_at"]),
            ]
            for c in clusters
        ],
    )


def _storage(held: dict[str, Any] | None) -> str | None:
    if not held:
        return None
    mount = held.get("mount_path")
    return f"{held['name']} (mounted at {mount})" if mount else str(held["name"])


def cluster_text(c: dict[str, Any]) -> str:
    vipu = c.get("vipu") or {}
    pairs: list[tuple[str, object]] = [
        ("Cluster", c["name"]),
        ("Id", c["id"]),
        ("Flavor", c["flavor"]),
        ("Kind", c["kind"]),
        ("Status", c["status"]),
        ("Image", c["image"]),
        ("Accelerators", _size(c)),
        ("Network", c["network"].get("cidr")),
        ("Allocation", vipu.get("allocation_id")),
        ("V-IPU user", vipu.get("user_id")),
        ("Saved partitions", ",".join(c["saved_partitions"]) if c["saved_partitions"] else None),
        ("Fabric", c["fabric"]),
        ("Task", c["task_id"]),
        ("Error", c["error"] or None),
        ("Metadata", ",".join(f"{k}={v}" for k, v in sorted(c["metadata"].items())) or None),
        ("Dataset storage", _storage(c.get("dataset_storage"))),
        ("Keypairs", ", ".join(c.get("keypairs") or []) or None),
        ("Created", _when(c["created_at"])),
    ]
    direct = any(s.get("ssh_port") is not None for s in c["servers"])
    servers = table(
        ["Server", "Status", "Address", "Image", "Host", *(["SSH port"] if direct else [])],
        [
            [
                s["name"],
                s["status"],
                s["address"],
                s["image"],
                s["host_id"],
                *([s.get("ssh_port") or "-"] if direct else []),
            ]
            for s in c["servers"]
        ],
    )
    volumes = volumes_table(c["volumes"]) if c["volumes"] else "(no volumes)"
    keys = [
        [s["name"], k["key"].split()[0], k["fingerprint"]]
        for s in c["servers"]
        for k in s.get("ssh_host_keys") or []
    ]
    host_keys = table(["Server", "SSH host key", "Fingerprint"], keys) if keys else ""
    parts = [details(pairs), servers, gpus_table(c["servers"]), volumes, host_keys]
    return "\n\n".join(p for p in parts if p)


def _reading(value: object, unit: str) -> str:
    return (
        "-"
        if value is None
        else f"{value:g}{unit}"
        if isinstance(value, float)
        else f"{value}{unit}"
    )


def gpus_table(servers: list[dict[str, Any]]) -> str:
    """Each server's GPUs by UUID, with health and last readings ("" when none holds any)."""
    rows = []
    for s in servers:
        for g in s.get("gpus") or []:
            health = {True: "healthy", False: f"UNHEALTHY: {g.get('problems')}", None: "-"}[
                g.get("healthy")
            ]
            rows.append(
                [
                    s["name"],
                    g["index"],
                    g.get("uuid") or "-",
                    g.get("name") or "-",
                    health,
                    _reading(g.get("utilization_pct"), "%"),
                    _reading(g.get("memory_used_mib"), " MiB"),
                    _reading(g.get("temperature_c"), " °C"),
                    _reading(g.get("power_w"), " W"),
                ]
            )
    if not rows:
        return ""
    return table(
        ["Server", "GPU", "UUID", "Model", "Health", "Util", "Memory used", "Temp", "Power"], rows
    )


def volumes_table(volumes: Sequence[dict[str, Any]]) -> str:
    return table(
        ["Volume", "Id", "Size GiB", "Type", "Boot", "Status", "Cluster", "Task"],
        [
            [
                v["name"],
                v["id"],
                v["size_gib"],
                v["volume_type"],
                v["boot"],
                v["status"],
                v["cluster_id"],
                v["task_id"],
            ]
            for v in volumes
        ],
    )


def tasks_table(tasks: Sequence[dict[str, Any]]) -> str:
    return table(
        ["Task", "Operation", "Resource", "State", "Phase", "Created", "Error"],
        [
            [
                t["id"],
                t["operation"],
                t["resource_name"],
                t["state"],
                t["detailed_state"],
                _when(t["created_at"]),
                t["error"] or None,
            ]
            for t in tasks
        ],
    )


def task_text(t: dict[str, Any]) -> str:
    pairs: list[tuple[str, object]] = [
        ("Task", t["id"]),
        ("Operation", t["operation"]),
        ("Resource", f"{t['resource_type']} {t['resource_name']} ({t['resource_id']})"),
        ("State", t["state"]),
        ("Phase", t["detailed_state"]),
        ("Phases", " > ".join(p["phase"] for p in t["phases"]) or None),
        ("Error", t["error"] or None),
        ("Warnings", "; ".join(t["warnings"]) or None),
        ("Created", _when(t["created_at"])),
        ("Finished", _when(t["finished_at"])),
    ]
    return details(pairs)


def invoice_text(inv: dict[str, Any]) -> str:
    """An invoice's lines, or its days (``vpod invoice --per-day``)."""
    head = (
        f"Invoice of project {inv['project_id']} from {_when(inv['start'])} to"
        f" {_when(inv['end'])} (UTC)"
    )
    if "days" in inv:
        days = table(
            ["From", "To", "Minutes", "Amount"],
            [[_when(d["start"]), _when(d["end"]), d["minutes"], d["total"]] for d in inv["days"]],
        )
        return f"{head}\n\n{days}\n\nTotal: {inv['total']} {inv['currency']}"
    lines = table(
        ["Resource", "Type", "Billing", "Item", "Quantity", "Price", "Minutes", "Amount"],
        [
            [
                line["resource_name"],
                line["resource_type"],
                line.get("billing", "on_demand"),
                line["item"],
                line["quantity"],
                f"{line['unit_price_per_month']}/month"
                if line.get("unit_price_per_month")
                else f"{line['unit_price_per_hour']}/h",
                line["minutes"],
                line["amount"],
            ]
            for line in inv["lines"]
        ],
    )
    items = "\n".join(f"  {item}: {amount}" for item, amount in inv["by_item"].items())
    total = f"Total: {inv['total']} {inv['currency']} ({inv['minutes']} billed minutes)"
    return f"{head}\n\n{lines}\n\nBy item:\n{items or '  -'}\n{total}"


def started(task: dict[str, Any]) -> str:
    return (
        f"task {task['id']}: {task['operation']} {task['resource_name']} started;"
        f" follow it with `vpod task show {task['id']} --wait`"
    )


def phase_durations(task: Task) -> list[tuple[str, float]]:
    """Each phase the task went through and the seconds it took (the last one's up to the
    task's end, or its last update while it runs); FINISHED/ERROR are ends, not phases."""
    steps = [p for p in task.phases if p.phase not in DONE]
    if not steps:
        return []
    end = task.finished_at or next((p.at for p in task.phases if p.phase in DONE), task.updated_at)
    ends = [p.at for p in steps[1:]] + [end]
    return [
        (p.phase, max(0.0, (e - p.at).total_seconds())) for p, e in zip(steps, ends, strict=True)
    ]


def total_seconds(task: Task) -> float:
    """From the task's creation to its end (or its last update)."""
    end = task.finished_at or next((p.at for p in task.phases if p.phase in DONE), None)
    return max(0.0, ((end or task.updated_at) - task.created_at).total_seconds())


def wait_for(client: CloudClient, task: Task, *, quiet: bool = False) -> Task:
    """Follow the task until it ends, showing its phases on stderr; fail if it ends in ERROR."""
    # Imported when a command waits, not when `vpod --help` lists the commands.
    from rich.console import Console

    from vpod.client import Task, TaskFailed

    console = Console(stderr=True, quiet=quiet, highlight=False)
    label = f"{task.operation} {task.resource_name}"
    shown = 0

    def show_finished_phases(current: Task) -> None:
        """Print the phases that are over (a phase is over once the next one began)."""
        nonlocal shown
        durations = phase_durations(current)
        over = durations if current.ended else durations[:-1]
        for name, seconds in over[shown:]:
            console.print(f"  {name:<18} {seconds:6.1f} s")
        shown = max(shown, len(over))

    with console.status(f"{label}: {task.state.value}") as status:

        def polled(current: Task) -> None:
            status.update(f"{label}: {current.detailed_state or current.state.value}")
            show_finished_phases(current)

        try:
            task = client.wait_task(task, on_update=polled)
        except TaskFailed as failed:
            if isinstance(failed.task, Task):
                show_finished_phases(failed.task)
            raise
    show_finished_phases(task)
    for warning in task.warnings:
        console.print(f"  warning: {warning}")
    console.print(f"{label}: done in {total_seconds(task):.1f} s")
    return task
