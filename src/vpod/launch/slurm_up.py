"""``vpod slurm up``: the embedded pod plus a one-node Slurm whose jobs get V-IPU partitions.

``vpod slurm hooks DIR``: write the bash hooks a production slurm.conf names.

It runs ``vpod up`` as a child (same data directory and options), reads the
size of the default allocation with ``vipu-admin list allocations --json``,
then starts munged, slurmctld, slurmd and ``vpod-slurm-bridge`` under
``DATA_DIR/slurm`` (see :mod:`vpod.integrations.slurm.local_cluster`) and
prints what to type. Secure by default, as ``vpod up``: the integration gets
its own V-IPU user ``slurm`` whose key is in ``DATA_DIR/slurm.vipu-cli.hcl``
(mode 0600); ``--open`` runs the open V-IPU mode instead.
Ctrl-C stops everything; so does the end of this process however it ends
(SIGKILL included): every child asks Linux for a parent-death signal
(``launch/parent_death.py``) and the daemons run in the foreground, so a second
``vpod slurm up`` finds the ports free.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from vpod.cli import server_options
from vpod.cli.errors import CliFailure, fail, run_cli
from vpod.cli.short_help import FittingGroup
from vpod.integrations.slurm import spank
from vpod.integrations.slurm.local_cluster import (
    SLURM_PARTITION,
    LocalSlurm,
    LocalSlurmError,
    missing_requirements,
)
from vpod.integrations.slurm.settings import (
    DEFAULT_CONFIG_PATH,
    MODES,
    SettingsError,
    SlurmSettings,
    check_mode,
    load_settings,
)
from vpod.integrations.slurm.shell_hooks import write_hooks

from .parent_death import dying_with_this_process
from .up_progress import StartProgress

UP_TIMEOUT_S = 120.0
INTEGRATION_USER = "slurm"


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def _start_pod(argv: list[str]) -> tuple[subprocess.Popen[str], str]:
    # SIGTERM when this process ends however it ends: vpod up then stops its own children.
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=dying_with_this_process(),
    )
    ready: list[str] = []
    seen = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("vpod is up:"):
                ready.append(line.strip())
                seen.set()
            elif not seen.is_set() or "error" in line.lower():
                sys.stderr.write(line)
        seen.set()

    threading.Thread(target=pump, daemon=True).start()
    if not seen.wait(UP_TIMEOUT_S) or not ready:
        proc.kill()
        fail("vpod up did not become ready (see the messages above)")
    return proc, ready[0]


def _port(ready: str, label: str) -> int:
    return int(ready.split(label, 1)[1].split(",", 1)[0].strip().rsplit(":", 1)[1])


def _admin(admin_config: Path, *args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [_bin("vipu-admin"), "--config", str(admin_config), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
    )
    if done.returncode != 0:
        fail(f"vipu-admin {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def _allocation_size(admin_config: Path, allocation: str) -> int:
    listing = json.loads(_admin(admin_config, "list", "allocations", "--json"))
    for row in listing["allocations"]:
        if row["allocation"]["id"] == allocation:
            return int(row["size"])
    raise CliFailure(f"the pod has no allocation {allocation}", 1)


def _integration_user(data_dir: Path, admin_config: Path, allocation: str, port: int) -> Path:
    """The V-IPU user the bridge authenticates as (its key only in a root-only file)."""
    path = data_dir / f"{INTEGRATION_USER}.vipu-cli.hcl"
    if not path.exists():
        _admin(
            admin_config,
            "create",
            "user",
            INTEGRATION_USER,
            "--allocations",
            allocation,
            "--output",
            str(data_dir),
            "--user-api-port",
            str(port),
            "--json",
            cwd=data_dir,
        )
    path.chmod(0o600)
    return path


@click.group("slurm", cls=FittingGroup)
def slurm() -> None:
    """A one-node Slurm wired to the embedded pod."""


@slurm.command("up")
@server_options.data_dir_option("The pod's data directory; Slurm's files go in DATA_DIR/slurm.")
@click.option("--pod", "pod_shape", default=None, metavar="SHAPE", help="Pod shape (see vpod up).")
@server_options.user_port_option("V-IPU user API port.")
@server_options.admin_port_option("Admin API port.")
@server_options.http_port_option("REST API port.")
@click.option(
    "--secure/--open",
    default=True,
    show_default=True,
    help="Controller with authentication (the integration uses its own user 'slurm'), or the"
    " open V-IPU mode (as vpod up --open).",
)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="dynamic",
    show_default=True,
    help="How jobs get IPUs: a partition each (dynamic), one of the static partitions"
    " (static, --gres=vipu:SIZE:1), or a block of one shared reconfigurable partition"
    " (reconfigurable). See docs/slurm.md.",
)
@click.option(
    "--static-partitions",
    default="",
    metavar="SIZE:COUNT,...",
    help="With --mode static: the partitions to make once, e.g. 1:4,4:2.",
)
@click.option(
    "--shared-size",
    type=int,
    default=16,
    show_default=True,
    help="With --mode reconfigurable: IPUs of the shared partition (1, 2, 4, 8, 16 or 64).",
)
def slurm_up(
    data_dir: Path,
    pod_shape: str | None,
    port: int,
    admin_port: int,
    http_port: int,
    secure: bool,
    mode: str,
    static_partitions: str,
    shared_size: int,
) -> None:
    """Run the embedded pod and a one-node Slurm (needs root, slurm-wlm and munge) until Ctrl-C.

    \b
    Examples:
      vpod slurm up
      vpod slurm up --mode static --static-partitions 1:4,4:2
      vpod slurm up --mode reconfigurable --shared-size 16
    """
    layout = Layout(mode, static_partitions, shared_size)
    data_dir = data_dir.resolve()
    # The pod is `vpod up`, without the cloud, on these ports.
    pod_argv = [_bin("vpod"), "up", "--data-dir", str(data_dir), "--port", str(port)]
    pod_argv += ["--admin-port", str(admin_port), "--http-port", str(http_port), "--no-cloud"]
    if pod_shape:
        pod_argv += ["--pod", pod_shape]
    pod_argv.append("--secure" if secure else "--open")
    run_cli(lambda: _run(pod_argv, data_dir, secure, layout))


@dataclass(frozen=True)
class Layout:
    """The integration's mode and what it needs (checked before anything starts)."""

    mode: str
    static_partitions: str
    shared_size: int

    def settings(self, **fields: Any) -> SlurmSettings:
        settings = SlurmSettings(
            mode=self.mode,
            static_partitions=self.static_partitions,
            shared_size=self.shared_size,
            **fields,
        )
        try:
            check_mode(settings, "vpod slurm up")
        except SettingsError as exc:
            flag = (
                str(exc)
                .replace("static_partitions", "--static-partitions")
                .replace("shared_size", "--shared-size")
            )
            fail(flag.replace('mode = "static"', "--mode static"), 2)
        return settings

    def describe(self, settings: SlurmSettings) -> tuple[str, str]:
        """What the ready line says about the mode, and the job to try."""
        if self.mode == "static":
            ids = settings.static_partition_ids()
            made = ", ".join(f"{len(names)} of {size} IPUs" for size, names in ids.items())
            return f"static partitions ({made})", f"--gres=vipu:{min(ids)}:1"
        if self.mode == "reconfigurable":
            return (
                f"shared reconfigurable partition {settings.shared_partition_id}"
                f" ({settings.shared_size} IPUs)",
                f"--gres=ipu:{min(4, settings.shared_size)}",
            )
        return "a partition per job", "--gres=ipu:8"


def _run(pod_argv: list[str], data_dir: Path, secure: bool, layout: Layout) -> None:
    """Run the pod (``vpod up`` as ``pod_argv``) and Slurm wired to it until told to stop."""
    layout.settings()  # a bad mode is refused before the pod starts
    reason = missing_requirements()
    if reason:
        fail(f"cannot run a local Slurm: {reason}", 2)
    progress = StartProgress(program="vpod slurm up")
    progress.step("starting the pod (vpod up)")
    try:
        pod, ready = _start_pod(pod_argv)
    except BaseException:
        progress.close()
        raise
    cluster: LocalSlurm | None = None
    stop = threading.Event()
    previous = {
        sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        user_port = _port(ready, "user API")
        admin_config = data_dir / ("admin.vipu-cli.hcl" if secure else "vipu-cli.hcl")
        allocation = "default"
        ipus = _allocation_size(admin_config, allocation)
        vipu_config = (
            _integration_user(data_dir, admin_config, allocation, user_port)
            if secure
            else data_dir / "vipu-cli.hcl"
        )
        settings = layout.settings(
            vipu_config=str(vipu_config),
            default_allocation=allocation,
            ipuof_api_host="127.0.0.1",
            ipuof_api_port=user_port,
            retry_initial_s=5.0,
            reconcile_interval_s=30.0,
        )
        cluster = LocalSlurm(
            data_dir / "slurm", settings, ipus, child_setup=dying_with_this_process()
        )
        progress.step("starting Slurm (munged, slurmctld, slurmd) and its V-IPU hooks")
        cluster.start()
        progress.close()
        what, gres = layout.describe(settings)
        print(
            f"vpod slurm is up: Slurm partition {SLURM_PARTITION} with {ipus} IPUs (V-IPU"
            f" allocation {allocation}), mode {layout.mode}: {what}, user API"
            f" 127.0.0.1:{user_port}. Next: export"
            f" SLURM_CONF={shlex.quote(str(cluster.slurm_conf))} && sbatch"
            f" {gres} --wrap 'env | grep IPUOF; sleep 30' && squeue && vipu --config"
            f" {shlex.quote(str(vipu_config))} list partitions",
            flush=True,
        )
        while not stop.is_set() and pod.poll() is None:
            stop.wait(0.5)
        if pod.poll() is not None:
            fail(f"vpod up exited with code {pod.returncode}")
    except LocalSlurmError as exc:
        fail(str(exc))
    finally:
        progress.close()
        if cluster is not None:
            cluster.stop()
        if pod.poll() is None:
            pod.send_signal(signal.SIGINT)
            try:
                pod.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pod.kill()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("vpod slurm stopped", flush=True)


@slurm.command("hooks")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--config",
    "config",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEFAULT_CONFIG_PATH,
    show_default=True,
    help="The integration's settings file the hooks read.",
)
def slurm_hooks(directory: Path, config: Path) -> None:
    """Write the bash hooks Slurm runs per job (prolog, epilog, task-prolog) into DIRECTORY.

    They start in a few milliseconds (no Python) and hand the job to
    vpod-slurm-bridge; the Python hooks next to this vpod are their fallback.
    Name them in slurm.conf as printed.
    """

    def body() -> None:
        try:
            load_settings(str(config))
        except SettingsError as exc:
            fail(str(exc), 2)
        try:
            written = write_hooks(directory, config.absolute(), Path(sys.executable).parent)
        except OSError as exc:
            fail(f"cannot write the hooks into {directory}: {exc.strerror}", 2)
        print(f"PrologSlurmctld={written['prolog']}")
        print(f"EpilogSlurmctld={written['epilog']}")
        print(f"TaskProlog={written['task_prolog']}")

    run_cli(body)


@slurm.command("build-spank")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("/usr/local/lib/vpod-slurm"),
    show_default=True,
    help="Where to build vpod_ipus.so (every submit host and compute node needs it).",
)
@click.option(
    "--plugstack",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also name the plugin in this plugstack.conf (kept otherwise; idempotent).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the paths as JSON.")
def slurm_build_spank(out_dir: Path, plugstack: Path | None, as_json: bool) -> None:
    """Build the --ipus SPANK plugin against the installed Slurm's headers.

    Needs Slurm's headers (Debian: libslurm-dev) and a C compiler. Building
    again changes nothing unless the plugin's source or Slurm's headers
    changed. Name the plugin in plugstack.conf (PlugStackConfig in
    slurm.conf) as printed, or with --plugstack.
    """

    def body() -> None:
        try:
            plugin = spank.build(out_dir.absolute())
        except spank.SpankBuildError as exc:
            fail(str(exc), 2)
        except OSError as exc:
            fail(f"cannot build into {out_dir}: {exc.strerror}", 2)
        if plugstack is not None:
            try:
                spank.write_plugstack(plugstack, plugin)
            except OSError as exc:
                fail(f"cannot write {plugstack}: {exc.strerror}", 2)
        if as_json:
            print(
                json.dumps({"plugin": str(plugin), "plugstack_line": spank.plugstack_line(plugin)})
            )
        else:
            print(spank.plugstack_line(plugin))

    run_cli(body)
