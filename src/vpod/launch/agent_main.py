"""``vipu-agent``: run one or many emulated IPU-Machine agents.

Examples::

    vipu-agent                                   # one machine ag1 on 127.1.0.1:8092
    vipu-agent --machines 16 --address-base 127.1.0.1 --register 127.0.0.1:8091
    vipu-agent --machines 4 --single-address 127.0.0.1 --agent-port 9100 \\
               --ipuof-server-port 51000 --ipuof-rdma-port 52000
    vipu-agent --machines 2 --agent-port 0 --ipuof-server-port 0 --ipuof-rdma-port 0
    vipu-agent --register ctl:8091 --tls-ca ca.crt --tls-cert client.crt --tls-key client.key
    vipu-agent --key-file agent.key     # then give the controller the same --key-file
    vipu-agent --enable-fault-injection  # tests and demos: accept InjectFault / ClearFault

Each agent answers only calls carrying its key: a random one per start,
told to the controller when the agent registers, or the one in --key-file.

Prints one line when every agent is serving (``vipu-agent ready: ag1=HOST:PORT
...``) and stops cleanly on SIGINT or SIGTERM.
"""

from __future__ import annotations

from vpod.gc_pause import collector_paused

with collector_paused():  # vpod.gc_pause: start-up builds, it makes next to no garbage
    import asyncio
    import logging
    import os
    import signal
    import sys
    from pathlib import Path

    import click

    from vpod.agent.addressing import (
        DEFAULT_ADDRESS_BASE,
        DEFAULT_AGENT_PORT,
        DEFAULT_RDMA_PORT,
        DEFAULT_SERVER_PORT,
        AddressMode,
        AddressPlan,
        split_host_port,
    )
    from vpod.agent.fabric import FabricError, claim_addresses, release_addresses
    from vpod.agent.fleet import AgentFleet, AgentStartError, FleetSettings
    from vpod.agent.registration import RegistrationTls
    from vpod.agent.trust import read_agent_key
    from vpod.domain.catalog import machine_spec
    from vpod.domain.topology import MAX_MACHINES

    from .daemon_entry import run_daemon
    from .process_logging import configure_logging, log_level_option

log = logging.getLogger("vpod.agent")


async def serve(settings: FleetSettings) -> None:
    """Run the fleet until SIGINT or SIGTERM."""
    fleet = AgentFleet(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        with collector_paused():  # until the ready line: every machine's model is built
            await fleet.start()
        click.echo(fleet.ready_line())
        sys.stdout.flush()
        await stop.wait()
    finally:
        await fleet.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


_PEM = click.Path(exists=True, dir_okay=False, path_type=Path)


def _port(value: int, option: str) -> int:
    if not 0 <= value <= 65535:
        raise click.BadParameter(
            f"{value} is not a port: use 0..65535 (0 = any free port)", param_hint=option
        )
    return value


@click.command(context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option(
    "--machines",
    type=click.IntRange(1, MAX_MACHINES),
    default=1,
    help="Emulated machines in this process (a pod has at most 1,024).",
)
@click.option("--id-prefix", default="ag", help="Agent ids are PREFIX1, PREFIX2, ...")
@click.option(
    "--first-index", type=click.IntRange(0), default=1, help="Number of the first agent id."
)
@click.option(
    "--agent-id", "agent_ids", multiple=True, help="Explicit agent id (repeat; sets the count)."
)
@click.option(
    "--machine-type",
    default="bow2000",
    help="bow2000 (Bow-2000) or m2000 (IPU-M2000).",
)
@click.option("--seed", default="vpod", help="Seed of serial numbers and chip ids.")
@click.option(
    "--address-base",
    default=None,
    help=f"First machine's address; machine i gets base+i [default: {DEFAULT_ADDRESS_BASE}].",
)
@click.option("--single-address", default=None, help="Put every machine on HOST with offset ports.")
@click.option("--ipuof-address-base", default=None, help="IPUoF addresses, when not the agent's.")
@click.option(
    "--ipuof-fabric",
    is_flag=True,
    help="Put IPUoF endpoints on link-local addresses of the vpod-fabric interface, which"
    " tenants' server networks can reach (root; released on exit; docs/security.md).",
)
@click.option("--agent-port", default=DEFAULT_AGENT_PORT, help="Agent gRPC port (0 = any).")
@click.option(
    "--ipuof-server-port",
    default=DEFAULT_SERVER_PORT,
    help="IPUoF server port of device 0.",
)
@click.option(
    "--ipuof-rdma-port",
    default=DEFAULT_RDMA_PORT,
    help="IPUoF RDMA port of device 0.",
)
@click.option("--no-rdma-listen", is_flag=True, help="Report RDMA ports without listening on them.")
@click.option(
    "--register", default=None, metavar="HOST:PORT", help="Register with this controller."
)
@click.option(
    "--advertise-host", default=None, help="Host the controller should dial, if not ours."
)
@click.option(
    "--tls-ca",
    type=_PEM,
    default=None,
    help="Register over TLS: the CA that signed the controller's certificate.",
)
@click.option(
    "--tls-cert",
    type=_PEM,
    default=None,
    help="Client certificate, for a controller with --tls-client-auth (with --tls-key).",
)
@click.option("--tls-key", type=_PEM, default=None, help="Key of --tls-cert.")
@click.option(
    "--token-file",
    type=_PEM,
    default=None,
    help="File holding the agent registration token a --secure controller asks for"
    " (`vipu-admin create agent-token`); or set VIPU_AGENT_TOKEN.",
)
@click.option(
    "--key-file",
    type=_PEM,
    default=None,
    help="File holding the key the controller must present on every call (32+ characters,"
    " e.g. `openssl rand -hex 32`); give the same file to `vipu-admin create agent"
    " --key-file`. Default: a random key per start, sent to the controller with --register.",
)
@click.option(
    "--enable-fault-injection",
    is_flag=True,
    help="Accept InjectFault and ClearFault (tests and demos); refused otherwise.",
)
@log_level_option("warning")
def cli(
    machines: int,
    id_prefix: str,
    first_index: int,
    agent_ids: tuple[str, ...],
    machine_type: str,
    seed: str,
    address_base: str | None,
    single_address: str | None,
    ipuof_address_base: str | None,
    ipuof_fabric: bool,
    agent_port: int,
    ipuof_server_port: int,
    ipuof_rdma_port: int,
    no_rdma_listen: bool,
    register: str | None,
    advertise_host: str | None,
    tls_ca: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    token_file: Path | None,
    key_file: Path | None,
    enable_fault_injection: bool,
    log_level: str,
) -> None:
    """Run emulated IPU-Machine agents (V-IPU agents) until SIGINT or SIGTERM."""
    configure_logging(log_level)
    if address_base and single_address:
        raise click.UsageError("give --address-base or --single-address, not both")
    try:
        kind = machine_spec(machine_type).machine_type
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--machine-type") from None
    if register is not None:
        try:
            split_host_port(register)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--register") from None
    try:
        register_tls = RegistrationTls.from_files(tls_ca, tls_cert, tls_key)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if register_tls is not None and register is None:
        raise click.UsageError("--tls-ca is for registration: give --register HOST:PORT too")
    token = _registration_token(token_file)
    if token and register is None:
        raise click.UsageError("an agent token is for registration: give --register HOST:PORT too")
    try:
        agent_key = read_agent_key(key_file) if key_file is not None else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--key-file") from None
    mode = AddressMode.SHARED if single_address else AddressMode.PER_MACHINE
    if ipuof_fabric and ipuof_address_base:
        raise click.UsageError("give --ipuof-fabric or --ipuof-address-base, not both")
    fabric: list[str] = []
    if ipuof_fabric:
        try:
            fabric = claim_addresses(len(agent_ids) or machines)
        except FabricError as exc:
            raise click.UsageError(f"--ipuof-fabric: {exc}") from None
        ipuof_address_base = fabric[0]
    plan = AddressPlan(
        mode=mode,
        base_host=single_address or address_base or DEFAULT_ADDRESS_BASE,
        agent_port=_port(agent_port, "--agent-port"),
        server_port=_port(ipuof_server_port, "--ipuof-server-port"),
        rdma_port=_port(ipuof_rdma_port, "--ipuof-rdma-port"),
        ipuof_base_host=ipuof_address_base,
    )
    settings = FleetSettings(
        machines=machines,
        id_prefix=id_prefix,
        first_index=first_index,
        agent_ids=agent_ids,
        machine_type=kind,
        seed=seed,
        plan=plan,
        listen_rdma=not no_rdma_listen,
        register=register,
        register_tls=register_tls,
        register_token=token,
        advertise_host=advertise_host,
        agent_key=agent_key,
        fault_injection=enable_fault_injection,
    )
    try:
        plan.addresses(len(settings.ids()))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        asyncio.run(serve(settings))
    except AgentStartError as exc:
        raise click.ClickException(str(exc)) from None
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    finally:
        release_addresses(fabric)


def _registration_token(token_file: Path | None) -> str:
    """The token from ``--token-file`` (first line), else ``VIPU_AGENT_TOKEN``, else empty.

    Not an option value: a token on the command line is visible to every
    user of the machine in the process list.
    """
    if token_file is not None:
        try:
            lines = token_file.read_text().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise click.BadParameter(f"cannot read it: {exc}", param_hint="--token-file") from None
        token = lines[0].strip() if lines else ""
        if not token:
            raise click.BadParameter("the file is empty", param_hint="--token-file")
        return token
    return os.environ.get("VIPU_AGENT_TOKEN", "").strip()


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the exit status."""
    return run_daemon(cli, argv, "vipu-agent")


if __name__ == "__main__":
    sys.exit(main())
