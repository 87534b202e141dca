"""``vpod-slurm-bridge``: the daemon beside slurmctld that makes and removes job partitions.

Slurm runs PrologSlurmctld and EpilogSlurmctld as a new process per job. A
process that imports gRPC and opens a channel costs a few hundred
milliseconds, which would be added to every job's start; so the hooks are
small standard-library programs that hand the job to this daemon over a Unix
socket (mode 0600, owned by SlurmUser), and the daemon keeps one warm channel
to the controller. It also runs the reconciler every ``reconcile_interval_s``.

The shell hooks (:mod:`.shell_hooks`) cannot open a Unix socket, so the bridge
also listens on a free port of 127.0.0.1 and writes ``PORT TOKEN`` into
``settings.hook_file`` (0600, SlurmUser's like the socket): a request on that
port counts only with the token in it.

Protocol: one JSON object per line each way. Requests ``{"op": "start",
"job_id": "42", "partition": "ipu", "uid": "1000"}`` (``uid``: the job's user,
``SLURM_JOB_UID``; read with squeue when absent), ``{"op": "end", "job_id": "42"}``,
``{"op": "reconcile"}``, ``{"op": "ping"}`` (plus ``"token"`` on the TCP
port); answers ``{"ok": true, "message": ...}`` or ``{"ok": false, "error": ...}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import json
import logging
import os
import secrets
import signal
import sys
from pathlib import Path
from typing import Any

from vpod.client.command_line import BoundedArgumentParser

from .jobs import JobPartitions, StartRefused
from .lasting_jobs import LastingPartitions, job_partitions
from .settings import SettingsError, SlurmSettings, load_settings
from .slurm_commands import SlurmCommandError
from .vipu_api import ClientPartitionApi, PartitionFailure

log = logging.getLogger("vpod.slurm")
READY_LINE = "vpod-slurm-bridge ready"


def open_api(settings: SlurmSettings) -> ClientPartitionApi:
    if not settings.vipu_config:
        raise SettingsError("vipu_config is not set: name the vipu-cli.hcl the integration uses")
    return ClientPartitionApi(settings.vipu_config, timeout_s=settings.create_timeout_s)


class Bridge:
    """Serves the hooks' requests and reconciles periodically."""

    def __init__(self, settings: SlurmSettings, jobs: JobPartitions) -> None:
        self.settings = settings
        self.jobs = jobs

    async def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        job_id = str(request.get("job_id", ""))
        try:
            if op == "start":
                uid = str(request.get("uid", ""))
                message = await self.jobs.start(
                    job_id,
                    str(request.get("partition", "")),
                    request.get("ipus"),
                    int(uid) if uid.isdigit() else None,
                )
            elif op == "end":
                message = await self.jobs.end(job_id)
            elif op == "reconcile":
                report = await self.jobs.reconcile()
                return {"ok": True, "removed": report.removed, "kept": report.kept}
            elif op == "ping":
                message = "pong"
            else:
                return {"ok": False, "error": f"unknown op {op!r}"}
        except (StartRefused, PartitionFailure, SlurmCommandError) as exc:
            return {"ok": False, "error": str(exc)}
        except Exception as exc:  # answer the hook whatever happens: it must not hang or guess
            log.exception("%s for job %s failed unexpectedly", op, job_id)
            return {"ok": False, "error": f"{op} failed unexpectedly: {exc!r}"}
        return {"ok": True, "message": message}

    async def serve_connection(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        token: str | None = None,
    ) -> None:
        """Answer requests; with ``token`` (the TCP port) only those that carry it."""
        try:
            while line := await reader.readline():
                try:
                    request = json.loads(line)
                    if not isinstance(request, dict):
                        raise ValueError("not an object")
                except ValueError as exc:
                    answer: dict[str, Any] = {"ok": False, "error": f"bad request: {exc}"}
                else:
                    if token is not None and not hmac.compare_digest(
                        str(request.pop("token", "")).encode(), token.encode()
                    ):
                        answer = {"ok": False, "error": "refused: wrong or missing token"}
                    else:
                        answer = await self.handle(request)
                writer.write(json.dumps(answer).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def reconcile_forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.reconcile_interval_s)
            try:
                report = await self.jobs.reconcile()
            except (PartitionFailure, SlurmCommandError) as exc:
                log.warning("reconcile failed: %s", exc)
                continue
            if report.removed:
                log.info("reconcile removed %s", ", ".join(report.removed))


def write_hook_file(path: Path, port: int, token: str) -> None:
    """``PORT TOKEN`` for the shell hooks, born 0600 and replaced in one step."""
    new = path.with_name(path.name + ".new")
    with contextlib.suppress(FileNotFoundError):
        new.unlink()
    fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{port} {token}\n")
    os.replace(new, path)


async def serve(settings: SlurmSettings, *, ready: str | None = READY_LINE) -> None:
    api = open_api(settings)
    jobs = job_partitions(settings, api, remove_in_background=True)
    if isinstance(jobs, LastingPartitions):
        try:
            made = await jobs.prepare()
            log.info("mode %s: partitions %s are ACTIVE", settings.mode, ", ".join(made))
        except PartitionFailure as exc:  # the first job (or the reconciler) tries again
            log.warning("mode %s: cannot make its partitions yet: %s", settings.mode, exc)
    bridge = Bridge(settings, jobs)
    path = Path(settings.socket)
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    old_umask = os.umask(0o177)  # the socket is born 0600: only its owner (SlurmUser) may call
    try:
        server = await asyncio.start_unix_server(bridge.serve_connection, path=str(path))
    finally:
        os.umask(old_umask)
    token = secrets.token_hex(32)
    tcp = await asyncio.start_server(
        functools.partial(bridge.serve_connection, token=token), host="127.0.0.1", port=0
    )
    hook_file = Path(settings.hook_file)
    write_hook_file(hook_file, tcp.sockets[0].getsockname()[1], token)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    reconciler = asyncio.create_task(bridge.reconcile_forever())
    if ready:
        print(f"{ready}: socket {path}", flush=True)
    try:
        async with server, tcp:
            await stop.wait()
    finally:
        reconciler.cancel()
        await jobs.drain()
        await api.close()
        for own in (path, hook_file):
            with contextlib.suppress(FileNotFoundError):
                own.unlink()


def main(argv: list[str] | None = None) -> None:
    """Console script ``vpod-slurm-bridge``."""
    parser = BoundedArgumentParser(
        prog="vpod-slurm-bridge",
        description="Make and remove the V-IPU partitions of Slurm jobs for the vpod-slurm hooks."
        " Run it as SlurmUser on the slurmctld host.",
    )
    parser.add_argument(
        "--config", help="settings file (default: $VPOD_SLURM_CONFIG or /etc/vpod/slurm.toml)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        settings = load_settings(args.config)
        asyncio.run(serve(settings))
    except (SettingsError, PartitionFailure) as exc:
        print(f"vpod-slurm-bridge: {exc}", file=sys.stderr)
        sys.exit(2)


def reconcile_main(argv: list[str] | None = None) -> None:
    """Console script ``vpod-slurm-reconcile``."""
    from .bridge_protocol import BridgeUnreachable, ask_bridge

    prog = "vpod-slurm-reconcile"
    parser = BoundedArgumentParser(
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
    try:
        answer = ask_bridge(settings.socket, {"op": "reconcile"})
    except BridgeUnreachable:
        answer = asyncio.run(_reconcile_here(settings))
    if not answer.get("ok"):
        print(f"{prog}: {answer.get('error')}", file=sys.stderr)
        sys.exit(1)
    removed, kept = answer["removed"], answer["kept"]
    if args.json:
        parser.print_result(json.dumps({"removed": removed, "kept": kept}))
        return
    names = ": " + ", ".join(removed) if removed else ""
    parser.print_result(
        f"removed {len(removed)} partition(s){names}; kept {len(kept)} of running jobs"
    )


async def _reconcile_here(settings: SlurmSettings) -> dict[str, Any]:
    api = open_api(settings)
    try:
        return await Bridge(settings, job_partitions(settings, api)).handle({"op": "reconcile"})
    finally:
        await api.close()
