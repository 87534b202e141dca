"""``vpod-gpu-agent``: register a GPU host with the controller and report its GPUs' health.

Examples::

    # a real host: GPUs through NVML (the NVIDIA driver and nvidia-ml-py)
    vpod-gpu-agent --controller https://ctl:8080 --tls-ca ca.crt --token-file agent.token \\
                   --host-id gpu-node-1 --fabric ib-1
    vpod-gpu-agent --inventory --json            # what NVML sees, then exit
    # emulated GPUs (no driver): stand-in device files under --device-dir
    vpod-gpu-agent --backend emulated --emulated-model h100-80 --gpus 8 \\
                   --device-dir /var/lib/vpod/cloud/gpu-devices/bm-1 --host-id bm-1 \\
                   --controller http://127.0.0.1:8080
    # many emulated hosts in one process (what `vpod up` runs)
    vpod-gpu-agent --emulate-hosts hosts.json --device-dir DIR --controller URL

Prints ``vpod-gpu-agent ready: HOST (N GPUs) ...`` once every host's GPUs are
found, registers each host (retrying until the controller answers), then
sends a sample of every GPU every ``--interval`` seconds until SIGINT or
SIGTERM. See docs/gpu.md.
"""

from __future__ import annotations

from vpod.gc_pause import collector_paused

with collector_paused():  # vpod.gc_pause: start-up builds, it makes next to no garbage
    import asyncio
    import contextlib
    import json
    import logging
    import signal
    import socket
    import sys
    from pathlib import Path
    from typing import Any

    import click

    from vpod.agent.gpu.backend import GpuBackend, GpuBackendError
    from vpod.agent.gpu.emulated import MODELS, EmulatedNvml
    from vpod.agent.gpu.health import HealthLimits, assess
    from vpod.agent.gpu.reporter import (
        BatchingLink,
        ControllerLink,
        GpuHostAgent,
        HostIdentity,
        Link,
    )
    from vpod.client.command_line import FiniteFloatRange
    from vpod.import_hooks import httpcore_without_trio

    from .agent_main import _registration_token
    from .daemon_entry import run_daemon
    from .process_logging import configure_logging, log_level_option

log = logging.getLogger("vpod.agent.gpu")
ROLES = ("baremetal", "hypervisor")


def _emulated_hosts(path: Path) -> list[dict[str, Any]]:
    """``[{"host_id", "model", "gpus", "role", "fabric"}, ...]`` from a JSON file."""
    try:
        hosts = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise click.BadParameter(f"cannot read it: {exc}", param_hint="--emulate-hosts") from None
    if not isinstance(hosts, list) or not all(
        isinstance(h, dict) and isinstance(h.get("host_id"), str) for h in hosts
    ):
        raise click.BadParameter(
            'a JSON list of {"host_id": ..., "model": ..., "gpus": ...} objects',
            param_hint="--emulate-hosts",
        )
    return hosts


async def _open_backend(
    backend: str, host_id: str, model: str, gpus: int, device_dir: Path | None
) -> GpuBackend:
    if backend == "nvml":
        from vpod.agent.gpu.nvml import NvmlBackend

        return await NvmlBackend.open()
    if device_dir is None:
        raise click.UsageError(
            "the emulated backend needs --device-dir (where its stand-in device files go)"
        )
    try:
        return EmulatedNvml(host_id, model, gpus, device_dir)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


async def _print_inventory(backend: GpuBackend, as_json: bool, limits: HealthLimits) -> None:
    inventory = await backend.inventory()
    samples = [assess(r, limits) for r in await backend.sample()]
    if as_json:
        click.echo(
            json.dumps(
                {"inventory": inventory.to_json(), "samples": [s.to_json() for s in samples]},
                indent=2,
            )
        )
        return
    click.echo(
        f"{inventory.hostname}: {len(inventory.gpus)} GPU(s), driver {inventory.driver_version},"
        f" CUDA {inventory.cuda_version} ({inventory.backend})"
    )
    for gpu, sample in zip(inventory.gpus, samples, strict=False):
        r = sample.reading
        state = "healthy" if sample.healthy else "UNHEALTHY: " + "; ".join(sample.problems)
        click.echo(
            f"  GPU {gpu.index} {gpu.uuid} {gpu.name} {gpu.memory_mib} MiB bus {gpu.pci_bus_id}"
            f" MIG {'n/a' if gpu.mig_mode is None else ('on' if gpu.mig_mode else 'off')}"
            f" NVLinks {len(gpu.nvlink_peers)}: {r.utilization_pct}% {r.temperature_c} °C"
            f" {r.power_w:.0f} W, {state}"
        )


async def _serve(agents: list[GpuHostAgent], links: list[ControllerLink]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    described = []
    for agent in agents:
        inventory = await agent.backend.inventory()
        described.append(f"{agent.identity.host_id} ({len(inventory.gpus)} GPUs)")
    click.echo("vpod-gpu-agent ready: " + " ".join(described))
    sys.stdout.flush()
    tasks = [asyncio.create_task(a.run(), name=a.identity.host_id) for a in agents]
    try:
        await stop.wait()
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for agent in agents:
            await agent.backend.close()
        for link in links:
            await link.close()


@click.command(context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option(
    "--controller",
    metavar="URL",
    help="The controller's HTTP API, e.g. http://ctl:8080 (its cloud API registers GPU hosts).",
)
@click.option(
    "--token-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="File holding the agent token (`vipu-admin create agent-token`); or VIPU_AGENT_TOKEN.",
)
@click.option(
    "--tls-ca",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="CA of the controller's HTTPS certificate.",
)
@click.option(
    "--host-id",
    default=lambda: socket.gethostname().split(".")[0],
    show_default="the host name",
    help="The host's id in the cloud.",
)
@click.option(
    "--role",
    type=click.Choice(ROLES),
    default="baremetal",
    help="baremetal: servers take the whole host; hypervisor: GPU VMs take slices.",
)
@click.option(
    "--fabric",
    default=None,
    help="InfiniBand fabric the host is cabled into (IB flavors keep a cluster in one).",
)
@click.option(
    "--model",
    default=None,
    help="The cloud's host model (h100-80, a100-80, a100-40, l40s-48); default: from the GPUs.",
)
@click.option(
    "--interval",
    type=FiniteFloatRange(0.1, 300),
    default=2.0,
    help="Seconds between samples.",
)
@click.option(
    "--max-temperature",
    type=click.IntRange(30, 150),
    default=90,
    help="°C at which a GPU counts as unhealthy when it does not report its slowdown point.",
)
@click.option(
    "--backend",
    type=click.Choice(("nvml", "emulated")),
    default="nvml",
    help="nvml: real GPUs; emulated: stand-ins (no driver).",
)
@click.option(
    "--gpus",
    type=click.IntRange(1, 64),
    default=8,
    help="GPUs of an emulated host.",
)
@click.option(
    "--emulated-model",
    type=click.Choice(tuple(MODELS)),
    default="h100-80",
    help="Model of an emulated host's GPUs.",
)
@click.option(
    "--device-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where emulated hosts' stand-in device files go (--emulate-hosts: a directory per host).",
)
@click.option(
    "--emulate-hosts",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help='Run many emulated hosts: a JSON list of {"host_id", "model", "gpus", "role", "fabric"}.',
)
@click.option(
    "--inventory",
    "show_inventory",
    is_flag=True,
    help="Print what the backend finds (and one sample), then exit.",
)
@click.option("--json", "as_json", is_flag=True, help="With --inventory: JSON.")
@log_level_option("info")
def cli(
    controller: str | None,
    token_file: Path | None,
    tls_ca: Path | None,
    host_id: str,
    role: str,
    fabric: str | None,
    model: str | None,
    interval: float,
    max_temperature: int,
    backend: str,
    gpus: int,
    emulated_model: str,
    device_dir: Path | None,
    emulate_hosts: Path | None,
    show_inventory: bool,
    as_json: bool,
    log_level: str,
) -> None:
    """Run the GPU host agent: find the host's GPUs through NVML, register the host with the
    controller and report every GPU's health and telemetry until SIGINT or SIGTERM."""
    configure_logging(log_level)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per sample otherwise
    limits = HealthLimits(max_temperature_c=max_temperature)
    if as_json and not show_inventory:
        raise click.UsageError("--json is for --inventory")
    if show_inventory:
        asyncio.run(
            _inventory_main(backend, host_id, emulated_model, gpus, device_dir, as_json, limits)
        )
        return
    if not controller:
        raise click.UsageError(
            "give --controller URL: the controller's HTTP API (e.g. http://ctl:8080)"
        )
    if not controller.startswith(("http://", "https://")):
        raise click.BadParameter("an http:// or https:// URL", param_hint="--controller")
    token = _registration_token(token_file)
    hosts = (
        _emulated_hosts(emulate_hosts)
        if emulate_hosts is not None
        else [
            {
                "host_id": host_id,
                "role": role,
                "fabric": fabric,
                "model": model or emulated_model,
                "gpus": gpus,
            }
        ]
    )
    if emulate_hosts is not None:
        backend = "emulated"
        if device_dir is None:
            raise click.UsageError("--emulate-hosts needs --device-dir")
    verify: str | bool = str(tls_ca) if tls_ca is not None else True
    try:
        asyncio.run(
            _run(
                hosts,
                backend,
                controller,
                token,
                verify,
                device_dir,
                emulate_hosts is not None,
                model,
                interval,
                limits,
            )
        )
    except GpuBackendError as exc:
        raise click.ClickException(str(exc)) from None


async def _inventory_main(
    backend: str,
    host_id: str,
    model: str,
    gpus: int,
    device_dir: Path | None,
    as_json: bool,
    limits: HealthLimits,
) -> None:
    try:
        opened = await _open_backend(backend, host_id, model, gpus, device_dir)
    except GpuBackendError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        await _print_inventory(opened, as_json, limits)
    finally:
        await opened.close()


async def _run(
    hosts: list[dict[str, Any]],
    backend: str,
    controller: str,
    token: str,
    verify: str | bool,
    device_dir: Path | None,
    many: bool,
    model: str | None,
    interval: float,
    limits: HealthLimits,
) -> None:
    agents: list[GpuHostAgent] = []
    links: list[ControllerLink] = []
    # The hosts of one process share a connection, and their samples go in one request.
    shared = ControllerLink(controller, token, verify=verify) if len(hosts) > 1 else None
    batching = BatchingLink(shared, len(hosts)) if shared is not None else None
    if shared is not None:
        links.append(shared)
    for host in hosts:
        host_dir = device_dir / host["host_id"] if many and device_dir is not None else device_dir
        opened = await _open_backend(
            backend,
            host["host_id"],
            str(host.get("model") or "h100-80"),
            int(host.get("gpus", 8)),
            host_dir,
        )
        identity = HostIdentity(
            host_id=host["host_id"],
            role=str(host.get("role") or "baremetal"),
            fabric=host.get("fabric") or None,
            model=(host.get("model") if many else model),
        )
        link: Link
        if batching is not None:
            link = batching
        else:
            link = ControllerLink(controller, token, verify=verify)
            links.append(link)
        agents.append(GpuHostAgent(opened, identity, link, interval_s=interval, limits=limits))
    await _serve(agents, links)


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the exit status."""
    httpcore_without_trio()  # it runs httpx under asyncio only
    return run_daemon(cli, argv, "vpod-gpu-agent")


if __name__ == "__main__":
    sys.exit(main())
