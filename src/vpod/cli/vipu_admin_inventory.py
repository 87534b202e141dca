"""``vipu-admin`` commands for agents, clusters and allocations.

Each command is a standalone Click command; :mod:`.vipu_admin_main` puts it
under its verb group (``create agent`` ...). All of them call
``vpod.admin.v1.AdminService`` on the admin endpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from vpod.client import AdminClient
from vpod.domain.naming import natural_key
from vpod.domain.topology import GwTopology, IldTopology
from vpod.wire import admin_pb2 as apb
from vpod.wire import agent_pb2 as agpb

from .exit_status import EXIT_USAGE, CliError
from .render import enum_label, joined, message_dict, table
from .short_help import CONTEXT
from .vipu_group import (
    PORT,
    WholeNumber,
    csv_list,
    echo_json,
    echo_listing,
    json_option,
    removal,
    session_of,
    success,
)

key_file_option = click.option(
    "--key-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="File holding the agent's key (the one given to vipu-agent --key-file); without it,"
    " the key the agent registered with.",
)
hosts_option = click.option(
    "--hosts",
    metavar="CIDR[,CIDR...]",
    callback=csv_list,
    help="Hosts (addresses or CIDRs) whose applications may attach to the allocation's IPUs"
    " over IPUoF [the controller's trusted hosts].",
)


def _agent_key(key_file: Path | None) -> str:
    """The key in ``key_file`` (surrounding whitespace ignored), or "" without one."""
    if key_file is None:
        return ""
    try:
        return key_file.read_text().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read --key-file {key_file}: {exc}", EXIT_USAGE) from None


AGENT_HEADERS = (
    "Agent",
    "Host",
    "Port",
    "Type",
    "Serial",
    "Cluster",
    "Allocation",
    "State",
    "Faults",
)
DISCOVERED_HEADERS = ("Agent", "Host", "Port", "Type", "Serial", "Known", "Added", "Error")
CLUSTER_HEADERS = ("Cluster", "Agents", "ILDs", "Topology", "Cluster Topology", "IPUs", "Type")
ADMIN_ALLOCATION_HEADERS = (
    "Allocation ID",
    "Agents",
    "Cluster",
    "Size",
    "Users",
    "Partitions",
    "IPUoF Hosts",
)
"""The first two columns are those of ``vipu list allocations``."""

ILD_TOPOLOGIES = sorted(t.value for t in IldTopology)
CLUSTER_TOPOLOGIES = sorted(t.value for t in GwTopology)


def admin_client(ctx: click.Context) -> AdminClient:
    """The admin API on the admin endpoint."""
    return session_of(ctx).admin()


def fault_text(fault: Any) -> str:
    """An active fault in a few characters: ``ipu(2)``, ``link(L3)``, ``hang``, ``slow(500ms)``."""
    if fault.kind == agpb.FAULT_IPU:
        return f"ipu({fault.device_id})"
    if fault.kind == agpb.FAULT_LINK_DOWN:
        return f"link({fault.link_id})"
    if fault.kind == agpb.FAULT_AGENT_HANG:
        return "hang"
    if fault.kind == agpb.FAULT_AGENT_SLOW:
        return f"slow({fault.delay_ms}ms)"
    return "unknown"


def agent_row(agent: apb.Agent) -> list[object]:
    return [
        agent.id,
        agent.host,
        agent.port,
        agent.machine_type,
        agent.serial,
        agent.cluster_id,
        agent.allocation_id,
        enum_label(apb.AgentState.Name(agent.state), "AGENT_STATE_").removeprefix("AGENT_"),
        joined(fault_text(f) for f in agent.faults),
    ]


def _lower_label(name: str, prefix: str) -> str:
    return enum_label(name, prefix).lower()


def cluster_row(cluster: apb.Cluster) -> list[object]:
    return [
        cluster.id,
        joined(cluster.agent_ids),
        cluster.num_ipulinkdomains or 1,
        _lower_label(apb.IldTopology.Name(cluster.topology), "ILD_TOPOLOGY_"),
        _lower_label(apb.ClusterTopology.Name(cluster.cluster_topology), "CLUSTER_TOPOLOGY_"),
        cluster.num_ipus,
        cluster.machine_type,
    ]


def allocation_row(info: apb.AllocationInfo) -> list[object]:
    allocation = info.allocation
    return [
        allocation.id,
        joined(allocation.spec.agent_ids),
        allocation.spec.cluster_id,
        info.size,
        joined(info.user_ids),
        info.num_partitions,
        joined(info.hosts) if info.hosts else f"trusted ({joined(info.trusted_hosts)})",
    ]


# ------------------------------------------------------------------ agents


@click.command("agent", context_settings=CONTEXT)
@click.argument("agent_id", metavar="ID")
@click.option("--host", required=True, metavar="H", help="Address of the agent (IPU-Gateway).")
@click.option(
    "--port",
    required=True,
    type=PORT,
    metavar="P",
    help="The agent's gRPC port.",
)
@key_file_option
@json_option
@click.pass_context
def create_agent(
    ctx: click.Context, agent_id: str, host: str, port: int, key_file: Path | None, as_json: bool
) -> None:
    """Register the agent of one IPU-Machine.

    An agent answers only calls that carry its key: give the file the agent was
    started with (vipu-agent --key-file). An agent that registers itself tells
    the controller its key, and needs no --key-file.

    \b
    Example:
      vipu-admin create agent ipum1 --host 10.1.0.1 --port 8092 --key-file ipum1.key
    """
    created = admin_client(ctx).create_agent(agent_id, host, port, key=_agent_key(key_file))
    if as_json:
        echo_json(message_dict(created.raw))
        return
    success("create", "agent", agent_id)


@click.command("agents", context_settings=CONTEXT)
@click.option("--cluster", metavar="C", help="Only the agents of this cluster.")
@json_option
@click.pass_context
def list_agents(ctx: click.Context, cluster: str | None, as_json: bool) -> None:
    """List agents with their machine, cluster, allocation, state and active faults.

    Table columns: Agent | Host | Port | Type | Serial | Cluster | Allocation |
    State | Faults.
    """
    agents = admin_client(ctx).list_agents(cluster)
    reply = apb.ListAgentsReply(agents=[a.raw for a in agents])
    rows = [agent_row(a.raw) for a in sorted(agents, key=lambda a: natural_key(a.id))]
    echo_listing(as_json, reply, AGENT_HEADERS, rows)


@removal(
    "agent",
    "If it is in a cluster, remove that cluster first, with its allocations and partitions.",
    lambda ctx: admin_client(ctx).remove_agent,
)
def remove_agent() -> None:
    """Forget agent ID."""


def _addresses(ctx: click.Context, param: click.Parameter, value: str | None) -> list[str]:
    addresses = csv_list(ctx, param, value)
    for address in addresses:
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise click.BadParameter(f"{address!r} is not HOST:PORT (e.g. 10.1.0.1:8092)")
    return addresses


@click.command("agent", context_settings=CONTEXT)
@click.option(
    "--address",
    "addresses",
    metavar="H:P[,H:P...]",
    callback=_addresses,
    help="Agents to probe; without it, the agents that registered themselves.",
)
@click.option("--add", is_flag=True, help="Create the agents found, with the ids they report.")
@key_file_option
@json_option
@click.pass_context
def discover_agent(
    ctx: click.Context, addresses: list[str], add: bool, key_file: Path | None, as_json: bool
) -> None:
    """Probe agents (or list self-registered ones) and optionally add them.

    Table columns: Agent | Host | Port | Type | Serial | Known | Added | Error.
    Exits 1 when a probe failed.

    \b
    Examples:
      vipu-admin discover agent
      vipu-admin discover agent --address 10.1.0.1:8092,10.1.0.2:8092 --add
    """
    found = admin_client(ctx).discover_agents(addresses, add=add, key=_agent_key(key_file))
    if as_json:
        echo_json(message_dict(apb.DiscoverAgentsReply(agents=[a.raw for a in found])))
    else:
        rows = [
            [a.agent_id, a.host, a.port, a.machine_type, a.serial, a.known, a.added, a.error]
            for a in found
        ]
        click.echo(table(DISCOVERED_HEADERS, rows))
    failed = [a for a in found if a.error]
    if failed:
        where = ", ".join(f"{a.host}:{a.port}" for a in failed)
        raise CliError(f"{len(failed)} of {len(found)} agents could not be probed: {where}")


# ---------------------------------------------------------------- clusters


@click.command("cluster", context_settings=CONTEXT)
@click.argument("cluster_id", metavar="ID")
@click.option(
    "--agents",
    required=True,
    metavar="A,B,...",
    callback=csv_list,
    help="Agents in cabling order (4 per IPU-POD16, 16 per IPU-POD64 rack).",
)
@click.option("--num-ipulinkdomains", type=WholeNumber(), help="IPU-Link domains (racks) [1].")
@click.option(
    "--topology",
    type=click.Choice(ILD_TOPOLOGIES, case_sensitive=False),
    help="IPU-Link domain cabling [torus].",
)
@click.option(
    "--cluster-topology",
    type=click.Choice(CLUSTER_TOPOLOGIES, case_sensitive=False),
    help="GW-Links between domains [looped where a ring is allowed].",
)
@json_option
@click.pass_context
def create_cluster(
    ctx: click.Context,
    cluster_id: str,
    agents: list[str],
    num_ipulinkdomains: int | None,
    topology: str | None,
    cluster_topology: str | None,
    as_json: bool,
) -> None:
    """Define cluster ID from agents cabled into IPU-Link domains.

    \b
    Examples:
      vipu-admin create cluster pod16 --agents ipum1,ipum2,ipum3,ipum4
      vipu-admin create cluster pod128 --agents $(seq -s, -f ipum%g 1 32) \\
          --num-ipulinkdomains 2 --cluster-topology looped
    """
    if not agents:
        raise CliError("--agents names no agent: list them, comma-separated", EXIT_USAGE)
    created = admin_client(ctx).create_cluster(
        cluster_id,
        agents,
        num_ilds=num_ipulinkdomains,
        topology=IldTopology(topology.lower()) if topology else None,
        cluster_topology=GwTopology(cluster_topology.lower()) if cluster_topology else None,
    )
    if as_json:
        echo_json(message_dict(created.raw))
        return
    success("create", "cluster", cluster_id)


@click.command("clusters", context_settings=CONTEXT)
@json_option
@click.pass_context
def list_clusters(ctx: click.Context, as_json: bool) -> None:
    """List clusters.

    Table columns: Cluster | Agents | ILDs | Topology | Cluster Topology | IPUs | Type.
    """
    clusters = admin_client(ctx).list_clusters()
    reply = apb.ListClustersReply(clusters=[c.raw for c in clusters])
    rows = [cluster_row(c.raw) for c in sorted(clusters, key=lambda c: natural_key(c.id))]
    echo_listing(as_json, reply, CLUSTER_HEADERS, rows)


@removal(
    "cluster",
    "Remove it even when it has allocations.",
    lambda ctx: admin_client(ctx).remove_cluster,
)
def remove_cluster() -> None:
    """Remove cluster ID (its agents stay registered)."""


# ------------------------------------------------------------- allocations


@click.command("allocation", context_settings=CONTEXT)
@click.argument("allocation_id", metavar="ID")
@click.option("--cluster", required=True, metavar="C", help="Cluster to take machines from.")
@click.option("--size", type=WholeNumber(), help="IPUs: 4, 8, 16, 32, 64 or multiples of 64.")
@click.option(
    "--agents", metavar="A,B,...", callback=csv_list, help="Name the machines instead of --size."
)
@hosts_option
@json_option
@click.pass_context
def create_allocation(
    ctx: click.Context,
    allocation_id: str,
    cluster: str,
    size: int | None,
    agents: list[str],
    hosts: list[str],
    as_json: bool,
) -> None:
    """Grant machines of a cluster as allocation ID: give --size or --agents.

    \b
    Examples:
      vipu-admin create allocation team-a --cluster pod64 --size 16
      vipu-admin create allocation team-b --cluster pod64 --agents ipum5,ipum6
      vipu-admin create allocation team-c --cluster pod64 --size 8 --hosts 10.1.2.0/24
    """
    if (size is None) == (not agents):
        raise CliError("give exactly one of --size and --agents", EXIT_USAGE)
    created = admin_client(ctx).create_allocation(
        allocation_id, cluster, size=size, agent_ids=agents, hosts=hosts
    )
    if as_json:
        echo_json(message_dict(created.raw))
        return
    success("create", "allocation", allocation_id)
    if created.size:
        click.echo(f"{created.size} IPUs on agents {joined(created.agent_ids)}")


@click.command("allocations", context_settings=CONTEXT)
@click.option("--cluster", metavar="C", help="Only the allocations of this cluster.")
@json_option
@click.pass_context
def list_allocations(ctx: click.Context, cluster: str | None, as_json: bool) -> None:
    """List allocations with their users and number of partitions.

    Table columns: Allocation ID | Agents | Cluster | Size | Users | Partitions |
    IPUoF Hosts (who may attach to its IPUs; "trusted (...)": the controller's
    trusted hosts, as none were set).
    """
    allocations = admin_client(ctx).list_allocations(cluster)
    reply = apb.ListAllocationsReply(allocations=[a.raw for a in allocations])
    infos = sorted(allocations, key=lambda a: natural_key(a.id))
    echo_listing(as_json, reply, ADMIN_ALLOCATION_HEADERS, [allocation_row(i.raw) for i in infos])


@click.command("allocation", context_settings=CONTEXT)
@click.argument("allocation_id", metavar="ID")
@hosts_option
@click.option(
    "--trusted-hosts",
    "trusted",
    is_flag=True,
    help="Go back to the controller's trusted hosts (vipu-server --trusted-hosts).",
)
@json_option
@click.pass_context
def update_allocation(
    ctx: click.Context, allocation_id: str, hosts: list[str], trusted: bool, as_json: bool
) -> None:
    """Change who may attach to allocation ID's IPUs over IPUoF.

    The agents of every partition of the allocation get the change at once;
    applications on other hosts are refused from then on.

    \b
    Examples:
      vipu-admin update allocation team-a --hosts 10.1.2.0/24,10.1.3.7
      vipu-admin update allocation team-a --trusted-hosts
    """
    if bool(hosts) == trusted:
        raise CliError("give exactly one of --hosts and --trusted-hosts", EXIT_USAGE)
    updated = admin_client(ctx).set_allocation_hosts(allocation_id, hosts)
    if as_json:
        echo_json(message_dict(updated.raw))
        return
    success("update", "allocation", allocation_id)
    click.echo(f"IPUoF hosts: {allocation_row(updated.raw)[-1]}")


@removal(
    "allocation", "Remove its partitions too.", lambda ctx: admin_client(ctx).remove_allocation
)
def remove_allocation() -> None:
    """Take allocation ID back (with --force, removing its partitions)."""
