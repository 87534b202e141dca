"""``vpod``: the product's own command line (``vpod up``, ``vpod sim``, ...)."""

from __future__ import annotations

import importlib
from pathlib import Path

import click

from vpod import __version__
from vpod.client.command_line import BoundedCommand
from vpod.import_hooks import httpcore_without_trio

from . import server_options
from .cloud_commands import CLOUD_COMMAND_MODULES, load_command
from .errors import run_cli
from .short_help import CONTEXT, FittingGroup, fit

LAZY_COMMANDS: dict[str, str] = {
    "sim": "sim_command",
    "slurm": "vpod.launch.slurm_up",
    **CLOUD_COMMAND_MODULES,
}
"""Commands loaded when named: a CLI's start-up is part of every command it runs."""


class LazyGroup(BoundedCommand, FittingGroup):
    """A group whose commands (but ``up``) are imported only when used or listed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = LAZY_COMMANDS.get(cmd_name)
        if module is not None:
            return fit(load_command(module, cmd_name))
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings=CONTEXT)
@click.version_option(__version__, prog_name="vpod")
def cli() -> None:
    """vpod: an open control plane for AI accelerator pods.

    \b
    Start the embedded default (controller on SQLite + an emulated Bow Pod64 for V-IPU users
    and a Pod16 for tenants' vPODs, authenticated):
      vpod up
    Replay a job trace through the placement engine:
      vpod sim trace.csv --ipus 256
    """


@cli.command(
    "up",
    epilog="Example: vpod up --data-dir ./vpod-data --pod pod256 --port 9090 --admin-port 9091"
    " --http-port 9080",
)
@server_options.data_dir_option(
    "Where the store, logs and vipu-cli.hcl live; reuse it to get the same pod back.",
    envvar="VPOD_DATA_DIR",
)
@click.option(
    "--pod",
    "pod_shape",
    default=None,
    metavar="SHAPE",
    help="pod16, pod64 (default), pod128, pod256, pod1024 or pod4096; prefix m2000- for IPU-M2000"
    " machines (bow- is the default).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address the controller's APIs listen on.",
)
@server_options.user_port_option("V-IPU user API port (gRPC).")
@server_options.admin_port_option("Admin API port (gRPC).")
@server_options.http_port_option("REST API, /healthz, /readyz and /metrics port.")
@click.option(
    "--address-base",
    default=None,
    metavar="IPV4",
    help="First loopback address of the emulated machines (default: a free 127.N.0.1).",
)
@click.option(
    "--secure/--open",
    "secure",
    default=None,
    help="--secure (the default) authenticates every call: vipu-cli.hcl carries the default"
    " user's key, admin.vipu-cli.hcl the administrator's, and the cloud isolates tenants."
    " --open runs the spec's open V-IPU mode (no authentication, no cloud).",
)
@click.option(
    "--switch-mode",
    is_flag=True,
    help="Change the mode a data directory was set up with to the one asked for (with --open,"
    " or without it to turn authentication on); its pod, partitions and users stay.",
)
@server_options.cloud_option(
    "Serve the cloud API with its own emulated pod, GPU hosts and a default project."
)
@click.option(
    "--cloud-pod",
    default=None,
    metavar="SHAPE",
    help="Shape of the tenants' pod (default pod16; none for no vPOD capacity); kept from the"
    " first run.",
)
@server_options.tenant_host_options
def up(
    data_dir: Path,
    pod_shape: str | None,
    host: str,
    port: int,
    admin_port: int,
    http_port: int,
    address_base: str | None,
    secure: bool | None,
    switch_mode: bool,
    cloud: bool,
    cloud_pod: str | None,
    unsafe_shared_host: bool,
    ssh_direct_ports: str | None,
    ssh_direct_bind: str | None,
) -> None:
    """Run a controller on SQLite and emulated pods until Ctrl-C (secure unless --open)."""
    # The launcher is the server side (vpod.launch): named here, imported only when run.
    launcher = importlib.import_module("vpod.launch.up")
    options = launcher.UpOptions(
        data_dir=data_dir,
        pod=pod_shape,
        host=host,
        port=port,
        admin_port=admin_port,
        http_port=http_port,
        address_base=address_base,
        mode=launcher.mode_of(secure),
        switch_mode=switch_mode,
        cloud=cloud,
        cloud_pod=cloud_pod,
        unsafe_shared_host=unsafe_shared_host,
        ssh_direct_ports=ssh_direct_ports,
        ssh_direct_bind=ssh_direct_bind,
    )
    run_cli(lambda: launcher.run_up(options))


def main() -> None:
    httpcore_without_trio()  # no vpod command runs httpx under trio
    cli()
