"""What the ``vpod`` cloud commands print, and waiting on tasks with a progress display.

Tables follow the CLIs' one format (:mod:`.render`: `` | `` columns, ``-``
for empty cells); ``--json`` prints the API's JSON. Waiting (``--wait``)
shows each phase of the task's ``detailed_state`` as it is entered, on
stderr (a spinner on a terminal, one line per phase otherwise), so stdout
stays for the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import click
from rich.console import Console

from vpod.client import CloudClient, Phase, Task

from .render import details, json_text, table

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
    servers = table(
        ["Server", "Status", "Address", "Image", "Host"],
        [[s["name"], s["status"], s["address"], s["image"], s["host_id"]] for s in c["servers"]],
    )
    volumes = volumes_table(c["volumes"]) if c["volumes"] else "(no volumes)"
    keys = [
        [s["name"], k["key"].split()[0], k["fingerprint"]]
        for s in c["servers"]
        for k in s.get("ssh_host_keys") or []
    ]
    host_keys = table(["Server", "SSH host key", "Fingerprint"], keys) if keys else ""
    return f"{details(pairs)}\n\n{servers}\n\n{volumes}" + (f"\n\n{host_keys}" if keys else "")


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
    head = (
        f"Invoice of project {inv['project_id']} from {_when(inv['start'])} to"
        f" {_when(inv['end'])} (UTC)"
    )
    items = "\n".join(f"  {item}: {amount}" for item, amount in inv["by_item"].items())
    total = f"Total: {inv['total']} {inv['currency']} ({inv['minutes']} billed minutes)"
    return f"{head}\n\n{lines}\n\nBy item:\n{items or '  -'}\n{total}"


def started(task: dict[str, Any]) -> str:
    return (
        f"task {task['id']}: {task['operation']} {task['resource_name']} started;"
        f" follow it with `vpod task show {task['id']} --wait`"
    )


def wait_for(client: CloudClient, task: Task, *, quiet: bool = False) -> Task:
    """Follow the task until it ends, showing its phases on stderr; fail if it ends in ERROR."""
    console = Console(stderr=True, quiet=quiet, highlight=False)
    started_at = time.monotonic()
    label = f"{task.operation} {task.resource_name}"

    def entered(phase: Phase) -> None:
        if phase.phase not in DONE:
            elapsed = time.monotonic() - started_at
            console.print(f"  {phase.phase:<18} {elapsed:6.1f} s")

    with console.status(f"{label}: {task.state.value}") as status:

        def polled(current: Task) -> None:
            status.update(f"{label}: {current.detailed_state or current.state.value}")

        task = client.wait_task(task, on_phase=entered, on_update=polled)
    for warning in task.warnings:
        console.print(f"  warning: {warning}")
    console.print(f"{label}: done in {time.monotonic() - started_at:.1f} s")
    return task
