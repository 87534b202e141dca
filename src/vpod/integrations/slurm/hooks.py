"""The programs Slurm runs: PrologSlurmctld, EpilogSlurmctld, TaskProlog, and the reconciler.

They run once per job (or per task), so they import only the standard
library and hand the work to ``vpod-slurm-bridge`` over its Unix socket.
When the bridge is not running, the prolog, epilog and reconciler do the work
themselves (slower: they load gRPC and open a channel each time).

- ``vpod-slurm-prolog`` (PrologSlurmctld, as SlurmUser on the slurmctld
  host): makes ``slurm_<jobid>`` and waits until it is ACTIVE; exits 1 when it
  cannot, and Slurm puts the job back in the queue.
- ``vpod-slurm-epilog`` (EpilogSlurmctld): removes the job's partition.
- ``vpod-slurm-task-prolog`` (TaskProlog, as the job's user on the node):
  prints the ``export IPUOF_VIPU_API_*=...`` lines slurmstepd puts into every
  task's environment, for jobs that asked for IPUs.
- ``vpod-slurm-reconcile``: removes ``slurm_*`` partitions whose job is gone.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
from typing import Any

from .settings import SettingsError, SlurmSettings, load_settings

BRIDGE_TIMEOUT_S = 600.0
"""Longest wait for the bridge's answer (its own create deadline is shorter)."""


class BridgeUnreachable(Exception):
    pass


def ask_bridge(settings: SlurmSettings, request: dict[str, Any]) -> dict[str, Any]:
    """One request to the bridge; BridgeUnreachable when nothing listens on its socket."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(BRIDGE_TIMEOUT_S)
        try:
            conn.connect(settings.socket)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise BridgeUnreachable(f"{settings.socket}: {exc.strerror}") from None
        conn.sendall(json.dumps(request).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = conn.recv(65536)
            if not chunk:
                raise BridgeUnreachable(f"{settings.socket}: the bridge closed the connection")
            data += chunk
    answer: dict[str, Any] = json.loads(data)
    return answer


def _direct(settings: SlurmSettings, request: dict[str, Any]) -> dict[str, Any]:
    """Do the bridge's work in this process (the bridge is not running)."""
    import asyncio

    from .bridge import Bridge, open_api
    from .jobs import JobPartitions

    async def run() -> dict[str, Any]:
        api = open_api(settings)
        try:
            # No retry bookkeeping: Slurm requeues the job only after this process exits.
            jobs = JobPartitions(settings, api, schedule_retries=False)
            return await Bridge(settings, jobs).handle(request)
        finally:
            await api.close()

    return asyncio.run(run())


def _call(settings: SlurmSettings, request: dict[str, Any]) -> dict[str, Any]:
    try:
        return ask_bridge(settings, request)
    except BridgeUnreachable as exc:
        print(f"vpod-slurm: bridge not reachable ({exc}); doing it here", file=sys.stderr)
        return _direct(settings, request)


def _settings(prog: str, argv: list[str] | None, description: str) -> SlurmSettings:
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument(
        "--config", help="settings file (default: $VPOD_SLURM_CONFIG or /etc/vpod/slurm.toml)"
    )
    args = parser.parse_args(argv)
    try:
        return load_settings(args.config)
    except SettingsError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        sys.exit(2)


def _job_id(prog: str) -> str:
    job_id = os.environ.get("SLURM_JOB_ID", "")
    if not job_id.isdigit():
        print(f"{prog}: SLURM_JOB_ID is not set: Slurm runs this program", file=sys.stderr)
        sys.exit(2)
    return job_id


def _finish(prog: str, job_id: str, answer: dict[str, Any]) -> None:
    if answer.get("ok"):
        print(f"{prog}: job {job_id}: {answer.get('message', 'done')}", file=sys.stderr)
        sys.exit(0)
    print(f"{prog}: job {job_id}: {answer.get('error', 'failed')}", file=sys.stderr)
    sys.exit(1)


def prolog_main(argv: list[str] | None = None) -> None:
    """Console script ``vpod-slurm-prolog`` (PrologSlurmctld)."""
    prog = "vpod-slurm-prolog"
    settings = _settings(prog, argv, "PrologSlurmctld: make the job's V-IPU partition.")
    job_id = _job_id(prog)
    request = {
        "op": "start",
        "job_id": job_id,
        "partition": os.environ.get("SLURM_JOB_PARTITION", ""),
    }
    _finish(prog, job_id, _call(settings, request))


def epilog_main(argv: list[str] | None = None) -> None:
    """Console script ``vpod-slurm-epilog`` (EpilogSlurmctld)."""
    prog = "vpod-slurm-epilog"
    settings = _settings(prog, argv, "EpilogSlurmctld: remove the job's V-IPU partition.")
    job_id = _job_id(prog)
    _finish(prog, job_id, _call(settings, {"op": "end", "job_id": job_id}))


def task_prolog_lines(settings: SlurmSettings, job_id: str, ipus: int) -> list[str]:
    """The ``export`` lines for a task of a job with ``ipus`` IPUs (none without IPUs)."""
    if ipus <= 0:
        return []
    values = {
        "IPUOF_VIPU_API_HOST": settings.ipuof_api_host,
        "IPUOF_VIPU_API_PORT": str(settings.ipuof_api_port),
        "IPUOF_VIPU_API_PARTITION_ID": settings.partition_id(job_id),
        "IPUOF_VIPU_API_GCD_ID": "0",
        "IPUOF_VIPU_API_TIMEOUT": str(settings.ipuof_timeout_s),
    }
    return [f"export {name}={value}" for name, value in values.items()]


def task_prolog_main(argv: list[str] | None = None) -> None:
    """Console script ``vpod-slurm-task-prolog`` (TaskProlog)."""
    from .slurm_commands import ipus_in_tres

    prog = "vpod-slurm-task-prolog"
    settings = _settings(prog, argv, "TaskProlog: print the IPUOF_VIPU_API_* exports of a task.")
    job_id = _job_id(prog)
    done = subprocess.run(
        [settings.slurm_command("squeue"), "--noheader", "--jobs", job_id, "--format", "%b"],
        capture_output=True,
        text=True,
        env=settings.slurm_env(),
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        # slurmstepd shows stderr in the job's log; the task still runs, without the variables.
        print(f"print {prog}: cannot read job {job_id}: {done.stderr.strip()}")
        return
    for line in task_prolog_lines(settings, job_id, ipus_in_tres(done.stdout.strip())):
        print(line)


def reconcile_main(argv: list[str] | None = None) -> None:
    """Console script ``vpod-slurm-reconcile``."""
    prog = "vpod-slurm-reconcile"
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Remove slurm_* partitions whose Slurm job is gone (never a running job's)."
        " Asks the bridge when it runs, else does it here.",
    )
    parser.add_argument("--config", help="settings file")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    try:
        settings = load_settings(args.config)
    except SettingsError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        sys.exit(2)
    answer = _call(settings, {"op": "reconcile"})
    if not answer.get("ok"):
        print(f"{prog}: {answer.get('error')}", file=sys.stderr)
        sys.exit(1)
    if args.json:
        print(json.dumps({"removed": answer["removed"], "kept": answer["kept"]}))
        return
    removed = answer["removed"]
    print(
        f"removed {len(removed)} partition(s){': ' + ', '.join(removed) if removed else ''};"
        f" kept {len(answer['kept'])} of running jobs"
    )
