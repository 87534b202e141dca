"""Persistence: the only package that imports SQLAlchemy.

Public surface::

    from vpod.store import Store, sqlite_url
    store = Store.open(sqlite_url(data_dir))      # or "postgresql+psycopg://..."
    store.migrate()                                # create / upgrade the schema
    store.add_agent(agent); store.add_cluster(cluster); ...
    occupancy = store.occupancy(cluster_id)        # -> placement Snapshot via .snapshot()
    store.reserve_partition(record)                # Conflict if an IPU is taken

Errors (``vpod.store.errors``): ``StoreError`` > ``NotFound``,
``AlreadyExists``, ``Conflict``, ``Unavailable``. Values
(``vpod.store.records``): ``PartitionRecord``, ``PartitionIpu``,
``Occupancy``, ``AgentHealth``, ``AuditEvent``, ``Lease``. See docs/store.md.
"""

from .engine import EngineOptions, sqlite_url
from .errors import AlreadyExists, Conflict, NotFound, StoreError, Unavailable
from .records import (
    AgentHealth,
    AgentHealthState,
    AuditEvent,
    Lease,
    Occupancy,
    PartitionChanges,
    PartitionIpu,
    PartitionRecord,
    ipus_of_placement,
)
from .store import Store

__all__ = [
    "AgentHealth",
    "AgentHealthState",
    "AlreadyExists",
    "AuditEvent",
    "Conflict",
    "EngineOptions",
    "Lease",
    "NotFound",
    "Occupancy",
    "PartitionChanges",
    "PartitionIpu",
    "PartitionRecord",
    "Store",
    "StoreError",
    "Unavailable",
    "ipus_of_placement",
    "sqlite_url",
]
