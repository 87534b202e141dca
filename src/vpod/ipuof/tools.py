"""``ipu-info`` and ``ipu-monitor``: the partition in reach, as gc-info and gc-monitor show it.

Both find the partition as an application does (``IPUOF_VIPU_API_*``,
``IPUOF_CONFIG_PATH``, ``~/.ipuof.conf.d``, ``/etc/ipuof.conf.d``) and ask
each IPU's IPUoF endpoint for its state (``STATUS``), so they work on a
static config without any controller, and show only the partition's IPUs.

Exit status: 0; 1 an IPU or the controller could not be reached; 2 a
configuration mistake (no partition found, unknown device id).
"""

from __future__ import annotations

import time
from typing import Any

import click

from vpod.client.command_line import BoundedCommand, FiniteFloatRange

from .config import PartitionTarget
from .devices import Device, find_device, list_devices
from .discovery import find_partition
from .errors import IpuofError
from .protocol import IpuStatus, query_statuses
from .render import echo_json, one_line_errors, percent, table

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
LIST_HEADERS = ("ID", "IPUs", "Members", "Endpoint", "Routing ID")
MONITOR_HEADERS = (
    "ID", "Machine", "IPU serial", "Routing ID", "State", "Util", "Temp", "Power",
    "PID", "Host", "Command",
)  # fmt: skip


def _target_json(target: PartitionTarget) -> dict[str, Any]:
    return {
        "partition": target.partition_id,
        "gcd": target.gcd_id,
        "source": target.source,
        "attributes": dict(target.attributes),
    }


def state_of(status: IpuStatus) -> str:
    if not status.healthy:
        return "faulted"
    if status.busy:
        return "busy"
    return "attached" if status.attached else "idle"


def _status_row(dnc: int, status: IpuStatus | IpuofError) -> list[object]:
    if isinstance(status, IpuofError):
        return [dnc, "", "", "", "unreachable", "", "", "", "", "", str(status)[:60]]
    held = status.attached
    return [
        dnc,
        status.agent,
        status.serial,
        status.routing_id,
        state_of(status),
        percent(status.utilisation),
        f"{status.temperature_c:.0f}C",
        f"{status.power_w:.0f}W",
        status.holder.pid if held and status.holder.pid else "",
        status.holder.host if held else "",
        status.holder.command if held else "",
    ]


def _status_json(dnc: int, status: IpuStatus | IpuofError) -> dict[str, Any]:
    if isinstance(status, IpuofError):
        return {"id": dnc, "state": "unreachable", "error": str(status)}
    return {"id": dnc, "state": state_of(status), **status.as_dict()}


# ------------------------------------------------------------------------------------ ipu-info


@click.command(cls=BoundedCommand, context_settings=CONTEXT)
@click.option("-l", "--list", "list_", is_flag=True, help="List the devices (the default).")
@click.option("-i", "--info", is_flag=True, help="Show the attributes of device -d N.")
@click.option("-d", "--device", "device_id", type=click.IntRange(0), help="The device for -i.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@one_line_errors
def info_main(list_: bool, info: bool, device_id: int | None, as_json: bool) -> None:
    """The devices of the partition in reach, as an IPUoF application sees them.

    For N IPUs: ids 0..N-1 are the single IPUs (DNC ids, routing order), then
    the N/2 pairs, N/4 quads ... up to one device of all N (2N-1 devices).

    \b
    Examples:
      ipu-info -l
      ipu-info -i -d 0
      ipu-info -l --json
    """
    if info and device_id is None:
        raise click.UsageError("-i needs -d N: the device whose attributes to show")
    if info and list_:
        raise click.UsageError("choose -l (list the devices) or -i -d N (one device), not both")
    target = find_partition()
    if info and device_id is not None:
        _show_device(target, find_device(target, device_id), as_json)
        return
    devices = list_devices(target)
    if as_json:
        echo_json({**_target_json(target), "devices": [d.as_dict() for d in devices]})
        return
    click.echo(f"{target.describe()}: {len(devices)} devices")
    rows = []
    for d in devices:
        single = d.ipus[0] if d.num_ipus == 1 else None
        rows.append(
            [
                d.id,
                d.num_ipus,
                ",".join(map(str, d.members)) if not single else "",
                single.endpoint if single else "",
                single.routing_id if single else "",
            ]
        )
    click.echo(table(LIST_HEADERS, rows))


def _show_device(target: PartitionTarget, device: Device, as_json: bool) -> None:
    statuses = query_statuses(device.ipus, target.partition_id)
    if as_json:
        echo_json(
            {
                **_target_json(target),
                "device": device.id,
                "members": list(device.members),
                "ipus": [
                    {"dnc_id": m, "config": ipu.as_dict(), **_status_json(m, s)}
                    for m, ipu, s in zip(device.members, device.ipus, statuses, strict=True)
                ],
            }
        )
        return
    click.echo(f"Device {device.id} of {target.describe()}: {device.num_ipus} IPU(s)")
    for dnc, ipu, status in zip(device.members, device.ipus, statuses, strict=True):
        pairs: list[tuple[str, object]] = [
            ("DNC id", dnc),
            ("routing id", ipu.routing_id),
            ("IPUoF endpoint", ipu.endpoint),
            ("RDMA port", ipu.rdma_port),
            ("IPU-Link segment", ipu.ipulink_segment_id),
            ("device id on machine", ipu.device_id),
            ("chip id", ipu.chip_id),
            ("gateway software version", ipu.gwsw_version),
        ]
        if isinstance(status, IpuofError):
            pairs.append(("state", f"unreachable: {status}"))
        else:
            pairs += [
                ("machine", status.agent),
                ("ipu serial number", status.serial),
                ("partition", status.partition_id),
                ("state", state_of(status)),
                ("ipu error state", status.fault or "no errors"),
                ("utilisation", percent(status.utilisation)),
                ("temperature", f"{status.temperature_c:.1f} C"),
                ("power", f"{status.power_w:.1f} W"),
                ("link errors", status.link_errors),
                ("links down", status.links_down),
            ]
            if status.attached:
                pairs += [
                    ("holder pid", status.holder.pid or "unknown"),
                    ("holder host", status.holder.host or "unknown"),
                    ("holder command", status.holder.command or "unknown"),
                    ("holder address", status.client),
                ]
        for key, value in [*pairs, *[(k, v) for k, v in target.attributes.items()]]:
            click.echo(f"  {key:<26} {value}")
        click.echo("")


# --------------------------------------------------------------------------------- ipu-monitor


@click.command(cls=BoundedCommand, context_settings=CONTEXT)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option(
    "--watch", type=FiniteFloatRange(0.1), metavar="SECONDS",
    help="Refresh every SECONDS until Ctrl-C.",
)  # fmt: skip
@click.option(
    "--count", type=click.IntRange(1), help="With --watch: stop after this many refreshes."
)
@one_line_errors
def monitor_main(as_json: bool, watch: float | None, count: int | None) -> None:
    """Every IPU of the partition in reach: machine, serial, routing id, who holds it
    (pid, host, command), utilisation, temperature and power.

    \b
    Examples:
      ipu-monitor
      ipu-monitor --watch 1
      ipu-monitor --json
    """
    target = find_partition()
    shown = 0
    statuses: list[IpuStatus | IpuofError] = []
    try:
        while True:
            statuses = query_statuses(target.ipus, target.partition_id)
            if as_json:
                echo_json(
                    {
                        **_target_json(target),
                        "time": time.time(),
                        "ipus": [_status_json(i, s) for i, s in enumerate(statuses)],
                    }
                )
            else:
                if watch is not None and shown:
                    click.echo("")
                busy = sum(1 for s in statuses if isinstance(s, IpuStatus) and s.busy)
                click.echo(f"{target.describe()}: {busy} busy, {len(statuses) - busy} not busy")
                click.echo(
                    table(MONITOR_HEADERS, [_status_row(i, s) for i, s in enumerate(statuses)])
                )
            shown += 1
            if watch is None or (count is not None and shown >= count):
                break
            time.sleep(watch)
    except KeyboardInterrupt:
        pass
    if any(isinstance(s, IpuofError) for s in statuses):
        raise SystemExit(1)
