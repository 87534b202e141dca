"""Reservation plans and the pool units they hold."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from vpod.store.reservation_store import PoolState as PoolRow

from ...model.reservations import PoolState, Reservation
from .base import RecordsBase
from .convert import pool_state_of, reservation_of, row_of_reservation

PoolAdmit = Callable[[PoolState], None]
"""Raises to refuse a purchase, given the pool as it is inside the transaction."""


class ReservationRecords(RecordsBase):
    async def buy_reservation(
        self, reservation: Reservation, pool_units: int, admit: PoolAdmit
    ) -> None:
        """Record ``reservation`` holding its units of a pool of ``pool_units``, if admitted."""

        def check(state: PoolRow) -> None:
            admit(pool_state_of(state))

        await self._db(
            self._store.reservations.buy, row_of_reservation(reservation), pool_units, check
        )

    async def get_reservation(self, reservation_id: str) -> Reservation:
        return reservation_of(await self._db(self._store.reservations.get, reservation_id))

    async def list_reservations(
        self, *, project_id: str | None = None, holding_at: datetime | None = None
    ) -> list[Reservation]:
        """A project's reservations (every project's without); those holding units at
        ``holding_at`` if given."""
        found = await self._db(
            self._store.reservations.list_reservations,
            project_id=project_id,
            holding_at=holding_at,
        )
        return [reservation_of(r) for r in found]

    async def cancel_reservation(
        self, reservation_id: str, at: datetime, billed_until: datetime
    ) -> None:
        """Release the reservation's units at once; charges run to ``billed_until``."""
        await self._db(self._store.reservations.cancel, reservation_id, at, billed_until)
