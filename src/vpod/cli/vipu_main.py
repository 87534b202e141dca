"""``vipu``: the V-IPU user command line (vipu-system.md §6; reference in docs/cli.md).

Thin edge: parse the options, call the user gRPC API (``virmgrpc``) on the
user endpoint, render. ``vipu list allocations`` is the one exception: the
user API has no allocation rpc, so it asks the admin endpoint's
``ListAllocations`` with the user's own credentials; the controller shows a
user only the allocations granted to them.
"""

from __future__ import annotations

from typing import Any, NoReturn

import click

from vpod.cli import grpc_logging  # noqa: F401  (before anything imports grpc)
from vpod.domain.errors import InvalidSpec
from vpod.domain.routing import parse_gw_routing, parse_ipulink_routing, parse_sync_type
from vpod.wire import admin_pb2 as apb
from vpod.wire import admin_pb2_grpc as apb_grpc
from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire import virmgrpc_pb2_grpc as pb_grpc

from .grpc_client import EXIT_USAGE, CliError, Connection
from .render import details, joined, message_dict, table
from .vipu_group import (
    SubcommandGroup,
    VipuGroup,
    WholeNumber,
    csv_list,
    echo_json,
    global_options,
    json_option,
    session_of,
)
from .vipu_views import (
    ALLOCATION_HEADERS,
    IPU_ATTRIBUTE_HEADERS,
    IPU_HEADERS,
    PARTITION_HEADERS,
    gcd_file,
    ipu_attribute_rows,
    ipu_rows,
    partition_pairs,
    partition_row,
    status_pairs,
)

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def success(verb: str, kind: str, entity_id: str) -> None:
    """The one line a change prints: ``create partition (p1): success.``"""
    click.echo(f"{verb} {kind} ({entity_id}): success.")


def print_server_version(connection: Connection) -> None:
    stub = connection.stub(pb_grpc.VersionServiceStub)
    reply = connection.call(stub.GetVersion, pb.VersionRequest())
    click.echo(f"version: {reply.version}")
    click.echo(f"host: {connection.endpoint.target}")


def _user(ctx: click.Context) -> tuple[Connection, Any]:
    """The user endpoint and a ``UserService`` stub on it."""
    connection = session_of(ctx).user()
    return connection, connection.stub(pb_grpc.UserServiceStub)


@click.group(
    cls=VipuGroup,
    name="vipu",
    invoke_without_command=True,
    context_settings=CONTEXT,
    epilog="Global options may also follow the command: vipu list partitions -H ctl.",
)
@global_options(hidden=False)
@click.option(
    "--server-version", is_flag=True, help="Print the controller's version and address, then exit."
)
@click.pass_context
def cli(ctx: click.Context, server_version: bool) -> None:
    """Create and use IPU partitions through a V-IPU controller's user API.

    \b
    Examples:
      vipu --server-version
      vipu create partition training --size 16 --allocation team-a
      vipu list partitions
      vipu get partition training --ipuof-configs > ~/.ipuof.conf.d/training.conf
      vipu remove partition training
    """
    if server_version:
        print_server_version(session_of(ctx).user())
        ctx.exit(0)
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


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
@click.pass_context
def create_partition(
    ctx: click.Context,
    partition_id: str,
    size: int,
    allocation: str | None,
    cluster: str | None,
    num_gcds: int | None,
    num_replicas: int | None,
    reconfigurable: bool,
    sync_type: Any,
    routing: Any,
    gw_routing: Any,
    num_ilds: int | None,
    disable_auto_reset: bool,
    relocatable: bool,
) -> None:
    """Create partition ID of --size IPUs.

    Sizes: 1, 2, 4, 8, 16, 64 and multiples of 64. Unset options take the
    controller's defaults.

    \b
    Examples:
      vipu create partition p1 --size 4
      vipu create partition big --size 128 --num-ilds 2 --allocation pod128
      vipu create partition dp --size 16 --num-gcds 4 --num-replicas 8
    """
    connection, stub = _user(ctx)
    requirements = pb.PartitionRequirements(
        id=partition_id,
        size=size,
        cluster_id=cluster or "",
        allocation_id=allocation or "",
        num_gcds=num_gcds or 0,
        num_replicas=num_replicas or 0,
        reconfigurable=reconfigurable,
        num_ipulink_segments=num_ilds or 0,
        sync_type=pb.SyncType.ValueType(sync_type.value if sync_type else 0),
        ipulink_routing_type=pb.IpuLinkRoutingType.ValueType(routing.value if routing else 0),
        gw_routing_type=pb.GatewayRoutingType.ValueType(gw_routing.value if gw_routing else 0),
    )
    request = pb.CreatePartitionRequest(
        requirements=requirements,
        disable_auto_reset=disable_auto_reset,
        relocatable=relocatable,
    )
    reply = connection.call(stub.CreatePartition, request)
    success("create", "partition", reply.partition_id or partition_id)


@list_.command("partitions", context_settings=CONTEXT)
@click.option("--allocation", metavar="A", help="Only the partitions of this allocation.")
@json_option
@click.pass_context
def list_partitions(ctx: click.Context, allocation: str | None, as_json: bool) -> None:
    """List the partitions you may see.

    Table columns: Partition | Cluster | ILDs | GW Routing | ILD Routing |
    Size | GCDs | State.
    """
    connection, stub = _user(ctx)
    reply = connection.call(
        stub.ListPartitions, pb.ListPartitionsRequest(allocation_id=allocation or "")
    )
    if as_json:
        echo_json(message_dict(reply))
        return
    rows = [partition_row(p) for p in sorted(reply.partitions, key=lambda p: p.id)]
    click.echo(table(PARTITION_HEADERS, rows))


@list_.command("allocations", context_settings=CONTEXT)
@json_option
@click.pass_context
def list_allocations(ctx: click.Context, as_json: bool) -> None:
    """List the allocations you may use (asks the admin endpoint, port 8091).

    Table columns: Allocation ID | Agents.
    """
    connection = session_of(ctx).admin()
    stub = connection.stub(apb_grpc.AdminServiceStub)
    reply = connection.call(stub.ListAllocations, apb.ListAllocationsRequest())
    if as_json:
        echo_json(message_dict(reply))
        return
    infos = sorted(reply.allocations, key=lambda info: info.allocation.id)
    rows = [[i.allocation.id, joined(i.allocation.spec.agent_ids)] for i in infos]
    click.echo(table(ALLOCATION_HEADERS, rows))


@list_.command("ipu-attrs", context_settings=CONTEXT)
@click.option(
    "--agents", metavar="A,B", callback=csv_list, help="Only these agents (comma-separated)."
)
@json_option
@click.pass_context
def list_ipu_attrs(ctx: click.Context, agents: list[str], as_json: bool) -> None:
    """List IPU attributes: board type, serial, clock, firmware and driver versions.

    Table columns: Agent | IPU | Attribute | Value (one row per attribute).
    """
    connection, stub = _user(ctx)
    reply = connection.call(stub.ListIPUAttributes, pb.ListIPUAttributesRequest(agents=agents))
    if as_json:
        echo_json(message_dict(reply))
        return
    click.echo(table(IPU_ATTRIBUTE_HEADERS, ipu_attribute_rows(reply)))


def _status(connection: Connection, stub: Any, partition_id: str) -> pb.PartitionStatus:
    reply = connection.call(
        stub.GetPartitionStatus, pb.GetPartitionStatusRequest(partition_id=partition_id)
    )
    status: pb.PartitionStatus = reply.status
    return status


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
    connection, stub = _user(ctx)
    if gcd is not None and not ipuof_configs:
        raise CliError("--gcd picks one GCD's IPUoF config: add --ipuof-configs", EXIT_USAGE)
    if ipuof_configs:
        request = pb.GetPartitionIpuofConfigRequest(partition_id=partition_id)
        if gcd is not None:
            request.gcd_id.id = gcd
        config = connection.call(stub.GetPartitionIpuofConfig, request).ipuof_config
        if as_json:
            echo_json(message_dict(config))
            return
        files = [gcd_file(g) for g in config.gcd_configs]
        echo_json(files[0] if len(files) == 1 else files)
        return
    status = _status(connection, stub, partition_id)
    reply = connection.call(stub.ListPartitions, pb.ListPartitionsRequest())
    found = [p for p in reply.partitions if p.id == partition_id]
    if not found:
        raise CliError(f"partition {partition_id} is not in the list of partitions you may see")
    partition = found[0]
    if as_json:
        echo_json({"partition": message_dict(partition), "status": message_dict(status)})
        return
    click.echo(details(partition_pairs(partition, status)))
    click.echo("")
    click.echo(table(IPU_HEADERS, ipu_rows(partition.spec)))


@get.command("partition-status", context_settings=CONTEXT)
@click.argument("partition_id", metavar="ID")
@json_option
@click.pass_context
def get_partition_status(ctx: click.Context, partition_id: str, as_json: bool) -> None:
    """Show partition ID's state, operation, errors and auto-reset counters."""
    connection, stub = _user(ctx)
    status = _status(connection, stub, partition_id)
    if as_json:
        echo_json(message_dict(status))
        return
    click.echo(details([("Partition", status.partition_id or partition_id), *status_pairs(status)]))


@reset.command("partition", context_settings=CONTEXT)
@click.argument("partition_id", metavar="ID")
@click.option(
    "--relocatable", is_flag=True, help="Allow moving it to other IPUs (overrides creation)."
)
@click.pass_context
def reset_partition(ctx: click.Context, partition_id: str, relocatable: bool) -> None:
    """Reset partition ID's IPUs to their initial state."""
    connection, stub = _user(ctx)
    request = pb.ResetPartitionRequest(partition_id=partition_id, relocatable=relocatable)
    connection.call(stub.ResetPartition, request)
    success("reset", "partition", partition_id)


@remove.command("partition", context_settings=CONTEXT)
@click.argument("partition_id", metavar="ID")
@click.option("--force", is_flag=True, help="Remove it even when agents report errors.")
@click.pass_context
def remove_partition(ctx: click.Context, partition_id: str, force: bool) -> None:
    """Remove partition ID and free its IPUs.

    \b
    Examples:
      vipu remove partition p1
      vipu remove partition p1 --force
    """
    connection, stub = _user(ctx)
    connection.call(
        stub.RemovePartition, pb.RemovePartitionRequest(partition_id=partition_id, force=force)
    )
    success("remove", "partition", partition_id)


def main() -> NoReturn:
    """Console script ``vipu``."""
    cli.main(prog_name="vipu")
