"""``vipu``: the V-IPU user command line (vipu-system.md §6; reference in docs/cli.md).

Thin edge: parse the options, call the user gRPC API (``virmgrpc``) on the
user endpoint, render. The user API has no allocation rpc, so ``vipu list
allocations`` calls the admin service's ``ListAllocations``, which the
controller serves on the user endpoint too, with the user's own credentials;
it shows a user only the allocations granted to them. ``vipu`` never dials
the admin endpoint.
"""

from __future__ import annotations

from typing import Any, NoReturn, cast

import click

from vpod.cli import grpc_logging  # noqa: F401  (before anything imports grpc)
from vpod.client import PartitionOptions, UserClient
from vpod.domain.errors import InvalidSpec
from vpod.domain.naming import natural_key
from vpod.domain.routing import parse_gw_routing, parse_ipulink_routing, parse_sync_type
from vpod.wire import virmgrpc_pb2 as pb

from .exit_status import EXIT_USAGE, CliError
from .render import details, joined, message_dict, table
from .short_help import CONTEXT
from .vipu_group import (
    SubcommandGroup,
    WholeNumber,
    echo_json,
    echo_listing,
    ipu_attributes_command,
    json_option,
    removal,
    root_group,
    session_of,
    success,
)
from .vipu_views import (
    ALLOCATION_HEADERS,
    IPU_HEADERS,
    PARTITION_HEADERS,
    ipu_rows,
    partition_pairs,
    partition_row,
    ready_label,
    status_pairs,
)


def _user(ctx: click.Context) -> UserClient:
    return session_of(ctx).user()


@root_group("vipu", admin_cli=False, example="list partitions")
def cli() -> None:
    """Create and use IPU partitions through a V-IPU controller's user API.

    \b
    Examples:
      vipu --server-version
      vipu create partition training --size 16 --allocation team-a
      vipu list partitions
      vipu get partition training --ipuof-configs > ~/.ipuof.conf.d/training.conf
      vipu remove partition training
    """


@cli.group(cls=SubcommandGroup, context_settings=CONTEXT)
def create() -> None:
    """Create a partition."""


@cli.group(name="list", cls=SubcommandGroup, context_settings=CONTEXT)
def list_() -> None:
    """List partitions, allocations or IPU attributes."""


@cli.group(cls=SubcommandGroup, context_settings=CONTEXT)
def get() -> None:
    """Show one partition, its status or its IPUoF configs."""


@cli.group(cls=SubcommandGroup, context_settings=CONTEXT)
def reset() -> None:
    """Reset a partition's IPUs."""


@cli.group(cls=SubcommandGroup, context_settings=CONTEXT)
def remove() -> None:
    """Remove a partition."""


def _parsed(parse: Any) -> Any:
    """A Click callback running a domain parser; its message becomes the usage error."""

    def callback(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Any:
        if value is None:
            return None
        try:
            return parse(value)
        except InvalidSpec as exc:
            raise click.BadParameter(str(exc)) from None

    return callback


@create.command("partition", context_settings=CONTEXT)
@click.argument("partition_id", metavar="ID")
@click.option("--size", type=WholeNumber(), required=True, help="Number of IPUs.")
@click.option("--allocation", metavar="A", help="Allocation to take the IPUs from.")
@click.option("--cluster", metavar="C", help="Cluster (deprecated: use --allocation).")
@click.option("--num-gcds", type=WholeNumber(), help="Graph compile domains [1].")
@click.option("--num-replicas", type=WholeNumber(), help="Replicas [equal to --num-gcds].")
@click.option("--reconfigurable", is_flag=True, help="Share the partition through sub-devices.")
@click.option(
    "--sync-type",
    metavar="T",
    callback=_parsed(parse_sync_type),
    help="c2-compatible, pod-native-default or pod-native-replicated-pipeline.",
)
@click.option(
    "--routing",
    metavar="R",
    callback=_parsed(parse_ipulink_routing),
    help="IPU-Link routing: dnc, swnc, btnc or ringswnc [from size and topology].",
)
@click.option(
    "--gw-routing",
    metavar="R",
    callback=_parsed(parse_gw_routing),
    help="GW-Link routing across ILDs: ring or swring [from the cluster].",
)
@click.option("--num-ilds", type=WholeNumber(), help="IPU-Link domains to span (segments) [1].")
@click.option(
    "--disable-auto-reset", is_flag=True, help="Do not reset the IPUs when an application detaches."
)
@click.option("--relocatable", is_flag=True, help="Let the controller move it off failed IPUs.")
@json_option
@click.pass_context
def create_partition(
    ctx: click.Context, /, partition_id: str, size: int, as_json: bool, **chosen: Any
) -> None:
    """Create partition ID of --size IPUs.

    Sizes: 1, 2, 4, 8, 16, 64 and multiples of 64. Unset options take the
    controller's defaults. With --json it prints the partition as `vipu get
    partition ID --json` does, once it is ACTIVE.

    \b
    Examples:
      vipu create partition p1 --size 4
      vipu create partition big --size 128 --num-ilds 2 --allocation pod128
      vipu create partition dp --size 16 --num-gcds 4 --num-replicas 8
      vipu create partition p2 --size 2 --json | jq '.partition.spec.ipus'
    """
    # The options are named as PartitionOptions' keys. Flags are always sent; any other
    # option only when given, else the controller chooses.
    given = {name: value for name, value in chosen.items() if isinstance(value, bool) or value}
    options = cast(PartitionOptions, given)
    client = _user(ctx)
    created = client.create_partition(partition_id, size, **options)
    if as_json:
        echo_json(_partition_json(client, created))
        return
    success("create", "partition", created)


def _partition_and_status(
    client: UserClient, partition_id: str
) -> tuple[pb.Partition, pb.PartitionStatus]:
    return client.get_partition(partition_id).raw, client.partition_status(partition_id).raw


def _partition_json(client: UserClient, partition_id: str) -> dict[str, object]:
    """Partition ID as ``--json`` prints it: its ``Partition`` and its ``PartitionStatus``."""
    partition, status = _partition_and_status(client, partition_id)
    return {"partition": message_dict(partition), "status": message_dict(status)}


@list_.command("partitions", context_settings=CONTEXT)
@click.option("--allocation", metavar="A", help="Only the partitions of this allocation.")
@json_option
@click.pass_context
def list_partitions(ctx: click.Context, allocation: str | None, as_json: bool) -> None:
    """List the partitions you may see.

    Table columns: Partition | Cluster | ILDs | GW Routing | ILD Routing |
    Size | GCDs | State.
    """
    partitions = _user(ctx).list_partitions(allocation)
    reply = pb.ListPartitionsReply(partitions=[p.raw for p in partitions])
    rows = [partition_row(p.raw) for p in sorted(partitions, key=lambda p: p.id)]
    echo_listing(as_json, reply, PARTITION_HEADERS, rows)


@list_.command("allocations", context_settings=CONTEXT)
@json_option
@click.pass_context
def list_allocations(ctx: click.Context, as_json: bool) -> None:
    """List the allocations you may use.

    Table columns: Allocation ID | Agents.
    """
    from vpod.wire import admin_pb2 as apb  # loaded by this command only

    allocations = _user(ctx).list_allocations()
    reply = apb.ListAllocationsReply(allocations=[a.raw for a in allocations])
    infos = sorted(allocations, key=lambda a: natural_key(a.id))
    echo_listing(as_json, reply, ALLOCATION_HEADERS, [[a.id, joined(a.agent_ids)] for a in infos])


list_.add_command(
    ipu_attributes_command(
        _user,
        summary="List IPU attributes: board type, serial, clock, firmware and driver versions.",
        agents_help="Only these agents (comma-separated).",
    )
)


@get.command("partition", context_settings=CONTEXT)
@click.argument("partition_id", metavar="ID")
@click.option("--gcd", type=WholeNumber(0), metavar="G", help="Only GCD G's IPUoF config.")
@click.option(
    "--ipuof-configs",
    is_flag=True,
    help="Print the IPUoF config file(s) as JSON: one object per GCD (a list for several).",
)
@json_option
@click.pass_context
def get_partition(
    ctx: click.Context, partition_id: str, gcd: int | None, ipuof_configs: bool, as_json: bool
) -> None:
    """Show partition ID: its spec, status and IPUs, or its IPUoF configs.

    With --ipuof-configs the output is what an IPUoF client reads from
    IPUOF_CONFIG_PATH or ~/.ipuof.conf.d/*.conf: {"devices": [...],
    "attributes": {...}}; a JSON list of those for a partition of several GCDs
    unless --gcd picks one. With --json too, the whole PartitionConfig reply.

    \b
    Examples:
      vipu get partition p1
      vipu get partition p1 --ipuof-configs > ~/.ipuof.conf.d/p1.conf
      vipu get partition p1 --ipuof-configs --gcd 1 > p1_gcd1.conf
    """
    client = _user(ctx)
    if gcd is not None and not ipuof_configs:
        raise CliError("--gcd picks one GCD's IPUoF config: add --ipuof-configs", EXIT_USAGE)
    if ipuof_configs:
        config = client.ipuof_config(partition_id, gcd)
        _warn_unless_active(client.partition_status(partition_id).raw)
        if as_json:
            echo_json(message_dict(config.raw))
            return
        files = config.files()
        echo_json(files[0] if len(files) == 1 else files)
        return
    if as_json:
        echo_json(_partition_json(client, partition_id))
        return
    partition, status = _partition_and_status(client, partition_id)
    click.echo(details(partition_pairs(partition, status)))
    click.echo("")
    click.echo(table(IPU_HEADERS, ipu_rows(partition.spec)))


def _warn_unless_active(status: pb.PartitionStatus) -> None:
    """One line on stderr when the config printed is of a partition in ERROR (the controller
    serves what it recorded): applications may not reach its IPUs until it is ACTIVE."""
    if status.ready_state == pb.PS_ACTIVE:
        return
    why = f" ({status.errors[0]})" if status.errors else ""
    click.echo(
        f"vipu: warning: partition {status.partition_id} is"
        f" {ready_label(status.ready_state)}{why}: this is the IPUoF"
        " config the controller recorded; applications may not reach its IPUs until it is"
        " ACTIVE (vipu get partition-status)",
        err=True,
    )


@get.command("partition-status", context_settings=CONTEXT)
@click.argument("partition_id", metavar="ID")
@json_option
@click.pass_context
def get_partition_status(ctx: click.Context, partition_id: str, as_json: bool) -> None:
    """Show partition ID's state, operation, errors and auto-reset counters."""
    status = _user(ctx).partition_status(partition_id).raw
    if as_json:
        echo_json(message_dict(status))
        return
    click.echo(details([("Partition", status.partition_id or partition_id), *status_pairs(status)]))


@reset.command("partition", context_settings=CONTEXT)
@click.argument("partition_id", metavar="ID")
@click.option(
    "--relocatable", is_flag=True, help="Allow moving it to other IPUs (overrides creation)."
)
@json_option
@click.pass_context
def reset_partition(
    ctx: click.Context, partition_id: str, relocatable: bool, as_json: bool
) -> None:
    """Reset partition ID's IPUs to their initial state.

    With --json it prints the partition after the reset, as `vipu get partition
    ID --json` does (a relocated partition shows its new IPUs).
    """
    client = _user(ctx)
    client.reset_partition(partition_id, relocatable=relocatable)
    if as_json:
        echo_json(_partition_json(client, partition_id))
        return
    success("reset", "partition", partition_id)


@removal(
    "partition",
    "Remove it even when agents report errors.",
    lambda ctx: _user(ctx).remove_partition,
)
def remove_partition() -> None:
    """Remove partition ID and free its IPUs.

    \b
    Examples:
      vipu remove partition p1
      vipu remove partition p1 --force
    """


remove.add_command(remove_partition)


def main() -> NoReturn:
    """Console script ``vipu``."""
    cli.main(prog_name="vipu")
