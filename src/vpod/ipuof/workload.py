"""``vpod-workload``: an emulated application that attaches its device and runs steps.

It finds the partition as any IPUoF application does, attaches a device
(``--device``; by default the IPUs of its ``vpod-run`` instance, read from
``POPDIST_*``, else the Slurm job's block of a shared partition,
``VPOD_IPU_DEVICE_ID``, else every IPU of the partition), tells the machines how busy
it keeps them (``--load``), and runs ``--steps`` steps or for ``--seconds``.
The emulated machines' telemetry then shows its IPUs busy; when it ends, is
interrupted or dies, its IPUs are free again and the partition's auto-reset
applies.

Exit status: 0 done; 1 refused (device busy, not ACTIVE in time ...) or the
machine ended the attachment; 2 a configuration mistake; 130 interrupted.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Mapping
from types import FrameType

import click

from vpod.client.command_line import BoundedCommand, FiniteFloatRange

from .attach import attach_device
from .config import PartitionTarget
from .devices import Device, device_for_ipus, find_device, list_devices
from .discovery import find_partition
from .errors import ConfigInvalid
from .render import one_line_errors

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def popdist_routing_ids(env: Mapping[str, str]) -> tuple[int, ...] | None:
    """Routing ids of this instance's replicas, from ``POPDIST_*`` (None when not set)."""
    try:
        per_replica = int(env["POPDIST_NUM_IPUS_PER_REPLICA"])
        local = int(env["POPDIST_NUM_LOCAL_REPLICAS"])
        offset = int(env["POPDIST_REPLICA_INDEX_OFFSET"])
    except KeyError:
        return None
    except ValueError:
        raise ConfigInvalid("POPDIST_* variables must be whole numbers") from None
    first = offset * per_replica
    return tuple(range(first, first + local * per_replica))


def _terminate(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@click.command(cls=BoundedCommand, context_settings={**CONTEXT, "show_default": True})
@click.option("-d", "--device", "device_id", type=click.IntRange(0), help="Device id to attach.")
@click.option("--steps", type=click.IntRange(1), help="Run this many steps.")
@click.option(
    "--seconds", type=FiniteFloatRange(0.0), help="Run this long (default 10 s without --steps)."
)
@click.option(
    "--step-time",
    type=FiniteFloatRange(0.0),
    default=0.05,
    help="Seconds per step.",
)
@click.option(
    "--load",
    type=FiniteFloatRange(0.0, 1.0),
    default=0.9,
    help="How busy a step keeps the IPUs (0..1).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object at the end.")
@one_line_errors
def main(
    device_id: int | None,
    steps: int | None,
    seconds: float | None,
    step_time: float,
    load: float,
    as_json: bool,
) -> None:
    """Attach a device of the partition in reach and keep it busy for a while.

    \b
    Examples:
      IPUOF_VIPU_API_HOST=localhost IPUOF_VIPU_API_PARTITION_ID=p1 vpod-workload --seconds 30
      vpod-workload --device 4 --steps 200 --load 0.5
      vpod-run --num-replicas 4 --ipus-per-replica 2 --num-instances 2 -- vpod-workload
    """
    signal.signal(signal.SIGTERM, _terminate)
    started = time.monotonic()
    target = find_partition()
    device = choose_device(target, device_id)
    attachment = attach_device(target, device)
    attached_s = time.monotonic() - started
    ran = 0
    interrupted = False
    with attachment:
        limit = seconds if seconds is not None else (None if steps is not None else 10.0)
        began = time.monotonic()
        try:  # from the first line a user sees: a Ctrl-C then still ends in the summary
            if not as_json:
                click.echo(f"attached {attachment.describe()} in {attached_s * 1000:.0f} ms")
            attachment.set_load(load)
            while (steps is None or ran < steps) and (
                limit is None or time.monotonic() - began < limit
            ):
                time.sleep(step_time)
                attachment.check()
                ran += 1
        except KeyboardInterrupt:
            interrupted = True
        elapsed = time.monotonic() - began
    summary = {
        "device": device.id,
        "members": list(device.members),
        "partition": target.partition_id,
        "ipus": [
            {"agent": i.agent, "device_id": i.device_id, "routing_id": i.routing_id}
            for i in attachment.ipus
        ],
        "steps": ran,
        "seconds": round(elapsed, 3),
        "attach_ms": round(attached_s * 1000, 1),
        "interrupted": interrupted,
        "pid": os.getpid(),
    }
    if as_json:
        click.echo(json.dumps(summary))
    else:
        click.echo(
            f"{'interrupted after' if interrupted else 'ran'} {ran} steps in {elapsed:.1f} s"
        )
    if interrupted:
        raise SystemExit(130)


JOB_DEVICE_ENV = "VPOD_IPU_DEVICE_ID"
"""A Slurm job's own device in a shared reconfigurable partition (docs/slurm.md)."""


def choose_device(target: PartitionTarget, device_id: int | None) -> Device:
    """``--device``, else this instance's IPUs (``POPDIST_*``), else the Slurm job's device
    (``VPOD_IPU_DEVICE_ID``), else every IPU."""
    if device_id is not None:
        return find_device(target, device_id)
    routing_ids = popdist_routing_ids(os.environ)
    if routing_ids is not None:
        dnc_of = {ipu.routing_id: dnc for dnc, ipu in enumerate(target.ipus)}
        missing = [r for r in routing_ids if r not in dnc_of]
        if missing:
            raise ConfigInvalid(
                f"POPDIST_* name routing ids {routing_ids[0]}..{routing_ids[-1]}, but"
                f" {target.describe()} has no IPU of routing id {missing[0]}"
            )
        return device_for_ipus(target, tuple(dnc_of[r] for r in routing_ids))
    job_device = os.environ.get(JOB_DEVICE_ENV)
    if job_device is not None:
        if not job_device.isdigit():
            raise ConfigInvalid(f"{JOB_DEVICE_ENV}={job_device} is not a device id")
        return find_device(target, int(job_device))
    return list_devices(target)[-1]
