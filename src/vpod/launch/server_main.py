"""``vipu-server``: run the V-IPU controller (user gRPC API, admin gRPC API, HTTP API).

What only serving needs (the controller's server and transports, FastAPI,
uvicorn, the web console; the cloud when it is served) is imported by
:func:`_run`: ``--init``, ``--tls-init``, ``--help`` and a refused option
exit without paying for it (two thirds of a serving start's imports), and
``vpod up`` and the tests run ``vipu-server --init`` often.
"""

from __future__ import annotations

from vpod.client.command_line import BoundedCommand, FiniteFloatRange
from vpod.gc_pause import CollectorPause, collector_paused

with collector_paused():  # vpod.gc_pause: start-up builds, it makes next to no garbage
    import asyncio
    import signal
    import sys
    from collections.abc import Callable, Mapping
    from dataclasses import replace
    from pathlib import Path
    from typing import TYPE_CHECKING, Any, TypeVar

    import click

    from vpod.cli import server_options
    from vpod.cli.errors import run_cli
    from vpod.controller.settings import Settings
    from vpod.domain.errors import InvalidSpec
    from vpod.domain.host_networks import DEFAULT_TRUSTED_HOSTS, normalise_hosts, split_hosts

    from .interfaces import resolve_interfaces
    from .parent_death import die_with_parent
    from .process_logging import configure_logging, log_file_options, log_level_option
    from .server_security import (
        SecurityOptions,
        check_options,
        prepare_serving,
        run_setup,
        security_options,
    )

if TYPE_CHECKING:
    from vpod.controller.server import ExtensionFactory, RunningServer
    from vpod.controller.tls import ServerTls

F = TypeVar("F", bound=Callable[..., Any])

_DEFAULTS = Settings()

_AGENT_TIMEOUT_HELP = "Deadline in seconds for one call to one agent."
_OPERATION_DEADLINE_HELP = (
    "Seconds after which an unfinished create, remove or reset with no owner lease (written"
    " before owner leases existed) counts as abandoned and the leader rolls it back or finishes"
    " it."
)
_OWNER_LEASE_TTL_HELP = (
    "Seconds a controller's owner lease outlives its last renewal (each second): the leader"
    " recovers a create, remove or reset only once its controller's lease expired."
)
_RECOVERY_INTERVAL_HELP = (
    "Seconds between the leader's rounds of reconciling agents and finishing abandoned operations."
)


def _timing(flag: str, field: str, low: float, high: float, help: str) -> Callable[[F], F]:
    """An option setting one of the controller's timings in seconds; Settings has its default."""
    default = getattr(_DEFAULTS, field)
    return click.option(
        flag, type=FiniteFloatRange(low, high), default=default, show_default=True, help=help
    )


@click.command(
    cls=BoundedCommand,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="Examples: vipu-server --data-dir /var/lib/vpod --port 8090 --admin-port 8091;"
    " secure with mutual TLS: vipu-server --tls-init --init --secure --tls-client-auth, then"
    " vipu-server --secure --tls-client-auth (docs/security.md).",
)
@server_options.data_dir_option("Directory for the SQLite store (and TLS material).")
@click.option(
    "--database-url",
    default="",
    envvar="VPOD_DATABASE_URL",
    help="SQLAlchemy URL of the store, e.g. postgresql+psycopg://u:p@db/vpod "
    "(default: SQLite in --data-dir).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address of the user API.")
@server_options.user_port_option(
    "Port of the V-IPU user API (gRPC); 0 picks a free one.", "user_port"
)
@click.option("--admin-host", default=None, help="Address of the admin API (default: --host).")
@server_options.admin_port_option("Port of the admin API (gRPC).")
@click.option(
    "-a",
    "--autodiscovery-listen-interfaces",
    "autodiscovery",
    default="",
    metavar="IF[,IF...]",
    help="Network interfaces (names such as eth1, or addresses) on which agents may also"
    " announce themselves, on the admin port; the admin API itself stays on --admin-host.",
)
@click.option("--http-host", default=None, help="Address of the HTTP API (default: --host).")
@server_options.http_port_option("Port of the REST API, /healthz, /readyz and /metrics.")
@click.option("--secure", is_flag=True, help="Authenticate every call (user id + access key).")
@security_options
@_timing("--agent-timeout", "agent_timeout_s", 0.1, 600, _AGENT_TIMEOUT_HELP)
@_timing("--operation-deadline", "operation_deadline_s", 1, 3600, _OPERATION_DEADLINE_HELP)
@_timing("--owner-lease-ttl", "owner_lease_ttl_s", 2, 3600, _OWNER_LEASE_TTL_HELP)
@_timing("--recovery-interval", "recovery_interval_s", 0.5, 3600, _RECOVERY_INTERVAL_HELP)
@server_options.cloud_option(
    "Serve the cloud layer too (/api/cloud/v1; settings in DATA_DIR/cloud.toml)."
)
@server_options.tenant_host_options
@click.option(
    "--max-connections",
    type=click.IntRange(-1, 1_000_000),
    default=-1,
    help="Connections each listener holds (-1, the default: shared out of the"
    " file-descriptor limit; 0: no cap). Idle and slow clients are timed out either way.",
)
@click.option(
    "--trusted-hosts",
    default=",".join(DEFAULT_TRUSTED_HOSTS),
    show_default=True,
    metavar="CIDR[,CIDR...]",
    help="Hosts whose applications may attach over IPUoF to partitions of an allocation"
    " whose own hosts were never set (`vipu-admin create allocation --hosts`).",
)
@click.option(
    "--metrics-token-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="File holding the bearer token /metrics accepts besides an administrator's"
    " credentials (`vpod up` writes DATA_DIR/metrics.token). Without --secure /metrics is"
    " open.",
)
@log_level_option("info")
@log_file_options
def main(
    data_dir: Path,
    database_url: str,
    host: str,
    user_port: int,
    admin_host: str | None,
    admin_port: int,
    autodiscovery: str,
    http_host: str | None,
    http_port: int,
    secure: bool,
    agent_timeout: float,
    operation_deadline: float,
    owner_lease_ttl: float,
    recovery_interval: float,
    cloud: bool,
    unsafe_shared_host: bool,
    ssh_direct_ports: str | None,
    ssh_direct_bind: str | None,
    max_connections: int,
    trusted_hosts: str,
    metrics_token_file: Path | None,
    log_level: str,
    log_file: Path | None,
    log_max_bytes: int,
    log_backups: int,
    security: SecurityOptions,
) -> None:
    """Run the V-IPU controller until interrupted (Ctrl-C or SIGTERM stop it cleanly)."""
    die_with_parent()
    configure_logging(log_level, log_file, log_max_bytes, log_backups)
    entries = [e.strip() for e in autodiscovery.split(",") if e.strip()]
    try:
        discovery = resolve_interfaces(entries)
    except ValueError as exc:
        print(f"error: -a/--autodiscovery-listen-interfaces: {exc}", file=sys.stderr)
        sys.exit(2)
    try:
        trusted = normalise_hosts(split_hosts(trusted_hosts))
    except InvalidSpec as exc:
        print(f"error: --trusted-hosts: {exc}", file=sys.stderr)
        sys.exit(2)
    settings = Settings(
        data_dir=data_dir,
        database_url=database_url,
        host=host,
        user_port=user_port,
        admin_host=admin_host or host,
        admin_port=admin_port,
        autodiscovery_addresses=discovery,
        http_host=http_host or host,
        http_port=http_port,
        secure=secure,
        agent_timeout_s=agent_timeout,
        operation_deadline_s=operation_deadline,
        owner_lease_ttl_s=owner_lease_ttl,
        recovery_interval_s=recovery_interval,
        max_connections=max_connections,
        trusted_hosts=trusted,
        metrics_token_file=metrics_token_file,
    )
    overrides: dict[str, Any] = {"unsafe_shared_host": True} if unsafe_shared_host else {}
    if ssh_direct_ports is not None or ssh_direct_bind is not None:
        overrides |= _direct_ssh_overrides(ssh_direct_ports, ssh_direct_bind)
    run_cli(lambda: _start(settings, security, cloud, overrides))


def _direct_ssh_overrides(ports: str | None, bind: str | None) -> dict[str, str]:
    """The cloud settings ``--ssh-direct-ports``/``--ssh-direct-bind`` set, checked (exit 2)."""
    # The cloud layer is imported only where it is used: see _run.
    from vpod.cloud.direct_ports import parse_port_range
    from vpod.cloud.model.errors import CloudError
    from vpod.cloud.settings import check_bind_address

    overrides: dict[str, str] = {}
    try:
        if ports is not None:
            parse_port_range(ports, source="--ssh-direct-ports")
            overrides["ssh_direct_ports"] = ports
        if bind is not None:
            check_bind_address(bind, source="--ssh-direct-bind")
            overrides["ssh_direct_bind"] = bind
    except CloudError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    return overrides


def _start(
    settings: Settings,
    security: SecurityOptions,
    cloud: bool = True,
    overrides: Mapping[str, Any] | None = None,
) -> None:
    check_options(settings, security)
    if security.setup_only:
        with collector_paused():  # it imports and migrates the store: vpod.gc_pause
            run_setup(settings, security)
        return
    tls = prepare_serving(settings, security)
    asyncio.run(_run(settings, tls, cloud, overrides or {}))


async def _run(
    settings: Settings,
    tls: ServerTls | None,
    cloud: bool = True,
    cloud_overrides: Mapping[str, Any] | None = None,
) -> None:
    # Paused until the ready line (vpod.gc_pause): the imports, the routes, the controller.
    with collector_paused() as start_up:
        await _serve(settings, tls, cloud, cloud_overrides, start_up)


async def _serve(
    settings: Settings,
    tls: ServerTls | None,
    cloud: bool,
    cloud_overrides: Mapping[str, Any] | None,
    start_up: CollectorPause,
) -> None:
    from vpod.controller.server import serve  # see the module's docstring
    from vpod.web import WebConsole

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    scheme = "https" if tls is not None else "http"

    cloud_server = None
    if cloud:
        # Imported only when served: building the cloud API's routes is a quarter of a
        # controller's start-up CPU, which a --no-cloud controller (open mode) never needs;
        # its settings and their checks (drivers, pydantic) another tenth.
        from vpod.cloud.extension import CloudServer
        from vpod.cloud.model.errors import InvalidArgument as CloudInvalidArgument
        from vpod.cloud.settings import load_settings

        cloud_settings = load_settings(settings.data_dir)
        if cloud_overrides:  # the command line's, over cloud.toml's
            cloud_settings = replace(cloud_settings, **cloud_overrides)
            if cloud_settings.ssh_direct_ports and cloud_settings.compute_driver != "local":
                raise CloudInvalidArgument(
                    "--ssh-direct-ports forwards to the local compute driver's sshd; cloud.toml"
                    f" chooses {cloud_settings.compute_driver}: leave it out"
                )
        cloud_server = CloudServer(cloud_settings)

    def ready(running: RunningServer) -> None:
        start_up.end()
        if cloud_server is not None:
            cloud_server.listening(running)
        print(
            f"vipu-server ready: user API {settings.host}:{running.user_port},"
            f" admin API {settings.admin_host}:{running.admin_port},"
            f" HTTP {scheme}://{settings.http_host}:{running.http_port}",
            flush=True,
        )

    extensions: list[ExtensionFactory] = [WebConsole()]
    if cloud_server is not None:
        extensions.append(cloud_server)
    await serve(settings, ready=ready, stop=stop, tls=tls, extensions=extensions)


if __name__ == "__main__":
    main()
