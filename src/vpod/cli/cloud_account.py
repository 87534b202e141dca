"""What a project is offered, billed and allowed: ``vpod flavors``, ``vpod invoice``,
``vpod project``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from .cloud_options import ApiRecord, connection_options, moment, shows
from .cloud_output import (
    emit,
    flavors_table,
    invoice_text,
)
from .render import details, table
from .short_help import CONTEXT

if TYPE_CHECKING:
    from vpod.client import CloudClient


@click.command("flavors", context_settings=CONTEXT)
@shows(flavors_table)
def flavors(client: CloudClient) -> Sequence[ApiRecord]:
    """The flavor catalog: what each gives, its price and how many fit now (Capacity)."""
    return client.flavors()


# -- volumes -----------------------------------------------------------------------------------


@click.command("invoice", context_settings=CONTEXT)
@click.option(
    "--from",
    "start",
    default=None,
    metavar="DATE",
    help="Start (UTC unless zoned; default: the 1st of the month).",
)
@click.option("--to", "end", default=None, metavar="DATE", help="End, excluded (default: now).")
@click.option(
    "--per-day",
    is_flag=True,
    help="The total of each day (24 hours from --from; at most 366 days) instead of the lines.",
)
@shows(invoice_text)
def invoice(client: CloudClient, start: str | None, end: str | None, per_day: bool) -> ApiRecord:
    """Your project's invoice for a period, per minute and per resource (or per day)."""
    first, last = moment(start, "--from"), moment(end, "--to")
    return client.invoice_days(first, last) if per_day else client.invoice(first, last)


def _project_text(project: dict[str, Any]) -> str:
    head = details([("Project", project["id"]), ("Name", project["name"])])
    rows = [
        [name, project["usage"].get(name, 0), "unlimited" if limit == -1 else limit]
        for name, limit in project["quotas"].items()
    ]
    return f"{head}\n\n{table(['Quota', 'Used', 'Limit'], rows)}"


@click.command("project", context_settings=CONTEXT)
@click.option(
    "--check-flavor",
    default=None,
    metavar="FLAVOR",
    help="Also say whether a cluster of FLAVOR would fit the quotas.",
)
@click.option("--servers", type=click.IntRange(1, 32), default=None, help="With --check-flavor.")
@connection_options
def project(
    client: CloudClient, check_flavor: str | None, servers: int | None, as_json: bool
) -> None:
    """Your project: quotas and what is used; --check-flavor runs check_limits."""
    found = client.project().raw
    if check_flavor is None:
        emit(found, as_json, _project_text)
        return
    limits = client.check_limits(check_flavor, server_count=servers).raw
    if as_json:
        emit({"project": found, "limits": limits}, True, str)
        return
    click.echo(_project_text(found))
    if limits["fits"]:
        click.echo(f"\n{check_flavor}: fits the quotas")
    else:
        click.echo(f"\n{check_flavor}: does not fit:")
        for over in limits["exceeded"]:
            click.echo(f"  {over['message']}")
