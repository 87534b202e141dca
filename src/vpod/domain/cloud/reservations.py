"""A reservation plan as the cloud speaks of it: what billing and capacity read of it (a
:class:`Plan`), and the reservation as kept (see ``vpod/cloud/reservations.py``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal


class ReservationStatus(enum.StrEnum):
    """Not stored: what a reservation is at a moment, from its times."""

    ACTIVE = "active"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Plan:
    """What billing and capacity need to know of one reservation (its rules:
    :mod:`vpod.cloud.reservations`)."""

    id: str
    project_id: str
    flavor: str
    units: int
    """Clusters (vPODs) or GPU servers reserved."""
    term: str
    price_per_unit_month: Decimal
    starts_at: datetime
    ends_at: datetime
    """The term's end."""
    cancelled_at: datetime | None = None
    """Capacity stops being held then."""
    billed_until: datetime | None = None
    """Charges stop then (cancellation policy); ``None``: at ``ends_at``."""

    @property
    def held_until(self) -> datetime:
        """When capacity stops being held: the term's end, or the cancellation."""
        return self.ends_at if self.cancelled_at is None else min(self.ends_at, self.cancelled_at)

    def holds_at(self, moment: datetime) -> bool:
        return self.starts_at <= moment < self.held_until

    @property
    def billed_end(self) -> datetime:
        return self.ends_at if self.billed_until is None else min(self.ends_at, self.billed_until)


@dataclass(frozen=True, kw_only=True)
class Reservation(Plan):
    """A plan as the cloud keeps it: with the pool of hardware it holds."""

    pool: str
    """The hardware it holds: ``ipu-machines`` or ``baremetal:MODEL``."""
    per_unit: int
    """Pool units each takes (a vPOD-16: 4 IPU-Machines)."""

    def status_at(self, now: datetime) -> ReservationStatus:
        if self.cancelled_at is not None:
            return ReservationStatus.CANCELLED
        return ReservationStatus.ACTIVE if self.ends_at > now else ReservationStatus.EXPIRED


@dataclass(frozen=True)
class PoolState:
    """A pool's unit rows and how many of them reservations hold now."""

    pool: str
    units: int
    held: int
