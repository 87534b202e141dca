"""Partitions: a ``partitions`` row (spec, state, bookkeeping) plus its ``partition_ipus``.

Reserving a partition inserts its row and one row per IPU in the caller's
transaction. The primary key of ``partition_ipus`` is (cluster_id, slot), so
of two concurrent reservations of one IPU exactly one commits; a foreign key
to ``allocation_machines`` keeps every IPU on a machine of the partition's
allocation. Updates are compare-and-set on ``version``. Releasing deletes the
IPU rows and the partition row: a removed partition is not kept (the audit
log remembers it), and its id can be used again.

Creating and removing partitions is the controller's hot path, so the
statements it runs are built once below, with bind parameters (SQLAlchemy
then reuses their compiled form), the version check lives in the WHERE
clause of the UPDATE or DELETE (a separate read only when it matched no
row, to say why), and nothing is read back that the caller already knows.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, Select, bindparam, delete, insert, select, update

from vpod.domain.catalog import IPUS_PER_MACHINE
from vpod.domain.partition_states import OperationState, PartitionState, ReadyState
from vpod.domain.partitions import PartitionSpec
from vpod.domain.routing import GwRouting, IpuLinkRouting, SyncType
from vpod.placement.snapshot import PartitionFootprint

from . import allocations as allocation_rows
from . import prepared
from .errors import Conflict, NotFound, StoreError
from .records import PartitionChanges, PartitionIpu, PartitionRecord
from .refusals import first_held, id_taken
from .row_records import record_of
from .schema import allocation_machines, allocations, partition_ipus, partitions
from .translate import decoding

_RETRY = "retry with a fresh snapshot"

# -- rows <-> records -----------------------------------------------------------------------


def _spec_values(spec: PartitionSpec) -> dict[str, Any]:
    return {
        "size": spec.size,
        "num_segments": spec.num_segments,
        "num_gcds": spec.num_gcds,
        "num_replicas": spec.num_replicas,
        "reconfigurable": spec.reconfigurable,
        "routing": spec.routing.name,
        "gw_routing": spec.gw_routing.name if spec.gw_routing is not None else None,
        "sync_type": spec.sync_type.name,
        "requested_ipus": [list(p) for p in spec.ipus] if spec.ipus is not None else None,
    }


def _spec(row: Row[Any]) -> PartitionSpec:
    return record_of(
        PartitionSpec,
        row,
        routing=IpuLinkRouting[row.routing],
        gw_routing=GwRouting[row.gw_routing] if row.gw_routing is not None else None,
        sync_type=SyncType[row.sync_type],
        ipus=(
            tuple((int(d), int(p)) for d, p in row.requested_ipus)
            if row.requested_ipus is not None
            else None
        ),
    )


@decoding("partition")
def _record(row: Row[Any], ipus: Iterable[PartitionIpu]) -> PartitionRecord:
    return record_of(
        PartitionRecord,
        row,
        spec=_spec(row),
        ipus=tuple(ipus),
        state=PartitionState(ReadyState[row.ready_state], OperationState[row.operation_state]),
        errors=tuple(row.errors),
    )


def _state_values(state: PartitionState) -> dict[str, str]:
    return {"ready_state": state.ready.name, "operation_state": state.operation.name}


def _ipu_query() -> Select[Any]:
    return select(
        partition_ipus.c.partition_id,
        partition_ipus.c.slot,
        partition_ipus.c.routing_id,
        partition_ipus.c.segment,
        partition_ipus.c.gcd,
    ).order_by(partition_ipus.c.partition_id, partition_ipus.c.routing_id)


def _ipus_by_partition(conn: Connection, query: Select[Any]) -> dict[str, list[PartitionIpu]]:
    found: dict[str, list[PartitionIpu]] = defaultdict(list)
    for pid, slot, routing_id, segment, gcd in conn.execute(query):
        found[pid].append(PartitionIpu(slot=slot, routing_id=routing_id, segment=segment, gcd=gcd))
    return found


# -- statements of the hot path, built once -------------------------------------------------
# Bind parameter names start with "b_" so that they never clash with the columns an
# UPDATE sets from the execution's parameters.

_INSERT_PARTITION = insert(partitions)
_INSERT_IPUS = insert(partition_ipus)
_SELECT_PARTITION = select(partitions).where(partitions.c.id == bindparam("b_id"))
_SELECT_IPUS = _ipu_query().where(partition_ipus.c.partition_id == bindparam("b_id"))
_SELECT_VERSION = select(partitions.c.version).where(partitions.c.id == bindparam("b_id"))
_AT_VERSION = (partitions.c.id == bindparam("b_id"), partitions.c.version == bindparam("b_version"))
_UPDATE_AT_VERSION = update(partitions).where(*_AT_VERSION)
_UPDATE_AT_VERSION_RETURNING = _UPDATE_AT_VERSION.returning(*partitions.c)
_DELETE_AT_VERSION = delete(partitions).where(*_AT_VERSION)
_DELETE_RETURNING = (
    delete(partitions).where(partitions.c.id == bindparam("b_id")).returning(*partitions.c)
)
_DELETE_AT_VERSION_RETURNING = _DELETE_AT_VERSION.returning(*partitions.c)
_DELETE_IPUS = delete(partition_ipus).where(partition_ipus.c.partition_id == bindparam("b_id"))
_DELETE_IPUS_RETURNING = _DELETE_IPUS.returning(
    partition_ipus.c.slot,
    partition_ipus.c.routing_id,
    partition_ipus.c.segment,
    partition_ipus.c.gcd,
)


# -- reserve --------------------------------------------------------------------------------


def _insert_ipus(conn: Connection, record: PartitionRecord, ipus: tuple[PartitionIpu, ...]) -> None:
    cid, pid, aid = record.cluster_id, record.id, record.allocation_id
    prepared.execute_many(
        conn,
        _INSERT_IPUS,
        [
            {
                "cluster_id": cid,
                "slot": ipu.slot,
                "partition_id": pid,
                "allocation_id": aid,
                "machine": ipu.slot // IPUS_PER_MACHINE,
                "routing_id": ipu.routing_id,
                "segment": ipu.segment,
                "gcd": ipu.gcd,
            }
            for ipu in ipus
        ],
    )


def insert_partition(conn: Connection, record: PartitionRecord) -> None:
    """Insert the partition at version 1 with its IPUs; constraints refuse a taken IPU."""
    prepared.execute(
        conn,
        _INSERT_PARTITION,
        {
            "id": record.id,
            "cluster_id": record.cluster_id,
            "allocation_id": record.allocation_id,
            **_spec_values(record.spec),
            **_state_values(record.state),
            "errors": list(record.errors),
            "disable_auto_reset": record.disable_auto_reset,
            "relocatable": record.relocatable,
            "max_auto_reset_retries": record.max_auto_reset_retries,
            "auto_reset_retry_count": record.auto_reset_retry_count,
            "last_auto_reset_time": record.last_auto_reset_time,
            "created_at": record.created_at,
            "updated_at": record.updated_at,
            "version": 1,
            "operation_owner": record.operation_owner,
        },
    )
    _insert_ipus(conn, record, record.ipus)


def explain_reserve_refused(conn: Connection, record: PartitionRecord) -> StoreError:
    """Why a reservation was refused: the id, the allocation, or the first IPU in the way."""
    pid = record.id
    taken_id = id_taken(conn, partitions.c.id, "partition", pid)
    if taken_id is not None:
        return taken_id
    return explain_ipus_refused(conn, record, record.ipus)


def explain_ipus_refused(
    conn: Connection, record: PartitionRecord, ipus: tuple[PartitionIpu, ...]
) -> StoreError:
    pid, aid, cid = record.id, record.allocation_id, record.cluster_id
    home = conn.scalar(select(allocations.c.cluster_id).where(allocations.c.id == aid))
    if home is None:
        return allocation_rows.not_found(aid)
    if home != cid:
        return NotFound(f"allocation {aid} is in cluster {home}, not in cluster {cid}")
    ipu_rows = partition_ipus.c
    slots = [ipu.slot for ipu in ipus]
    taken = first_held(conn, ipu_rows.slot, ipu_rows.partition_id, cid, slots, besides=pid)
    if taken is not None:
        slot, holder = taken
        return Conflict(
            f"IPU slot {slot} (machine {slot // IPUS_PER_MACHINE}) of cluster {cid}"
            f" is already in partition {holder}: {_RETRY}"
        )
    held = set(
        conn.scalars(
            select(allocation_machines.c.machine).where(allocation_machines.c.allocation_id == aid)
        )
    )
    for ipu in ipus:
        if ipu.machine not in held:
            return Conflict(
                f"IPU slot {ipu.slot} is on machine {ipu.machine}, which is not in allocation"
                f" {aid}: a partition stays inside its allocation; {_RETRY}"
            )
    return Conflict(f"partition {pid} could not be stored because of a concurrent change: {_RETRY}")


# -- read -----------------------------------------------------------------------------------


def get_partition(conn: Connection, partition_id: str) -> PartitionRecord:
    row = conn.execute(_SELECT_PARTITION, {"b_id": partition_id}).first()
    if row is None:
        raise not_found(partition_id)
    return _record(row, _ipus_of(conn, partition_id))


def _ipus_of(conn: Connection, partition_id: str) -> list[PartitionIpu]:
    return [
        PartitionIpu(slot=slot, routing_id=routing_id, segment=segment, gcd=gcd)
        for _pid, slot, routing_id, segment, gcd in conn.execute(
            _SELECT_IPUS, {"b_id": partition_id}
        )
    ]


def list_partitions(
    conn: Connection,
    *,
    ids: Collection[str] | None = None,
    allocation_ids: Collection[str] | None = None,
    cluster_id: str | None = None,
    ready_states: Collection[ReadyState] | None = None,
) -> list[PartitionRecord]:
    """Partitions by id, filtered by every criterion given (two indexed queries)."""
    if (
        (ids is not None and not ids)
        or (allocation_ids is not None and not allocation_ids)
        or (ready_states is not None and not ready_states)
    ):
        return []
    rows_query = select(partitions).order_by(partitions.c.id)
    ipus_query = _ipu_query()
    if ids is not None:
        rows_query = rows_query.where(partitions.c.id.in_(list(ids)))
        ipus_query = ipus_query.where(partition_ipus.c.partition_id.in_(list(ids)))
    if allocation_ids is not None:
        rows_query = rows_query.where(partitions.c.allocation_id.in_(list(allocation_ids)))
        ipus_query = ipus_query.where(partition_ipus.c.allocation_id.in_(list(allocation_ids)))
    if cluster_id is not None:
        rows_query = rows_query.where(partitions.c.cluster_id == cluster_id)
        ipus_query = ipus_query.where(partition_ipus.c.cluster_id == cluster_id)
    if ready_states is not None:
        # Filtered in SQL so that the records built are only the ones asked for: the leader
        # looks for ERROR partitions every second, among every partition of the pod.
        names = sorted(s.name for s in ready_states)
        rows_query = rows_query.where(partitions.c.ready_state.in_(names))
        ipus_query = ipus_query.where(
            partition_ipus.c.partition_id.in_(
                select(partitions.c.id).where(partitions.c.ready_state.in_(names))
            )
        )
    rows = conn.execute(rows_query).all()
    ipus = _ipus_by_partition(conn, ipus_query)
    return [_record(row, ipus[row.id]) for row in rows]


def footprints(conn: Connection, cluster_id: str) -> dict[str, PartitionFootprint]:
    """Every partition of a cluster as placement sees it, in one query."""
    found: dict[str, tuple[str, int, bool, list[int]]] = {}
    query = (
        select(
            partition_ipus.c.partition_id,
            partition_ipus.c.allocation_id,
            partition_ipus.c.slot,
            partitions.c.num_gcds,
            partitions.c.reconfigurable,
        )
        .join(partitions, partitions.c.id == partition_ipus.c.partition_id)
        .where(partition_ipus.c.cluster_id == cluster_id)
        .order_by(partition_ipus.c.partition_id, partition_ipus.c.routing_id)
    )
    for pid, aid, slot, num_gcds, reconfigurable in conn.execute(query):
        found.setdefault(pid, (aid, num_gcds, reconfigurable, []))[3].append(slot)
    return {
        pid: PartitionFootprint(
            allocation_id=aid, slots=tuple(slots), num_gcds=gcds, reconfigurable=reconf
        )
        for pid, (aid, gcds, reconf, slots) in found.items()
    }


# -- update and release ---------------------------------------------------------------------


def _check_version(conn: Connection, partition_id: str, expected_version: int) -> None:
    """Raise NotFound or Conflict for a compare-and-set that matched no row."""
    current = conn.scalar(_SELECT_VERSION, {"b_id": partition_id})
    if current is None:
        raise not_found(partition_id)
    if current != expected_version:
        raise Conflict(
            f"partition {partition_id} changed since it was read (version {expected_version},"
            f" now {current}): re-read it and retry"
        )


def _update_values(changes: PartitionChanges) -> dict[str, Any]:
    """The columns ``changes`` set (``ipus`` are rows of their own); TypeError for others."""
    unknown = [key for key in changes if key not in _CHANGEABLE]
    if unknown:
        raise TypeError(
            f"update_partition cannot change {', '.join(sorted(unknown))}: it changes"
            f" {', '.join(sorted(_CHANGEABLE))}"
        )
    values: dict[str, Any] = {}
    for key, value in changes.items():
        if key == "state":
            assert isinstance(value, PartitionState)
            values.update(_state_values(value))
        elif key == "errors":
            assert isinstance(value, tuple)
            values["errors"] = list(value)
        elif key != "ipus":
            values[key] = value
    return values


_CHANGEABLE = frozenset(PartitionChanges.__annotations__)


def _set_at_version(
    conn: Connection,
    partition_id: str,
    expected_version: int,
    updated_at: datetime,
    changes: PartitionChanges,
    *,
    returning: bool,
) -> Row[Any] | None:
    """The compare-and-set UPDATE; NotFound or Conflict (rolling back) if it matched no row."""
    params = _update_values(changes)
    params.update(
        b_id=partition_id,
        b_version=expected_version,
        updated_at=updated_at,
        version=expected_version + 1,
    )
    if returning:
        row = conn.execute(_UPDATE_AT_VERSION_RETURNING, params).first()
        matched = row is not None
    else:
        row = None
        matched = prepared.execute(conn, _UPDATE_AT_VERSION, params).rowcount == 1
    if not matched:
        _check_version(conn, partition_id, expected_version)
        raise Conflict(f"partition {partition_id} changed while it was updated: retry")
    return row


def _replace_ipus(
    conn: Connection, record: PartitionRecord, ipus: tuple[PartitionIpu, ...]
) -> None:
    conn.execute(_DELETE_IPUS, {"b_id": record.id})
    _insert_ipus(conn, record, ipus)


def update_partition(
    conn: Connection,
    partition_id: str,
    *,
    expected_version: int,
    updated_at: datetime,
    changes: PartitionChanges,
) -> PartitionRecord:
    """Apply ``changes`` if the partition is still at ``expected_version``; return it.

    Two statements: the UPDATE returns the new row, then the IPUs are read
    (or, for a relocation, replaced by the new ones).
    """
    row = _set_at_version(conn, partition_id, expected_version, updated_at, changes, returning=True)
    assert row is not None
    new_ipus = changes.get("ipus")
    if new_ipus is None:
        return _record(row, _ipus_of(conn, partition_id))
    updated = _record(row, new_ipus)  # refuses IPUs that do not fit the spec (ValueError)
    _replace_ipus(conn, updated, new_ipus)
    return updated


def update_partition_from(
    conn: Connection, record: PartitionRecord, *, updated_at: datetime, changes: PartitionChanges
) -> PartitionRecord:
    """Apply ``changes`` to ``record`` if it is still current; one statement, no read-back.

    The new record is computed here: at ``record.version`` the row holds
    exactly ``record`` (every write bumps the version), so the UPDATE's
    WHERE clause is all the checking needed.
    """
    _update_values(changes)  # a TypeError for an unknown change, before replace() sees it
    updated = dataclasses.replace(
        record, updated_at=updated_at, version=record.version + 1, **changes
    )
    _set_at_version(conn, record.id, record.version, updated_at, changes, returning=False)
    new_ipus = changes.get("ipus")
    if new_ipus is not None:
        _replace_ipus(conn, updated, new_ipus)
    return updated


def delete_partition(
    conn: Connection, partition_id: str, *, expected_version: int | None
) -> PartitionRecord:
    """Delete the partition and its IPU rows; return it as it was (two statements)."""
    ipus = sorted(
        (
            PartitionIpu(slot=slot, routing_id=routing_id, segment=segment, gcd=gcd)
            for slot, routing_id, segment, gcd in conn.execute(
                _DELETE_IPUS_RETURNING, {"b_id": partition_id}
            )
        ),
        key=lambda ipu: ipu.routing_id,
    )
    if expected_version is None:
        row = conn.execute(_DELETE_RETURNING, {"b_id": partition_id}).first()
    else:
        row = conn.execute(
            _DELETE_AT_VERSION_RETURNING, {"b_id": partition_id, "b_version": expected_version}
        ).first()
    if row is None:  # raising rolls the deletion of the IPU rows back
        if expected_version is None:
            raise not_found(partition_id)
        _check_version(conn, partition_id, expected_version)
        raise Conflict(f"partition {partition_id} changed while it was released: retry")
    return _record(row, ipus)


def delete_partition_at(conn: Connection, record: PartitionRecord) -> None:
    """Delete ``record`` if it is still current; its IPU rows go by ``ON DELETE CASCADE``."""
    done = prepared.execute(
        conn, _DELETE_AT_VERSION, {"b_id": record.id, "b_version": record.version}
    )
    if done.rowcount != 1:
        _check_version(conn, record.id, record.version)
        raise Conflict(f"partition {record.id} changed while it was released: retry")


def not_found(partition_id: str) -> NotFound:
    return NotFound(
        f"partition {partition_id} does not exist: list partitions to see the existing ones"
    )
