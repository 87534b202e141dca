"""``vipu-admin`` commands that look at and test the running system.

Partitions of every allocation, IPU attributes, the cluster link tests and
fault injection into emulated machines (for drills and tests).
"""

from __future__ import annotations

from typing import Any

import click

from vpod.client import Fault, FaultKind, LinkTest
from vpod.domain.entities import MAX_FAULT_DELAY_MS
from vpod.wire import admin_pb2 as apb

from .exit_status import EXIT_USAGE, CliError
from .render import joined, message_dict, table
from .short_help import CONTEXT
from .vipu_admin_inventory import admin_client, fault_text
from .vipu_group import (
    WholeNumber,
    csv_list,
    echo_json,
    echo_listing,
    ipu_attributes_command,
    json_option,
)
from .vipu_views import (
    PARTITION_HEADERS,
    operation_label,
    partition_row,
)

ADMIN_PARTITION_HEADERS = (*PARTITION_HEADERS, "Allocation", "Operation", "Agents")
"""``vipu list partitions``'s columns, then where the partition lives."""
TEST_HEADERS = ("Test", "Result", "Agents Tested", "Agents Failed", "Summary")
FAULT_HEADERS = ("Agent", "Fault", "Reason")

TESTS = {
    "cabling": LinkTest.CABLING,
    "ipu-link": LinkTest.IPU_LINK,
    "gw-link": LinkTest.GW_LINK,
    "sync-link": LinkTest.SYNC_LINK,
    "traffic": LinkTest.TRAFFIC,
}
FAULT_KINDS = {
    "ipu": FaultKind.IPU,
    "link": FaultKind.LINK_DOWN,
    "hang": FaultKind.AGENT_HANG,
    "slow": FaultKind.AGENT_SLOW,
}


def admin_partition_row(info: apb.PartitionInfo) -> list[object]:
    agents: list[str] = []
    for location in sorted(info.locations, key=lambda loc: loc.routing_id):
        if location.agent_id not in agents:
            agents.append(location.agent_id)
    return [
        *partition_row(info.partition),
        info.partition.spec.allocation_id,
        operation_label(info.status.operation_state),
        joined(agents),
    ]


@click.command("partitions", context_settings=CONTEXT)
@click.option("--allocation", metavar="A", help="Only the partitions of this allocation.")
@click.option("--cluster", metavar="C", help="Only the partitions of this cluster.")
@json_option
@click.pass_context
def list_partitions(
    ctx: click.Context, allocation: str | None, cluster: str | None, as_json: bool
) -> None:
    """List the partitions of every allocation, with the agents they use.

    Table columns: Partition | Cluster | ILDs | GW Routing | ILD Routing | Size |
    GCDs | State | Allocation | Operation | Agents.
    """
    partitions = admin_client(ctx).list_partitions(allocation=allocation, cluster=cluster)
    reply = apb.ListPartitionsReply(partitions=[p.raw for p in partitions])
    infos = sorted(partitions, key=lambda info: info.partition.id)
    echo_listing(
        as_json, reply, ADMIN_PARTITION_HEADERS, [admin_partition_row(i.raw) for i in infos]
    )


list_ipu_attrs = ipu_attributes_command(
    admin_client,
    summary="List the IPU attributes of every agent.",
    agents_help="Only these agents.",
)


@click.command("cluster", context_settings=CONTEXT)
@click.argument("cluster_id", metavar="ID")
@click.option(
    "--tests",
    "test_names",
    metavar="T,T",
    callback=csv_list,
    help=f"Only these tests: {', '.join(TESTS)} [all five].",
)
@json_option
@click.pass_context
def test_cluster(ctx: click.Context, cluster_id: str, test_names: list[str], as_json: bool) -> None:
    """Run the cabling, IPU-Link, GW-Link, Sync-Link and traffic tests on cluster ID.

    Prints one row per test, then one line per failure. Exits 1 when a test failed.

    \b
    Table columns: Test | Result | Agents Tested | Agents Failed | Summary.

    \b
    Examples:
      vipu-admin test cluster pod64
      vipu-admin test cluster pod64 --tests cabling,ipu-link
    """
    unknown = [name for name in test_names if name.lower() not in TESTS]
    if unknown:
        raise CliError(f"unknown test {unknown[0]!r}: use {', '.join(TESTS)}", EXIT_USAGE)
    report = admin_client(ctx).test_cluster(
        cluster_id, [TESTS[name.lower()] for name in test_names]
    )
    reply = report.raw
    if as_json:
        echo_json(message_dict(reply))
    else:
        rows = [
            [
                r.name,
                "passed" if r.passed else "FAILED",
                r.agents_tested,
                r.agents_failed,
                r.summary,
            ]
            for r in reply.results
        ]
        click.echo(table(TEST_HEADERS, rows))
        failures = [f"{r.name}: {line}" for r in reply.results for line in r.details]
        if failures:
            click.echo("")
            click.echo("\n".join(failures))
    failed = [r.name for r in reply.results if not r.passed]
    if failed or not reply.passed:
        names = ", ".join(failed) or "the cluster test"
        raise CliError(f"cluster {cluster_id} failed {len(failed) or 1} test(s): {names}")


def _fault(
    kind: str, device: int | None, link: str | None, delay_ms: int | None, reason: str | None
) -> Fault:
    """The fault to inject or clear, with the target its kind needs (a usage error if absent)."""
    needs = {
        "ipu": ("--device", device),
        "link": ("--link", link),
        "slow": ("--delay-ms", delay_ms),
    }
    if kind in needs and needs[kind][1] is None:
        raise CliError(f"--kind {kind} needs {needs[kind][0]}", EXIT_USAGE)
    return Fault(
        kind=FAULT_KINDS[kind],
        device_id=device or 0,
        link_id=link or "",
        delay_ms=delay_ms or 0,
        reason=reason or "",
    )


def _show_faults(reply: Any, as_json: bool, verb: str, agent: str) -> None:
    """What inject and clear print: the agent's active faults after the change."""
    if as_json:
        echo_json(message_dict(reply))
        return
    click.echo(f"{verb} fault ({agent}): success.")
    agent_id = reply.agent_id or agent
    rows = [[agent_id, fault_text(f), f.reason] for f in reply.active_faults]
    click.echo(table(FAULT_HEADERS, rows))


_KIND_CHOICE = click.Choice(sorted(FAULT_KINDS), case_sensitive=False)


@click.command("fault", context_settings=CONTEXT)
@click.option("--agent", required=True, metavar="A", help="The agent whose machine fails.")
@click.option("--kind", required=True, type=_KIND_CHOICE, help="What fails.")
@click.option("--device", type=WholeNumber(0, 3), metavar="N", help="IPU device id (ipu).")
@click.option("--link", metavar="L", help="Link id (link).")
@click.option(
    "--delay-ms",
    type=WholeNumber(1, MAX_FAULT_DELAY_MS),
    help=f"Answer delay (slow), 1 to {MAX_FAULT_DELAY_MS} ms.",
)
@click.option("--reason", metavar="TEXT", help="Shown in health and events.")
@json_option
@click.pass_context
def inject_fault(
    ctx: click.Context,
    agent: str,
    kind: str,
    device: int | None,
    link: str | None,
    delay_ms: int | None,
    reason: str | None,
    as_json: bool,
) -> None:
    """Make an emulated machine fail: an IPU, a link, or its agent hangs or slows down.

    Prints the agent's active faults afterwards (Agent | Fault | Reason).

    \b
    Examples:
      vipu-admin inject fault --agent ipum3 --kind ipu --device 2 --reason drill
      vipu-admin inject fault --agent ipum3 --kind slow --delay-ms 1500
    """
    fault = _fault(kind.lower(), device, link, delay_ms, reason)
    reply = admin_client(ctx).inject_fault(agent, fault).raw
    _show_faults(reply, as_json, "inject", agent)


@click.command("fault", context_settings=CONTEXT)
@click.option("--agent", required=True, metavar="A", help="The agent to heal.")
@click.option("--all", "clear_all", is_flag=True, help="Clear every active fault.")
@click.option("--kind", type=_KIND_CHOICE, help="Clear the fault of this kind ...")
@click.option("--device", type=WholeNumber(0, 3), metavar="N", help="... on this IPU (ipu).")
@click.option("--link", metavar="L", help="... on this link (link).")
@json_option
@click.pass_context
def clear_fault(
    ctx: click.Context,
    agent: str,
    clear_all: bool,
    kind: str | None,
    device: int | None,
    link: str | None,
    as_json: bool,
) -> None:
    """Clear one injected fault (--kind and its target) or all of them (--all).

    \b
    Examples:
      vipu-admin clear fault --agent ipum3 --kind ipu --device 2
      vipu-admin clear fault --agent ipum3 --all
    """
    if clear_all == (kind is not None):
        raise CliError("say which faults to clear: --all, or --kind with its target", EXIT_USAGE)
    fault = None if kind is None else _fault(kind.lower(), device, link, 0, None)
    reply = admin_client(ctx).clear_fault(agent, fault).raw
    _show_faults(reply, as_json, "clear", agent)
