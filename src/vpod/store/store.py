"""The :class:`Store`: every persistent fact of the controller, one transaction per call.

The controller calls it from an async service layer through a thread
executor, so every method is synchronous, thread-safe (each call checks a
connection out of the engine's pool) and returns plain frozen values. Two
stores on the same database, in one process or in two controller replicas,
never hand out the same machine or IPU twice: the database's constraints
decide (see :mod:`vpod.store.schema`), and the loser gets a
:class:`~vpod.store.errors.Conflict` to retry with a fresh snapshot.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from functools import partial
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar, Unpack

from sqlalchemy import Connection, text

from vpod.domain.entities import Agent, Allocation, Cluster, User
from vpod.domain.partition_states import ReadyState

from . import agents as agent_rows
from . import allocations as allocation_rows
from . import clusters as cluster_rows
from . import events as event_rows
from . import inventory_version as inventory_versions
from . import leases as lease_rows
from . import partitions as partition_rows
from . import schema_version
from . import users as user_rows
from .engine import Database, EngineOptions, create_store_engine
from .errors import NotFound, StoreError
from .occupancy import read_occupancy
from .records import (
    AgentHealth,
    AgentHealthState,
    AuditEntry,
    AuditEvent,
    Lease,
    Occupancy,
    PartitionChanges,
    PartitionRecord,
)
from .translate import ConstraintViolated

P = ParamSpec("P")
T = TypeVar("T")


class Store:
    """The controller's database: agents, clusters, allocations, users, partitions, audit, leases.

    Open with :meth:`open`, create or upgrade the schema with :meth:`migrate`,
    and :meth:`close` when done (or use it as a context manager).
    """

    def __init__(self, database: Database) -> None:
        """Use :meth:`open`."""
        self._db = database

    # -- life cycle -------------------------------------------------------------------------

    @classmethod
    def open(cls, url: str, options: EngineOptions | None = None) -> Store:
        """A store on ``url`` (see :func:`vpod.store.sqlite_url`); connects on first use.

        Raises :class:`~vpod.store.errors.Unavailable` for a URL it cannot use.
        """
        return cls(Database(create_store_engine(url, options), options))

    def migrate(self) -> None:
        """Create the schema, or upgrade it to this version's; safe to run from many replicas.

        A database already at head is left alone after one query, and an empty SQLite
        database gets the schema at head in one transaction (:mod:`.fresh_sqlite`); Alembic
        (a third of a second to import and set up) is loaded only to upgrade.
        """
        if schema_version.at_head(self._db):
            return
        from . import fresh_sqlite  # only when the schema is not at head

        if fresh_sqlite.create_if_empty(self._db):  # a new SQLite store: no replay
            return
        from . import migrate as migrations  # see schema_version: Alembic only when needed

        migrations.upgrade(self._db)

    def schema_revision(self) -> str | None:
        """The schema revision of the database (``None`` before :meth:`migrate`)."""
        from . import migrate as migrations  # not on any start-up path: Alembic says

        return migrations.current_revision(self._db)

    def ping(self) -> None:
        """Check the database answers; raise :class:`~vpod.store.errors.Unavailable` if not."""
        with self._db.read() as conn:
            conn.execute(text("SELECT 1"))

    def close(self) -> None:
        """Close every pooled connection; the store must not be used afterwards."""
        self._db.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def url(self) -> str:
        """The database URL without its password."""
        return self._db.description

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._db.dialect

    # -- agents -----------------------------------------------------------------------------

    def add_agent(self, agent: Agent) -> Agent:
        """Register an agent (health UNKNOWN); AlreadyExists if the id is taken."""
        self._db.run_explained(agent_rows.insert_agent, agent_rows.explain_insert_refused, agent)
        return agent

    def update_agent(self, agent: Agent) -> Agent:
        """Replace an agent's address, machine type and serial."""
        self._db.run_write(agent_rows.update_agent, agent)
        return agent

    def get_agent(self, agent_id: str) -> Agent:
        return self._db.run_read(agent_rows.get_agent, agent_id)

    def find_agent(self, agent_id: str) -> Agent | None:
        """The agent, or ``None`` if it is not registered."""
        return self._db.run_read(_or_none, agent_rows.get_agent, agent_id)

    def inventory_version(self) -> int:
        """A number that moves whenever agents (but their health), agent keys, clusters or
        allocations change, whoever changes them (see :mod:`.inventory_version`)."""
        return self._db.run_read(inventory_versions.read)

    def list_agents(self, ids: Sequence[str] | None = None) -> list[Agent]:
        """Every agent (or those among ``ids``), by id."""
        return self._db.run_read(agent_rows.list_agents, ids)

    def set_agent_key(self, agent_id: str, host: str, port: int, key: str, *, at: datetime) -> None:
        """Record the key an agent answers to (it outlives the agent's removal)."""
        self._db.run_write(agent_rows.set_agent_key, agent_id, host, port, key, at)

    def agent_key_of(self, agent_id: str) -> str | None:
        return self._db.run_read(agent_rows.agent_key_of, agent_id)

    def agent_key_at(self, host: str, port: int) -> str | None:
        """The key of the agent that last registered from ``host:port``, if any."""
        return self._db.run_read(agent_rows.agent_key_at, host, port)

    def remove_agent(self, agent_id: str) -> None:
        """Unregister an agent; Conflict while a cluster uses it."""
        self._db.run_explained(agent_rows.delete_agent, agent_rows.explain_delete_refused, agent_id)

    def set_agent_health(
        self,
        agent_id: str,
        state: AgentHealthState,
        *,
        at: datetime | None = None,
        reason: str = "",
    ) -> AgentHealth:
        """Record whether an agent answers; ``at`` is its last heartbeat (kept if ``None``)."""
        with self._db.write() as conn:
            agent_rows.set_health(conn, agent_id, state, at=at, reason=reason)
            return agent_rows.get_health(conn, agent_id)

    def set_agent_heartbeats(self, times: Mapping[str, datetime]) -> None:
        """Record the last heartbeat of many agents in one transaction (agent id -> when)."""
        self._db.run_write(agent_rows.set_heartbeats, times)

    def set_agent_faults(self, agent_id: str, faults: Mapping[int, str]) -> None:
        """Replace the faulty IPUs an agent's machine reports: device id (0..3) -> why.

        Every replica's :meth:`occupancy` then keeps those IPUs out of placement.
        Call it when the faults change (a heartbeat that differs), not every round.
        """
        self._db.run_write(agent_rows.set_faults, agent_id, faults)

    def agent_faults(self) -> dict[str, dict[int, str]]:
        """The agents whose machine last reported faulty IPUs: agent id -> device id -> why."""
        return self._db.run_read(agent_rows.list_faults)

    def get_agent_health(self, agent_id: str) -> AgentHealth:
        return self._db.run_read(agent_rows.get_health, agent_id)

    def set_ipuof_facts(self, agent_id: str, facts: Mapping[str, Any]) -> None:
        """Record the IPUoF details an agent reported (JSON-able), for when it cannot answer."""
        self._db.run_write(agent_rows.set_ipuof_facts, agent_id, facts)

    def ipuof_facts(self, agent_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The recorded IPUoF details of those of ``agent_ids`` that have any."""
        return self._db.run_read(agent_rows.ipuof_facts, agent_ids)

    def list_agent_health(self) -> list[AgentHealth]:
        return self._db.run_read(agent_rows.list_health)

    # -- clusters ---------------------------------------------------------------------------

    def add_cluster(self, cluster: Cluster) -> Cluster:
        """Define a cluster of registered agents, none of them in another cluster."""
        self._db.run_explained(
            cluster_rows.insert_cluster, cluster_rows.explain_insert_refused, cluster
        )
        return cluster

    def get_cluster(self, cluster_id: str) -> Cluster:
        return self._db.run_snapshot(cluster_rows.get_cluster, cluster_id)

    def find_cluster(self, cluster_id: str) -> Cluster | None:
        return self._db.run_snapshot(_or_none, cluster_rows.get_cluster, cluster_id)

    def list_clusters(self) -> list[Cluster]:
        return self._db.run_snapshot(cluster_rows.list_clusters)

    def remove_cluster(self, cluster_id: str) -> None:
        """Delete a cluster (its agents stay registered); Conflict while it has allocations."""
        self._db.run_explained(
            cluster_rows.delete_cluster, cluster_rows.explain_delete_refused, cluster_id
        )

    # -- allocations ------------------------------------------------------------------------

    def add_allocation(self, allocation: Allocation) -> Allocation:
        """Record an allocation; Conflict (retryable) if one of its machines is taken."""
        self._db.run_explained(
            allocation_rows.insert_allocation, allocation_rows.explain_insert_refused, allocation
        )
        return allocation

    def get_allocation(self, allocation_id: str) -> Allocation:
        return self._db.run_snapshot(allocation_rows.get_allocation, allocation_id)

    def find_allocation(self, allocation_id: str) -> Allocation | None:
        return self._db.run_snapshot(_or_none, allocation_rows.get_allocation, allocation_id)

    def list_allocations(
        self, *, ids: Collection[str] | None = None, cluster_id: str | None = None
    ) -> list[Allocation]:
        """Allocations by id; only ``ids`` and/or those of ``cluster_id`` when given."""
        return self._db.run_read(allocation_rows.list_allocations, ids=ids, cluster_id=cluster_id)

    def set_allocation_hosts(self, allocation_id: str, hosts: Sequence[str]) -> None:
        """Replace who may attach to the allocation's IPUs over IPUoF; NotFound if unknown."""
        self._db.run_write(allocation_rows.set_hosts, allocation_id, hosts)

    def remove_allocation(self, allocation_id: str) -> None:
        """Delete an allocation and its grants; Conflict while it has partitions."""
        self._db.run_explained(
            allocation_rows.delete_allocation, allocation_rows.explain_delete_refused, allocation_id
        )

    # -- users ------------------------------------------------------------------------------

    def add_user(self, user: User, key_hash: str, *, created_at: datetime | None = None) -> User:
        """Record a user with the hash of its access key and its granted allocations.

        ``created_at`` (the caller's clock) is what :meth:`user_times` reports.
        """
        explain = partial(self._explain, user_rows.explain_insert_refused, user)
        with self._db.write(explain) as conn:
            user_rows.insert_user(conn, user, key_hash, created_at)
            return user_rows.get_user(conn, user.id)

    def get_user(self, user_id: str) -> User:
        return self._db.run_snapshot(user_rows.get_user, user_id)

    def user_access(self, user_id: str) -> tuple[str, int] | None:
        """The user's access-key hash and access version, or ``None``: one primary-key read,
        for every call (the version moves with every change to what the user may do)."""
        return self._db.run_read(_or_none, user_rows.get_access, user_id)

    def find_user_with_access(self, user_id: str) -> tuple[User, str, int] | None:
        """The user, its access-key hash and access version, read together, or ``None``."""
        with self._db.read(snapshot=True) as conn:
            user = _or_none(conn, user_rows.get_user, user_id)
            if user is None:
                return None
            return (user, *user_rows.get_access(conn, user_id))

    def find_user_with_hash(self, user_id: str) -> tuple[User, str] | None:
        """The user and its access-key hash, or ``None`` (for authentication)."""
        with self._db.read(snapshot=True) as conn:
            user = _or_none(conn, user_rows.get_user, user_id)
            if user is None:
                return None
            return user, user_rows.get_key_hash(conn, user_id)

    def list_users(self) -> list[User]:
        return self._db.run_snapshot(user_rows.list_users)

    def user_times(self) -> dict[str, datetime | None]:
        """When each user was created, by user id; ``None`` if created before vpod kept it."""
        return self._db.run_read(user_rows.creation_times)

    def get_user_key_hash(self, user_id: str) -> str:
        return self._db.run_read(user_rows.get_key_hash, user_id)

    def set_user_key_hash(self, user_id: str, key_hash: str) -> None:
        """Replace a user's access-key hash (a new key)."""
        self._db.run_write(user_rows.set_key_hash, user_id, key_hash)

    def set_user_admin(self, user_id: str, admin: bool) -> User:
        with self._db.write() as conn:
            user_rows.set_admin(conn, user_id, admin)
            return user_rows.get_user(conn, user_id)

    def remove_user(self, user_id: str) -> None:
        self._db.run_write(user_rows.delete_user, user_id)

    def grant_allocation(self, user_id: str, allocation_id: str) -> User:
        """Let ``user_id`` use ``allocation_id`` (granting twice is harmless)."""
        explain = partial(self._explain, user_rows.explain_grant_refused, user_id, allocation_id)
        with self._db.write(explain) as conn:
            user_rows.grant(conn, user_id, allocation_id)
            return user_rows.get_user(conn, user_id)

    def revoke_allocation(self, user_id: str, allocation_id: str) -> User:
        """Stop ``user_id`` using ``allocation_id`` (revoking what was not granted is harmless)."""
        with self._db.write() as conn:
            user_rows.revoke(conn, user_id, allocation_id)
            return user_rows.get_user(conn, user_id)

    # -- partitions -------------------------------------------------------------------------

    def reserve_partition(
        self, record: PartitionRecord, *, event: AuditEvent | None = None
    ) -> PartitionRecord:
        """Store a new partition and take its IPUs, all or nothing; return it at version 1.

        Raises AlreadyExists for a taken id, NotFound for a missing
        allocation, and a retryable Conflict naming the first IPU slot that
        another partition holds (or that lies outside the allocation).
        ``event`` is appended to the audit log in the same transaction.
        """
        explain = partial(self._explain, partition_rows.explain_reserve_refused, record)
        with self._db.write(explain) as conn:
            partition_rows.insert_partition(conn, record)
            _append_event(conn, event)
        # What was inserted is what the database holds (tests check the round trip),
        # so the hot path of partition creation skips reading it back.
        return dataclasses.replace(record, version=1)

    def update_partition(
        self,
        partition_id: str,
        *,
        expected_version: int,
        updated_at: datetime,
        event: AuditEvent | None = None,
        **changes: Unpack[PartitionChanges],
    ) -> PartitionRecord:
        """Compare-and-set: apply ``changes`` if the partition is still at ``expected_version``.

        Returns the partition at its new version. Conflict (retryable) if the
        version moved: re-read and decide again. New ``ipus`` replace the old
        ones in the same transaction (relocation), refused like a reservation
        if one is taken. ``event`` is appended to the audit log in the same
        transaction. Holding the record, prefer :meth:`update_partition_from`.
        """
        explain = partial(self._explain_update_refused, partition_id, changes)
        with self._db.write(explain) as conn:
            updated = partition_rows.update_partition(
                conn,
                partition_id,
                expected_version=expected_version,
                updated_at=updated_at,
                changes=changes,
            )
            _append_event(conn, event)
            return updated

    def update_partition_from(
        self,
        record: PartitionRecord,
        *,
        updated_at: datetime,
        event: AuditEvent | None = None,
        **changes: Unpack[PartitionChanges],
    ) -> PartitionRecord:
        """:meth:`update_partition` at ``record.version``, without reading the partition back.

        ``record`` must be as the store returned it; the result is ``record``
        with ``changes``, ``updated_at`` and the next version, which is what
        the database then holds. The cheapest write of a partition: one
        UPDATE (plus the IPU rows of a relocation, plus ``event``).
        """
        explain = partial(self._explain_update_refused, record.id, changes)
        with self._db.write(explain) as conn:
            updated = partition_rows.update_partition_from(
                conn, record, updated_at=updated_at, changes=changes
            )
            _append_event(conn, event)
            return updated

    def release_partition(
        self,
        partition_id: str,
        *,
        expected_version: int | None = None,
        event: AuditEvent | None = None,
    ) -> PartitionRecord:
        """Delete a partition and free its IPUs; return it as it was.

        Removed partitions are not kept (the audit log remembers them). With
        ``expected_version``, refuse (Conflict) if the partition changed since.
        ``event`` is appended to the audit log in the same transaction.
        Holding the record, prefer :meth:`release_partition_from`.
        """
        with self._db.write() as conn:
            released = partition_rows.delete_partition(
                conn, partition_id, expected_version=expected_version
            )
            _append_event(conn, event)
            return released

    def release_partition_from(
        self, record: PartitionRecord, *, event: AuditEvent | None = None
    ) -> PartitionRecord:
        """:meth:`release_partition` at ``record.version`` in one DELETE; returns ``record``.

        NotFound if the partition is gone, Conflict if it changed since
        ``record`` was read. ``event`` is appended in the same transaction.
        """
        with self._db.write() as conn:
            partition_rows.delete_partition_at(conn, record)
            _append_event(conn, event)
        return record

    def get_partition(self, partition_id: str) -> PartitionRecord:
        return self._db.run_snapshot(partition_rows.get_partition, partition_id)

    def find_partition(self, partition_id: str) -> PartitionRecord | None:
        return self._db.run_snapshot(_or_none, partition_rows.get_partition, partition_id)

    def list_partitions(
        self,
        *,
        ids: Collection[str] | None = None,
        allocation_ids: Collection[str] | None = None,
        cluster_id: str | None = None,
        ready_states: Collection[ReadyState] | None = None,
    ) -> list[PartitionRecord]:
        """Partitions by id, filtered by every criterion given."""
        with self._db.read(snapshot=True) as conn:
            return partition_rows.list_partitions(
                conn,
                ids=ids,
                allocation_ids=allocation_ids,
                cluster_id=cluster_id,
                ready_states=ready_states,
            )

    def occupancy(self, cluster_id: str) -> Occupancy:
        """What placement needs about a cluster, from one consistent snapshot."""
        return self._db.run_snapshot(read_occupancy, cluster_id)

    # -- audit events -----------------------------------------------------------------------

    def append_event(self, **entry: Unpack[AuditEntry]) -> AuditEvent:
        """Add one entry to the audit log; returns it with its id."""
        return self._db.run_write(event_rows.append, AuditEvent(**entry))

    def append_events(self, events: Iterable[AuditEvent]) -> list[AuditEvent]:
        """Add several entries to the audit log in one transaction; returns them with ids."""
        with self._db.write() as conn:
            return [event_rows.append(conn, event) for event in events]

    def list_events(self, **query: Unpack[event_rows.EventQuery]) -> list[AuditEvent]:
        """Audit entries matching every filter given, newest first (see ``events.list_events``)."""
        return self._db.run_read(event_rows.list_events, **query)

    def prune_events(self, *, before: datetime) -> int:
        """Delete audit entries older than ``before``; return how many."""
        return self._db.run_write(event_rows.prune, before=before)

    # -- leases -----------------------------------------------------------------------------

    def try_acquire_lease(
        self, name: str, holder: str, now: datetime, ttl: timedelta | float
    ) -> bool:
        """Take lease ``name`` for ``holder`` until ``now + ttl`` if it is free or already theirs.

        True if ``holder`` holds it afterwards. Portable SQL, safe between replicas.
        """
        return lease_rows.try_acquire(self._db, name, holder, now, ttl)

    def renew_lease(self, name: str, holder: str, now: datetime, ttl: timedelta | float) -> bool:
        """Extend a lease ``holder`` still holds; False if it expired or passed to another."""
        return self._db.run_write(lease_rows.renew, name, holder, now + lease_rows.as_ttl(ttl), now)

    def release_lease(self, name: str, holder: str) -> bool:
        """Give a lease up at once; False if ``holder`` did not hold it."""
        return lease_rows.give_up(self._db, name, holder)

    def get_lease(self, name: str) -> Lease | None:
        return self._db.run_read(lease_rows.get, name)

    # -- helpers ----------------------------------------------------------------------------

    def _explain_update_refused(self, partition_id: str, changes: PartitionChanges) -> StoreError:
        """Why an update broke a constraint: only new IPUs (a relocation) can."""
        new_ipus = changes.get("ipus")
        if new_ipus is None:
            return ConstraintViolated(f"partition {partition_id} could not be updated: retry")
        current = self.get_partition(partition_id)
        return self._explain(partition_rows.explain_ipus_refused, current, new_ipus)

    def _explain(
        self,
        explain: Callable[Concatenate[Connection, P], StoreError],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> StoreError:
        """Run an ``explain_*`` function in a fresh read transaction (after a rollback)."""
        return self._db.run_read(explain, *args, **kwargs)


def _append_event(conn: Connection, event: AuditEvent | None) -> None:
    """Record ``event`` in the caller's transaction: it commits with the change it describes."""
    if event is not None:
        event_rows.append(conn, event)


def _or_none(conn: Connection, get: Callable[[Connection, str], T], key: str) -> T | None:
    try:
        return get(conn, key)
    except NotFound:
        return None
