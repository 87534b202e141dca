"""A reservation plan as the cloud speaks of it (see ``vpod/cloud/reservations.py``)."""

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
class Reservation:
    id: str
    project_id: str
    flavor: str
    pool: str
    """The hardware it holds: ``ipu-machines`` or ``baremetal:MODEL``."""
    units: int
    """Clusters (vPODs) or GPU servers reserved."""
    per_unit: int
    """Pool units each takes (a vPOD-16: 4 IPU-Machines)."""
    term: str
    price_per_unit_month: Decimal
    starts_at: datetime
    ends_at: datetime
    cancelled_at: datetime | None = None
    billed_until: datetime | None = None
    """Charges stop then (cancellation); ``None``: at ``ends_at``."""

    def status_at(self, now: datetime) -> ReservationStatus:
        if self.cancelled_at is not None:
            return ReservationStatus.CANCELLED
        return ReservationStatus.ACTIVE if self.ends_at > now else ReservationStatus.EXPIRED

    @property
    def billed_end(self) -> datetime:
        return self.ends_at if self.billed_until is None else min(self.ends_at, self.billed_until)


@dataclass(frozen=True)
class PoolState:
    """A pool's unit rows and how many of them reservations hold now."""

    pool: str
    units: int
    held: int
