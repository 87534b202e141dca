"""``vpod-run``: start the instances of a data-parallel application on one partition, as
Poplar's ``poprun`` does, on this host or over ``ssh`` on several.

1. Find or make the partition: ``--vipu-partition P`` is reused when it
   exists (it must hold R×K IPUs); otherwise a partition of R×K IPUs with R
   replicas (and ``--num-ilds`` GCDs, one per IPU-Link domain) is created,
   and it is removed again at the end, whatever the end is (success,
   failure, Ctrl-C, SIGTERM).
2. Wait until it is ACTIVE (``--vipu-server-timeout``).
3. Start ``--num-instances`` I instances of the command. Instance i
   gets R/I consecutive replicas: ``POPDIST_REPLICA_INDEX_OFFSET`` = i·R/I,
   ``POPDIST_NUM_LOCAL_REPLICAS`` = R/I, ``POPDIST_LOCAL_INSTANCE_INDEX`` = i,
   ``POPDIST_NUM_TOTAL_REPLICAS`` = R, ``POPDIST_NUM_IPUS_PER_REPLICA`` = K,
   ``POPLAR_TARGET_OPTIONS`` (JSON), and ``IPUOF_VIPU_API_HOST``/``_PORT``/
   ``_PARTITION_ID``/``_TIMEOUT`` (``_GCD_ID`` when the partition has several GCDs).
   With ``--host``/``--hostfile`` the instances are spread over the hosts
   (:mod:`.hosts`); those of other hosts start over ``ssh`` with these
   variables (:mod:`.remote`), which are checked reachable first.
4. Prefix every line an instance prints with ``[i]``; forward Ctrl-C and
   SIGTERM to every instance, remote ones too; when one instance fails, stop
   the others.
5. Exit with the status of the first instance that failed on its own (130
   after Ctrl-C); 2 for a usage or configuration mistake (an unreachable
   host included), 1 when the partition cannot be had.
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import shlex
import signal
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import click

from vpod.client import (
    AlreadyExists,
    InvalidArgument,
    NotFound,
    Partition,
    UserClient,
    VpodError,
)
from vpod.client.command_line import BoundedCommand
from vpod.domain.excerpts import excerpt
from vpod.domain.topology import MAX_POD_IPUS

from .hosts import Host, HostError, is_local, parse_host_list, parse_hostfile, spread
from .instances import Instances
from .partition_update import holders, shape_differences
from .remote import remote_command, ssh_argv, unreachable
from .render import fail

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
REPLICA_SIZES = (1, 2, 4)


@dataclass(frozen=True, slots=True)
class RunShape:
    replicas: int
    ipus_per_replica: int
    instances: int
    ilds: int

    @property
    def size(self) -> int:
        return self.replicas * self.ipus_per_replica

    @property
    def local_replicas(self) -> int:
        return self.replicas // self.instances

    def check(self) -> None:
        """Raise ``click.UsageError`` for a shape no partition can run."""
        if self.ipus_per_replica not in REPLICA_SIZES:
            raise click.UsageError("--ipus-per-replica must be 1, 2 or 4 (a replica's IPUs)")
        if self.size > MAX_POD_IPUS:
            raise click.UsageError(
                f"--num-replicas {excerpt(self.replicas)} of {self.ipus_per_replica} IPU(s)"
                f" need {excerpt(self.size)} IPUs: a partition has at most {MAX_POD_IPUS}"
            )
        if self.replicas % self.instances:
            raise click.UsageError(
                f"--num-instances {self.instances} must divide --num-replicas {self.replicas}:"
                " every instance runs the same number of replicas"
            )
        if self.ilds > 1 and self.instances % self.ilds:
            raise click.UsageError(
                f"--num-instances {self.instances} must be a multiple of --num-ilds {self.ilds}:"
                " an instance's IPUs stay in one IPU-Link domain"
            )


def instance_environment(
    shape: RunShape,
    index: int,
    *,
    partition_id: str,
    api_host: str,
    api_port: int,
    timeout_s: int,
) -> dict[str, str]:
    """The variables instance ``index`` runs with (added to the launcher's environment)."""
    offset = index * shape.local_replicas
    env = {
        "IPUOF_VIPU_API_HOST": api_host,
        "IPUOF_VIPU_API_PORT": str(api_port),
        "IPUOF_VIPU_API_PARTITION_ID": partition_id,
        "IPUOF_VIPU_API_TIMEOUT": str(timeout_s),
        "POPDIST_NUM_TOTAL_REPLICAS": str(shape.replicas),
        "POPDIST_NUM_IPUS_PER_REPLICA": str(shape.ipus_per_replica),
        "POPDIST_NUM_LOCAL_REPLICAS": str(shape.local_replicas),
        "POPDIST_REPLICA_INDEX_OFFSET": str(offset),
        "POPDIST_LOCAL_INSTANCE_INDEX": str(index),
        "POPDIST_NUM_INSTANCES": str(shape.instances),
        "POPLAR_TARGET_OPTIONS": json.dumps(
            {
                "ipuLinkDomainSize": str(shape.size // shape.ilds),
                "gatewayMode": "true" if shape.ilds > 1 else "false",
                "instanceSize": str(shape.local_replicas * shape.ipus_per_replica),
            }
        ),
    }
    if shape.ilds > 1:
        gcd_size = shape.size // shape.ilds
        env["IPUOF_VIPU_API_GCD_ID"] = str(offset * shape.ipus_per_replica // gcd_size)
    return env


@click.command(cls=BoundedCommand, context_settings={**CONTEXT, "allow_interspersed_args": False})
@click.option(
    "--num-replicas", type=click.IntRange(1), required=True, metavar="R",
    help="Replicas of the model in all (POPDIST_NUM_TOTAL_REPLICAS).",
)  # fmt: skip
@click.option(
    "--ipus-per-replica", type=click.IntRange(1), required=True, metavar="K",
    help="IPUs of one replica: 1, 2 or 4.",
)  # fmt: skip
@click.option(
    "--num-instances", type=click.IntRange(1), default=1, show_default=True, metavar="I",
    help="Processes to start; each runs R/I replicas.",
)  # fmt: skip
@click.option("--vipu-partition", metavar="P", help="Use (or create and remove) this partition.")
@click.option(
    "--num-ilds", type=click.IntRange(1), default=1, show_default=True, metavar="D",
    help="IPU-Link domains a created partition spans (one GCD each).",
)  # fmt: skip
@click.option("--vipu-allocation", metavar="A", help="Create the partition in this allocation.")
@click.option("--vipu-server-host", metavar="HOST", help="Default: api-host of vipu-cli.hcl.")
@click.option(
    "--vipu-server-port", type=click.IntRange(1, 65535), metavar="PORT",
    help="Default: api-port of vipu-cli.hcl (8090).",
)  # fmt: skip
@click.option(
    "--vipu-server-timeout", type=click.IntRange(1), default=120, show_default=True,
    metavar="S", help="Seconds to wait for the partition to be ACTIVE.",
)  # fmt: skip
@click.option(
    "--remove-partition/--keep-partition", default=True, show_default=True,
    help="Remove a partition this run created when it ends.",
)  # fmt: skip
@click.option(
    "--update-partition", type=click.Choice(["yes", "no"]), default="no", show_default=True,
    help="yes: re-create --vipu-partition with this run's shape when it differs and is not in"
    " use (refused, saying who holds it, when it is).",
)  # fmt: skip
@click.option(
    "--host", "host_lists", multiple=True, metavar="H1,H2,...",
    help="Hosts to spread the instances over (host:N gives it N slots); this one when not"
    " given. Others are reached with ssh; localhost and this host's name start locally.",
)  # fmt: skip
@click.option(
    "--hostfile", type=click.Path(exists=True, dir_okay=False, path_type=Path), metavar="FILE",
    help="Hosts, one a line, 'host [slots=N]', '#' comments (an MPI hostfile).",
)  # fmt: skip
@click.option(
    "--ssh-command", default="ssh", show_default=True, metavar="CMD",
    help="How to reach another host (split as a shell would, e.g. 'ssh -F ~/.ssh/pod.config').",
)  # fmt: skip
@click.option(
    "--ssh-option", "ssh_options", multiple=True, metavar="OPT",
    help="An ssh -o option, e.g. 'Port=2222' (repeatable; yours win over vpod-run's).",
)  # fmt: skip
@click.option(
    "-x", "--export", "exports", multiple=True, metavar="NAME[=VALUE]",
    help="Also give instances on other hosts this variable (this one's value unless given);"
    " local instances have the whole environment.",
)  # fmt: skip
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def main(
    num_replicas: int,
    ipus_per_replica: int,
    num_instances: int,
    vipu_partition: str | None,
    num_ilds: int,
    vipu_allocation: str | None,
    vipu_server_host: str | None,
    vipu_server_port: int | None,
    vipu_server_timeout: int,
    remove_partition: bool,
    update_partition: str,
    host_lists: tuple[str, ...],
    hostfile: Path | None,
    ssh_command: str,
    ssh_options: tuple[str, ...],
    exports: tuple[str, ...],
    command: tuple[str, ...],
) -> None:
    """Run COMMAND as I instances over one partition of R×K IPUs, here or on several hosts.

    Credentials and the controller's address come from vipu-cli.hcl and
    VIPU_CLI_* as for vipu; --vipu-server-host/--vipu-server-port override them.
    Instances on other hosts start over ssh (batch mode: keys or an agent, no
    prompts) and dial the controller at the same address.

    \b
    Examples:
      vpod-run --num-replicas 8 --ipus-per-replica 2 --num-instances 4 -- vpod-workload --steps 50
      vpod-run --num-replicas 4 --ipus-per-replica 1 --vipu-partition p1 -- python train.py
      vpod-run --num-replicas 4 --ipus-per-replica 1 --num-instances 2 \\
          --host poplar-1,poplar-2 -- vpod-workload --steps 50
    """
    shape = RunShape(num_replicas, ipus_per_replica, num_instances, num_ilds)
    shape.check()
    where = _instance_hosts(host_lists, hostfile, num_instances)
    ssh = _ssh_command(ssh_command)
    exported = _exports(exports)
    remote_hosts = list(dict.fromkeys(h for h in where if h is not None))
    if host_lists or hostfile is not None:
        click.echo(f"vpod-run: {_plan(where)}", err=True)
    problems = unreachable(ssh, ssh_options, remote_hosts)
    if problems:
        host, why = next(iter(problems.items()))
        fail(
            f"cannot reach host {host} with {ssh[0]}: {why} (check the name, that it runs"
            " sshd and accepts your key; --ssh-command and --ssh-option change how it is"
            " reached)",
            2,
        )
    try:
        client = UserClient.from_config(api_host=vipu_server_host, api_port=vipu_server_port)
    except VpodError as exc:
        fail(str(exc), 2)
    partition_id = vipu_partition or f"vpod-run-{os.getpid()}-{secrets.token_hex(2)}"
    interrupted = threading.Event()
    instances = Instances(sys.stdout)

    def forward(signum: int, _frame: FrameType | None) -> None:
        interrupted.set()
        instances.signal_all(signum)

    created = False
    code = 1
    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        created = _claim_partition(
            client,
            partition_id,
            shape,
            vipu_allocation,
            vipu_server_timeout,
            update=update_partition == "yes",
        )
        if interrupted.is_set():
            raise SystemExit(130)
        endpoint = client.endpoint
        if remote_hosts and _is_loopback(endpoint.host):
            click.echo(
                f"vpod-run: warning: the controller's address {endpoint.host} is a loopback"
                " address, which instances on other hosts dial on their own host: give"
                " --vipu-server-host an address they reach",
                err=True,
            )
        cwd = os.getcwd()
        for index, target in enumerate(where):
            env = {
                **instance_environment(
                    shape,
                    index,
                    partition_id=partition_id,
                    api_host=endpoint.host,
                    api_port=endpoint.port,
                    timeout_s=vipu_server_timeout,
                ),
                **exported,
            }
            if target is None:
                instances.start(index, command, {**os.environ, **env})
            else:
                remote = remote_command(command, env, cwd)
                argv = ssh_argv(ssh, ssh_options, target, remote)
                instances.start(index, argv, None, host=target)
        instances.wait(interrupted)
        if interrupted.is_set():
            instances.reap()
        code = instances.exit_code(interrupted.is_set())
    except VpodError as exc:
        click.echo(f"vpod-run: {exc}", err=True)
        code = 2 if isinstance(exc, InvalidArgument) else 1
    finally:
        for signum in previous:
            signal.signal(signum, signal.SIG_IGN)  # cleaning up must not be interrupted
        instances.signal_all(signal.SIGTERM)
        instances.reap()
        if created and remove_partition:
            _remove(client, partition_id)
        client.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    sys.exit(code)


def _instance_hosts(
    host_lists: tuple[str, ...], hostfile: Path | None, instances: int
) -> list[str | None]:
    """The host of each instance; None for this one (no ssh)."""
    if not host_lists and hostfile is None:
        return [None] * instances
    if host_lists and hostfile is not None:
        raise click.UsageError("give --host or --hostfile, not both")
    hosts: list[Host]
    try:
        if hostfile is not None:
            try:
                text = hostfile.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise click.UsageError(f"cannot read --hostfile {hostfile}: {exc}") from None
            hosts = parse_hostfile(text, str(hostfile))
        else:
            hosts = parse_host_list(",".join(host_lists))
        placed = spread(hosts, instances)
    except HostError as exc:
        raise click.UsageError(str(exc)) from None
    own = {socket.gethostname(), socket.gethostname().split(".")[0]}
    return [None if is_local(h, own) else h for h in placed]


def _ssh_command(text: str) -> list[str]:
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise click.UsageError(f"--ssh-command {text!r}: {exc}") from None
    if not words:
        raise click.UsageError("--ssh-command is empty: give the ssh client to run, e.g. 'ssh'")
    return words


def _exports(exports: tuple[str, ...]) -> dict[str, str]:
    found = {}
    for item in exports:
        name, sep, value = item.partition("=")
        if not name.isidentifier() or not name.isascii():
            raise click.UsageError(f"--export {item!r}: give NAME or NAME=VALUE")
        if not sep:
            if name not in os.environ:
                raise click.UsageError(
                    f"--export {name}: {name} is not set here; give {name}=VALUE"
                )
            value = os.environ[name]
        found[name] = value
    return found


def _plan(where: list[str | None]) -> str:
    """``instances 0-1 on h1, 2-3 on h2`` (consecutive instances share a host)."""
    runs: list[tuple[int, int, str]] = []
    for index, host in enumerate(where):
        name = host or "this host"
        if runs and runs[-1][2] == name and runs[-1][1] == index - 1:
            runs[-1] = (runs[-1][0], index, name)
        else:
            runs.append((index, index, name))
    parts = [f"{a}-{b} on {h}" if a != b else f"{a} on {h}" for a, b, h in runs]
    return "instances " + ", ".join(parts)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _claim_partition(
    client: UserClient,
    partition_id: str,
    shape: RunShape,
    allocation: str | None,
    timeout_s: int,
    *,
    update: bool = False,
) -> bool:
    """Reuse ``partition_id`` or create it; True when this run created it. ``update``: make
    an existing partition of another shape this run's, unless it is in use."""
    try:
        existing = client.get_partition(partition_id)
    except NotFound:
        existing = None
    if existing is None:
        try:
            _create(client, partition_id, shape, allocation)
            click.echo(f"vpod-run: created partition {partition_id} of {shape.size} IPUs", err=True)
            client.wait_until_active(partition_id, timeout=timeout_s)
            return True
        except AlreadyExists:
            existing = client.get_partition(partition_id)
    differences = shape_differences(existing, shape.size, shape.replicas, shape.ilds)
    if update and differences:
        _update(client, existing, shape, differences, timeout_s)
        return False
    if existing.size != shape.size:
        fail(
            f"partition {partition_id} has {existing.size} IPUs but {shape.replicas} replicas of"
            f" {shape.ipus_per_replica} IPUs need {shape.size}: choose another --vipu-partition"
            " or re-create it with --update-partition yes",
            2,
        )
    client.wait_until_active(partition_id, timeout=timeout_s)
    click.echo(f"vpod-run: using partition {partition_id} of {shape.size} IPUs", err=True)
    return False


def _create(client: UserClient, partition_id: str, shape: RunShape, allocation: str | None) -> None:
    options: dict[str, object] = {"num_replicas": shape.replicas}
    if shape.ilds > 1:
        options.update(num_ilds=shape.ilds, num_gcds=shape.ilds)
    if allocation:
        options["allocation"] = allocation
    client.create_partition(partition_id, shape.size, **options)  # type: ignore[arg-type]


def _update(
    client: UserClient,
    existing: Partition,
    shape: RunShape,
    differences: list[str],
    timeout_s: int,
) -> None:
    """Re-create ``existing`` with ``shape`` in its allocation; refused while it is in use."""
    partition_id = existing.id
    held = holders(client, partition_id)
    if held:
        click.echo(
            f"vpod-run: partition {partition_id} is in use, so it cannot be updated"
            f" ({'; '.join(differences)}): {', '.join(held)}; wait until it is released or"
            " choose another --vipu-partition",
            err=True,
        )
        raise SystemExit(1)
    client.remove_partition(partition_id)
    _create(client, partition_id, shape, existing.allocation_id or None)
    client.wait_until_active(partition_id, timeout=timeout_s)
    click.echo(
        f"vpod-run: updated partition {partition_id} to {shape.size} IPUs, {shape.replicas}"
        f" replicas ({'; '.join(differences)} before)",
        err=True,
    )


def _remove(client: UserClient, partition_id: str) -> None:
    try:
        client.remove_partition(partition_id)
    except NotFound:
        return
    except VpodError as exc:
        click.echo(f"vpod-run: removing {partition_id} failed ({exc}); forcing", err=True)
        try:
            client.remove_partition(partition_id, force=True)
        except VpodError as again:
            click.echo(
                f"vpod-run: partition {partition_id} is left behind: {again}; remove it with"
                f" 'vipu remove partition {partition_id} --force'",
                err=True,
            )
            return
    click.echo(f"vpod-run: removed partition {partition_id}", err=True)
