"""``vpod reservation create|list|show|cancel``: reservation plans (docs/cloud.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from .cloud_options import ApiRecord, connection_options, moment, shows
from .cloud_output import emit
from .render import details, table
from .short_help import CONTEXT, FittingGroup

if TYPE_CHECKING:
    from vpod.client import CloudClient


def _day(stamp: str | None) -> str:
    return stamp[:10] if stamp else "-"


def _used(r: dict[str, Any]) -> str:
    return f"{r['utilisation']['ratio'] * 100:.1f} %"


def reservations_table(found: Sequence[dict[str, Any]]) -> str:
    return table(
        ["Id", "Flavor", "Units", "Term", "Status", "Per month", "Starts", "Ends", "Used"],
        [
            [
                r["id"],
                r["flavor"],
                r["units"],
                r["term"],
                r["status"],
                f"{r['price_per_month']} {r['currency']}",
                _day(r["starts_at"]),
                _day(r["ends_at"]),
                _used(r),
            ]
            for r in found
        ],
    )


def reservation_text(r: dict[str, Any]) -> str:
    use = r["utilisation"]
    return details(
        [
            ("Reservation", r["id"]),
            ("Flavor", r["flavor"]),
            ("Units", f"{r['units']} ({r['pool_units']} units of pool {r['pool']})"),
            ("Term", r["term"]),
            ("Status", r["status"]),
            ("Price", f"{r['price_per_unit_month']} {r['currency']} per unit-month"),
            ("Per month", f"{r['price_per_month']} {r['currency']}"),
            ("Starts", r["starts_at"]),
            ("Ends", r["ends_at"]),
            ("Cancelled", r["cancelled_at"] or "-"),
            ("Billed until", r["billed_until"]),
            (
                "Utilisation",
                f"{_used(r)} ({use['used_unit_minutes']} of {use['reserved_unit_minutes']}"
                f" unit-minutes, {use['start']} to {use['end']})",
            ),
        ]
    )


_period = [
    click.option("--from", "start", default=None, metavar="DATE", help="Utilisation from."),
    click.option("--to", "end", default=None, metavar="DATE", help="Utilisation to, excluded."),
]


@click.group("reservation", context_settings=CONTEXT, cls=FittingGroup)
def reservation() -> None:
    """Reservation plans: capacity held for your project for a term, billed monthly."""


@reservation.command("create")
@click.option("--flavor", required=True, help="A virtual vPOD or GPU bare-metal flavor.")
@click.option("--units", type=click.IntRange(1, 1000), required=True, help="vPODs or servers.")
@click.option("--term", default="1y", show_default=True, help="1y or 3y unless configured.")
@shows(reservation_text)
def reservation_create(client: CloudClient, flavor: str, units: int, term: str) -> ApiRecord:
    """Reserve UNITS of FLAVOR for TERM (refused with the numbers when they do not fit)."""
    return client.create_reservation(flavor, units, term)


@reservation.command("list")
@_period[0]
@_period[1]
@shows(reservations_table)
def reservation_list(
    client: CloudClient, start: str | None, end: str | None
) -> Sequence[ApiRecord]:
    """Your reservations with their utilisation over a period (default: this month)."""
    return client.list_reservations(moment(start, "--from"), moment(end, "--to"))


@reservation.command("show")
@click.argument("reservation_id", metavar="RESERVATION")
@_period[0]
@_period[1]
@shows(reservation_text)
def reservation_show(
    client: CloudClient, reservation_id: str, start: str | None, end: str | None
) -> ApiRecord:
    """One reservation."""
    return client.get_reservation(reservation_id, moment(start, "--from"), moment(end, "--to"))


@reservation.command("cancel")
@click.argument("reservation_id", metavar="RESERVATION")
@connection_options
def reservation_cancel(client: CloudClient, reservation_id: str, as_json: bool) -> None:
    """Cancel: the capacity is released now, charges run to the end of this month (UTC)."""
    emit(client.cancel_reservation(reservation_id).raw, as_json, reservation_text)
