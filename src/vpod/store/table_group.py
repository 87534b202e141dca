"""The base of the stores that keep some of the tables on a database the :class:`~.store.Store`
(or the :class:`~.cloud_store.CloudStore`) opened: agent tokens, partition keys, dataset
storage, GPU hosts, keypairs, reservations and SSH ports each hold only their own queries."""

from __future__ import annotations

from typing import Self

from .engine import Database


class TableGroup:
    """Queries over a group of tables, one transaction per call, on one :class:`Database`."""

    def __init__(self, database: Database) -> None:
        self._db = database

    @classmethod
    def of(cls, store: object) -> Self:
        """The same tables on ``store``'s database (a :class:`~vpod.store.Store`)."""
        return cls(store._db)  # type: ignore[attr-defined]
