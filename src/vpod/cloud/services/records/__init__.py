"""The cloud's one door to its records: typed calls on the store, cloud model values out.

The store keeps rows (``vpod.store``: string statuses, JSON parameters); the
cloud speaks its model (:mod:`vpod.cloud.model`). :class:`CloudRecords` is
the only way the cloud's use-cases, operations and runner reach their
records: each method runs one store call through :class:`~.calls.CloudDb`
(on the event loop for SQLite, in threads for PostgreSQL, store errors as
cloud errors) and converts both ways (:mod:`.convert`), so no store type
passes it. The methods are grouped by concept, one module each; an
import-linter contract keeps the rest of ``vpod.cloud`` off ``vpod.store``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vpod.store.cloud_store import CloudStore

from .calls import CloudDb
from .clusters import ClusterRecords
from .datasets import DatasetRecords
from .hosts import HostRecords
from .keypairs import KeypairRecords
from .metering import MeterRecords
from .projects import ProjectRecords, QuotaAdmit
from .reservations import PoolAdmit, ReservationRecords
from .ssh_ports import SshPortRecords
from .tasks import TaskRecords
from .volumes import VolumeClaims, VolumeRecords

if TYPE_CHECKING:
    from vpod.store import Store


class CloudRecords(
    ProjectRecords,
    ClusterRecords,
    VolumeRecords,
    TaskRecords,
    HostRecords,
    KeypairRecords,
    DatasetRecords,
    ReservationRecords,
    MeterRecords,
    SshPortRecords,
):
    """Every typed call the cloud makes on its records."""

    @classmethod
    def of(cls, store: Store) -> CloudRecords:
        """The records of the cloud's tables in ``store``'s database (same engine and pool)."""
        tables = CloudStore.of(store)
        return cls(tables, CloudDb(tables))

    def close(self) -> None:
        """Stop the threads store calls run in (PostgreSQL)."""
        self._db.close()


__all__ = ["CloudRecords", "PoolAdmit", "QuotaAdmit", "VolumeClaims"]
