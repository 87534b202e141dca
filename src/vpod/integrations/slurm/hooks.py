"""The Python hooks: PrologSlurmctld, EpilogSlurmctld and TaskProlog as console scripts.

Slurm runs the bash hooks of :mod:`.shell_hooks`, which start in a few
milliseconds; they run these when the bridge's loopback port is not there
(or the settings need full TOML). These start as fast as Python can: they
import only ``os``, ``sys``, ``socket`` and ``json``, read the settings
file with :func:`simple_values` (one ``key = value`` per line; the full
TOML parser only when a line is anything else), and hand the work
to ``vpod-slurm-bridge`` over its Unix socket. When the bridge is not
running, the prolog and epilog do the work themselves (slower: they load
gRPC and open a channel each time).

- ``vpod-slurm-prolog`` (PrologSlurmctld, as SlurmUser on the slurmctld
  host): makes ``slurm_<jobid>`` and waits until it is ACTIVE; exits 1 when it
  cannot, and Slurm puts the job back in the queue.
- ``vpod-slurm-epilog`` (EpilogSlurmctld): removes the job's partition.
- ``vpod-slurm-task-prolog`` (TaskProlog, as the job's user on the node):
  prints the ``export IPUOF_VIPU_API_*=...`` lines slurmstepd puts into every
  task's environment, for jobs that asked for IPUs.
"""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

from .bridge_protocol import BridgeUnreachable, ask_bridge, ipus_in_tres

DEFAULT_CONFIG = "/etc/vpod/slurm.toml"
DEFAULT_SOCKET = "/run/vpod-slurm/bridge.sock"
USAGE = 2


def _print_help() -> NoReturn:
    prog = os.path.basename(sys.argv[0])
    try:
        print(f"usage: {prog} [--config FILE]\n\n{__doc__}", flush=True)
    except BrokenPipeError:  # the reader left (`| head`): quietly, as the other programs do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except OSError as exc:  # stdout itself (a full disk): one line, not a traceback
        print(f"{prog}: error: {exc.strerror or exc}", file=sys.stderr)
        sys.exit(1)
    sys.exit(0)


def _config_path(argv: list[str]) -> str:
    for i, arg in enumerate(argv):
        if arg == "--config" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--config="):
            return arg.split("=", 1)[1]
        if arg in ("-h", "--help"):
            _print_help()
    return os.environ.get("VPOD_SLURM_CONFIG") or DEFAULT_CONFIG


def simple_values(text: str) -> dict[str, Any] | None:
    """Top-level ``key = "string"`` / ``key = number`` pairs, None when the text needs real TOML."""
    values: dict[str, Any] = {}
    in_table = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            in_table = True  # [allocations]: only the bridge needs it
            continue
        if in_table:
            continue
        key, sep, value = (part.strip() for part in line.partition("="))
        if not sep or not key.replace("_", "").isalnum():
            return None
        if value.startswith('"') and value.endswith('"') and len(value) >= 2:
            body = value[1:-1]
            if "\\" in body or '"' in body:
                return None
            values[key] = body
        elif value.replace(".", "", 1).isdigit():
            values[key] = float(value) if "." in value else int(value)
        else:
            return None
    return values


def read_values(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        print(f"vpod-slurm: cannot read settings {path}: {exc.strerror}", file=sys.stderr)
        sys.exit(USAGE)
    values = simple_values(text)
    if values is None:
        import tomllib

        values = tomllib.loads(text)
    return values


def _direct(config: str, request: dict[str, Any]) -> dict[str, Any]:
    """Do the bridge's work in this process (the bridge is not running)."""
    import asyncio

    from .bridge import Bridge, open_api
    from .lasting_jobs import job_partitions
    from .settings import load_settings

    settings = load_settings(config)
    if settings.mode != "dynamic" and request.get("op") == "start":
        # Which partition a job gets is chosen under the bridge's one lock: two prologs
        # choosing here, each on its own, could hand the same one to two jobs.
        return {
            "ok": False,
            "error": f"mode {settings.mode} needs vpod-slurm-bridge running (it chooses each"
            " job's partition): start it; the job goes back to the queue meanwhile",
        }

    async def run() -> dict[str, Any]:
        api = open_api(settings)
        try:
            # No retry bookkeeping: Slurm requeues the job only after this process exits.
            jobs = job_partitions(settings, api, schedule_retries=False)
            return await Bridge(settings, jobs).handle(request)
        finally:
            await api.close()

    return asyncio.run(run())


def call_bridge(config: str, values: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    try:
        return ask_bridge(str(values.get("socket", DEFAULT_SOCKET)), request)
    except BridgeUnreachable as exc:
        print(f"vpod-slurm: bridge not reachable ({exc}); doing it here", file=sys.stderr)
        return _direct(config, request)


def _job_id(prog: str) -> str:
    job_id = os.environ.get("SLURM_JOB_ID", "")
    if not job_id.isdigit():
        print(f"{prog}: SLURM_JOB_ID is not set: Slurm runs this program", file=sys.stderr)
        sys.exit(USAGE)
    return job_id


def _finish(prog: str, job_id: str, answer: dict[str, Any]) -> None:
    if answer.get("ok"):
        print(f"{prog}: job {job_id}: {answer.get('message', 'done')}", file=sys.stderr)
        sys.exit(0)
    print(f"{prog}: job {job_id}: {answer.get('error', 'failed')}", file=sys.stderr)
    sys.exit(1)


def prolog_main(argv: list[str] | None = None) -> None:
    """Console script ``vpod-slurm-prolog`` (PrologSlurmctld)."""
    config = _config_path(sys.argv[1:] if argv is None else argv)
    values = read_values(config)
    job_id = _job_id("vpod-slurm-prolog")
    request = {
        "op": "start",
        "job_id": job_id,
        "partition": os.environ.get("SLURM_JOB_PARTITION", ""),
        "uid": os.environ.get("SLURM_JOB_UID", ""),
    }
    _finish("vpod-slurm-prolog", job_id, call_bridge(config, values, request))


def epilog_main(argv: list[str] | None = None) -> None:
    """Console script ``vpod-slurm-epilog`` (EpilogSlurmctld)."""
    config = _config_path(sys.argv[1:] if argv is None else argv)
    values = read_values(config)
    job_id = _job_id("vpod-slurm-epilog")
    _finish(
        "vpod-slurm-epilog", job_id, call_bridge(config, values, {"op": "end", "job_id": job_id})
    )


def task_prolog_lines(
    values: dict[str, Any], job_id: str, ipus: int, assigned: dict[str, str] | None = None
) -> list[str]:
    """The ``export`` lines for a task of a job with ``ipus`` IPUs (none without IPUs);
    ``assigned``: what the job holds in the static and reconfigurable modes (its
    ``.assigned`` file: partition, device)."""
    if ipus <= 0:
        return []
    assigned = assigned or {}
    exports: dict[str, Any] = {
        "IPUOF_VIPU_API_HOST": values.get("ipuof_api_host", "localhost"),
        "IPUOF_VIPU_API_PORT": values.get("ipuof_api_port", 8090),
        "IPUOF_VIPU_API_PARTITION_ID": assigned.get(
            "partition", f"{values.get('partition_prefix', 'slurm_')}{job_id}"
        ),
        "IPUOF_VIPU_API_GCD_ID": 0,
        "IPUOF_VIPU_API_TIMEOUT": values.get("ipuof_timeout_s", 120),
    }
    if "device" in assigned:
        exports["VPOD_IPU_DEVICE_ID"] = assigned["device"]
    exports.update(_job_key_exports(values, job_id))
    return [f"export {name}={value}" for name, value in exports.items()]


def _job_key_exports(values: dict[str, Any], job_id: str) -> dict[str, str]:
    """VIPU_CLI_CONFIG and the key's id and key from the job's key file, when it has one
    (a secure controller; only the job's user can read it)."""
    directory = str(values.get("credentials_dir", "/run/vpod-slurm/jobs"))
    path = os.path.join(
        directory, f"{values.get('partition_prefix', 'slurm_')}{job_id}.vipu-cli.hcl"
    )
    try:
        with open(path) as handle:
            lines = handle.read().splitlines()
    except OSError:
        return {}
    found = {"VIPU_CLI_CONFIG": path}
    for line in lines:
        key, _, value = line.partition("=")
        if key in ("api-user-id", "api-access-key") and len(value) > 2:
            found["VIPU_CLI_" + key.upper().replace("-", "_")] = value.strip('"')
    return found


def read_assigned(values: dict[str, Any], job_id: str) -> dict[str, str]:
    """The job's ``.assigned`` file (static and reconfigurable modes); empty when none."""
    directory = str(values.get("credentials_dir", "/run/vpod-slurm/jobs"))
    path = os.path.join(directory, f"{values.get('partition_prefix', 'slurm_')}{job_id}.assigned")
    try:
        with open(path) as handle:
            text = handle.read()
    except OSError:
        return {}
    found = {}
    for line in text.splitlines():
        name, _, value = line.partition("=")
        if (
            name in ("partition", "ipus", "device")
            and value.replace("_", "").replace("-", "").replace(".", "").isalnum()
        ):
            found[name] = value
    return found


def _job_tres(values: dict[str, Any], job_id: str) -> tuple[int, str]:
    """``squeue --format %b`` for the job: (exit status, output or error), without subprocess."""
    bin_dir = str(values.get("slurm_bin_dir", ""))
    squeue = os.path.join(bin_dir, "squeue") if bin_dir else "squeue"
    env = dict(os.environ)
    if values.get("slurm_conf"):
        env["SLURM_CONF"] = str(values["slurm_conf"])
    read_end, write_end = os.pipe()
    argv = [squeue, "--noheader", "--jobs", job_id, "--format", "%b"]
    try:
        pid = os.posix_spawnp(
            squeue,
            argv,
            env,
            file_actions=[(os.POSIX_SPAWN_DUP2, write_end, 1), (os.POSIX_SPAWN_DUP2, write_end, 2)],
        )
    except OSError as exc:
        os.close(read_end)
        os.close(write_end)
        return 127, f"cannot run {squeue}: {exc.strerror}"
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 65536):
        chunks.append(chunk)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode(errors="replace")


def task_prolog_main(argv: list[str] | None = None) -> None:
    """Console script ``vpod-slurm-task-prolog`` (TaskProlog)."""
    config = _config_path(sys.argv[1:] if argv is None else argv)
    values = read_values(config)
    job_id = _job_id("vpod-slurm-task-prolog")
    if values.get("mode", "dynamic") != "dynamic":
        assigned = read_assigned(values, job_id)
        ipus = int(assigned.get("ipus", "0")) if assigned.get("ipus", "").isdigit() else 0
        for line in task_prolog_lines(values, job_id, ipus, assigned):
            print(line)
        return
    code, out = _job_tres(values, job_id)
    if code != 0:
        # "print ..." lines go to the task's output: the task runs, without the variables.
        print(f"print vpod-slurm-task-prolog: cannot read job {job_id}: {out.strip()}")
        return
    for line in task_prolog_lines(values, job_id, ipus_in_tres(out.strip())):
        print(line)
