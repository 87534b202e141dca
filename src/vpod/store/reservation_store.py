"""Reservation plans in the store: buy (units held row by row), list, cancel.

One transaction per call, like :class:`~vpod.store.cloud_store.CloudStore`,
on the same database. Buying first brings a pool's unit rows to the size the
caller measured, releases the units of reservations that ended, then holds
the lowest free units; the primary key and foreign key of
``cloud_reserved_units`` (see :mod:`.reservation_schema`) make holding a
unit twice, or one that does not exist, fail the whole transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, delete, func, insert, or_, select, update

from vpod.domain.cloud.reservations import PoolState, Reservation

from .cloud_projects import get_project
from .cloud_records import ReservationRecord
from .cloud_rows import one_by_id
from .errors import Conflict, NotFound
from .filters import where_given
from .reservation_schema import cloud_pool_units, cloud_reservations, cloud_reserved_units
from .row_records import record_of, values_of
from .table_group import TableGroup

Admit = Callable[[PoolState], None]
"""Raises to refuse a purchase, given the pool as it is inside the transaction."""


def _record(row: Any) -> Reservation:
    return record_of(Reservation, row, price_per_unit_month=Decimal(row.price_per_unit_month))


def not_found(reservation_id: str) -> NotFound:
    return NotFound(
        f"reservation {reservation_id} does not exist: `vpod reservation list` shows yours"
    )


def _count_units(conn: Connection, pool: str) -> int:
    query = select(func.count()).select_from(cloud_pool_units)
    return int(conn.execute(query.where(cloud_pool_units.c.pool == pool)).scalar_one())


class ReservationStore(TableGroup):
    def buy(self, reservation: Reservation, pool_units: int, admit: Admit) -> None:
        """Record ``reservation`` holding ``units × per_unit`` units of its pool.

        ``pool_units`` is the pool's size now; ``admit`` sees the pool after
        the expired holdings are released and may refuse. Conflict if the
        pool has too few free unit rows (the database's constraints agree).
        """
        need = reservation.units * reservation.per_unit
        with self._db.write() as conn:
            get_project(conn, reservation.project_id, lock=True)
            self._release_ended(conn, reservation.starts_at)
            self._resize_pool(conn, reservation.pool, pool_units)
            state = self._state(conn, reservation.pool)
            admit(state)
            free = (
                conn.execute(
                    select(cloud_pool_units.c.unit)
                    .where(
                        cloud_pool_units.c.pool == reservation.pool,
                        cloud_pool_units.c.unit.not_in(
                            select(cloud_reserved_units.c.unit).where(
                                cloud_reserved_units.c.pool == reservation.pool
                            )
                        ),
                    )
                    .order_by(cloud_pool_units.c.unit)
                    .limit(need)
                )
                .scalars()
                .all()
            )
            if len(free) < need:
                raise Conflict(
                    f"pool {reservation.pool} has {state.units - state.held} unreserved units,"
                    f" {need} are needed",
                    retryable=False,
                )
            price = str(reservation.price_per_unit_month)
            values = values_of(reservation, price_per_unit_month=price)
            conn.execute(insert(cloud_reservations).values(**values))
            conn.execute(
                insert(cloud_reserved_units),
                [
                    {"pool": reservation.pool, "unit": unit, "reservation_id": reservation.id}
                    for unit in free
                ],
            )

    def _release_ended(self, conn: Connection, now: datetime) -> None:
        ended = select(cloud_reservations.c.id).where(
            or_(
                cloud_reservations.c.ends_at <= now,
                cloud_reservations.c.cancelled_at.is_not(None),
            )
        )
        conn.execute(
            delete(cloud_reserved_units).where(cloud_reserved_units.c.reservation_id.in_(ended))
        )

    def _resize_pool(self, conn: Connection, pool: str, units: int) -> None:
        have = conn.execute(
            select(func.count())
            .select_from(cloud_pool_units)
            .where(cloud_pool_units.c.pool == pool)
        ).scalar_one()
        if have < units:
            conn.execute(
                insert(cloud_pool_units),
                [{"pool": pool, "unit": n} for n in range(have, units)],
            )
        elif have > units:  # hardware went away: drop the top units no reservation holds
            held = select(cloud_reserved_units.c.unit).where(cloud_reserved_units.c.pool == pool)
            conn.execute(
                delete(cloud_pool_units).where(
                    cloud_pool_units.c.pool == pool,
                    cloud_pool_units.c.unit >= units,
                    cloud_pool_units.c.unit.not_in(held),
                )
            )

    def _state(self, conn: Connection, pool: str) -> PoolState:
        units = conn.execute(
            select(func.count())
            .select_from(cloud_pool_units)
            .where(cloud_pool_units.c.pool == pool)
        ).scalar_one()
        held = conn.execute(
            select(func.count())
            .select_from(cloud_reserved_units)
            .where(cloud_reserved_units.c.pool == pool)
        ).scalar_one()
        return PoolState(pool, int(units), int(held))

    def pool_state(self, pool: str) -> PoolState:
        with self._db.read(snapshot=True) as conn:
            return self._state(conn, pool)

    def get(self, reservation_id: str) -> Reservation:
        return _record(self._db.run_read(one_by_id, cloud_reservations, reservation_id, not_found))

    def list_reservations(
        self, *, project_id: str | None = None, holding_at: datetime | None = None
    ) -> list[Reservation]:
        """Reservations (of a project), oldest first; ``holding_at``: only those holding
        capacity at that moment."""
        table = cloud_reservations

        def holding() -> ColumnElement[bool]:
            return and_(
                table.c.starts_at <= holding_at,
                table.c.ends_at > holding_at,
                table.c.cancelled_at.is_(None),
            )

        query = where_given(
            select(table).order_by(table.c.starts_at, table.c.id),
            (project_id, lambda: table.c.project_id == project_id),
            (holding_at, holding),
        )
        with self._db.read() as conn:
            return [_record(row) for row in conn.execute(query)]

    def cancel(self, reservation_id: str, at: datetime, billed_until: datetime) -> None:
        """Release the reservation's units at once; charges run to ``billed_until``."""
        with self._db.write() as conn:
            done = conn.execute(
                update(cloud_reservations)
                .where(
                    cloud_reservations.c.id == reservation_id,
                    cloud_reservations.c.cancelled_at.is_(None),
                )
                .values(cancelled_at=at, billed_until=billed_until)
            ).rowcount
            if not done:
                raise Conflict(
                    f"reservation {reservation_id} is cancelled already", retryable=False
                )
            conn.execute(
                delete(cloud_reserved_units).where(
                    cloud_reserved_units.c.reservation_id == reservation_id
                )
            )

    def held_units(self, pool: str) -> dict[str, int]:
        """Reservation id -> pool units it holds (for checks and tests)."""
        with self._db.read() as conn:
            rows = conn.execute(
                select(cloud_reserved_units.c.reservation_id, func.count())
                .where(cloud_reserved_units.c.pool == pool)
                .group_by(cloud_reserved_units.c.reservation_id)
            )
            return {str(r[0]): int(r[1]) for r in rows}


__all__ = ["Admit", "PoolState", "ReservationRecord", "ReservationStore", "not_found"]
