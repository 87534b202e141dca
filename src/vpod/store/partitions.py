"""Partitions: a ``partitions`` row (spec, state, bookkeeping) plus its ``partition_ipus``.

Reserving a partition inserts its row and one row per IPU in the caller's
transaction. The primary key of ``partition_ipus`` is (cluster_id, slot), so
of two concurrent reservations of one IPU exactly one commits; a foreign key
to ``allocation_machines`` keeps every IPU on a machine of the partition's
allocation. Updates are compare-and-set on ``version``. Releasing deletes the
IPU rows and the partition row: a removed partition is not kept (the audit
log remembers it), and its id can be used again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, Select, delete, insert, select, update

from vpod.domain.catalog import IPUS_PER_MACHINE
from vpod.domain.partition_states import OperationState, PartitionState, ReadyState
from vpod.domain.partitions import PartitionSpec
from vpod.domain.routing import GwRouting, IpuLinkRouting, SyncType
from vpod.placement.snapshot import PartitionFootprint

from . import allocations as allocation_rows
from .errors import AlreadyExists, Conflict, NotFound, StoreError
from .records import PartitionChanges, PartitionIpu, PartitionRecord, check_partition_ipus
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
    return PartitionSpec(
        id=row.id,
        size=row.size,
        num_segments=row.num_segments,
        num_gcds=row.num_gcds,
        num_replicas=row.num_replicas,
        reconfigurable=row.reconfigurable,
        routing=IpuLinkRouting[row.routing],
        gw_routing=GwRouting[row.gw_routing] if row.gw_routing is not None else None,
        sync_type=SyncType[row.sync_type],
        allocation_id=row.allocation_id,
        cluster_id=row.cluster_id,
        ipus=(
            tuple((int(d), int(p)) for d, p in row.requested_ipus)
            if row.requested_ipus is not None
            else None
        ),
    )


@decoding("partition")
def _record(row: Row[Any], ipus: Iterable[PartitionIpu]) -> PartitionRecord:
    return PartitionRecord(
        spec=_spec(row),
        ipus=tuple(ipus),
        state=PartitionState(ReadyState[row.ready_state], OperationState[row.operation_state]),
        created_at=row.created_at,
        updated_at=row.updated_at,
        errors=tuple(row.errors),
        disable_auto_reset=row.disable_auto_reset,
        relocatable=row.relocatable,
        max_auto_reset_retries=row.max_auto_reset_retries,
        auto_reset_retry_count=row.auto_reset_retry_count,
        last_auto_reset_time=row.last_auto_reset_time,
        version=row.version,
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


# -- reserve --------------------------------------------------------------------------------


def _insert_ipus(conn: Connection, record: PartitionRecord, ipus: tuple[PartitionIpu, ...]) -> None:
    conn.execute(
        insert(partition_ipus),
        [
            {
                "cluster_id": record.cluster_id,
                "slot": ipu.slot,
                "partition_id": record.id,
                "allocation_id": record.allocation_id,
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
    conn.execute(
        insert(partitions).values(
            id=record.id,
            cluster_id=record.cluster_id,
            allocation_id=record.allocation_id,
            **_spec_values(record.spec),
            **_state_values(record.state),
            errors=list(record.errors),
            disable_auto_reset=record.disable_auto_reset,
            relocatable=record.relocatable,
            max_auto_reset_retries=record.max_auto_reset_retries,
            auto_reset_retry_count=record.auto_reset_retry_count,
            last_auto_reset_time=record.last_auto_reset_time,
            created_at=record.created_at,
            updated_at=record.updated_at,
            version=1,
        )
    )
    _insert_ipus(conn, record, record.ipus)


def explain_reserve_refused(conn: Connection, record: PartitionRecord) -> StoreError:
    """Why a reservation was refused: the id, the allocation, or the first IPU in the way."""
    pid = record.id
    if conn.scalar(select(partitions.c.id).where(partitions.c.id == pid)) is not None:
        return AlreadyExists(
            f"partition {pid} exists already: pick another id, or remove the partition first"
        )
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
    taken = conn.execute(
        select(partition_ipus.c.slot, partition_ipus.c.partition_id)
        .where(
            partition_ipus.c.cluster_id == cid,
            partition_ipus.c.slot.in_([ipu.slot for ipu in ipus]),
            partition_ipus.c.partition_id != pid,
        )
        .order_by(partition_ipus.c.slot)
    ).first()
    if taken is not None:
        return Conflict(
            f"IPU slot {taken.slot} (machine {taken.slot // IPUS_PER_MACHINE}) of cluster {cid}"
            f" is already in partition {taken.partition_id}: {_RETRY}"
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
    row = conn.execute(select(partitions).where(partitions.c.id == partition_id)).first()
    if row is None:
        raise not_found(partition_id)
    ipus = _ipus_by_partition(conn, _ipu_query().where(partition_ipus.c.partition_id == row.id))
    return _record(row, ipus[row.id])


def list_partitions(
    conn: Connection,
    *,
    ids: Collection[str] | None = None,
    allocation_ids: Collection[str] | None = None,
    cluster_id: str | None = None,
) -> list[PartitionRecord]:
    """Partitions by id, filtered by every criterion given (two indexed queries)."""
    if (ids is not None and not ids) or (allocation_ids is not None and not allocation_ids):
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
    current = conn.scalar(select(partitions.c.version).where(partitions.c.id == partition_id))
    if current is None:
        raise not_found(partition_id)
    if current != expected_version:
        raise Conflict(
            f"partition {partition_id} changed since it was read (version {expected_version},"
            f" now {current}): re-read it and retry"
        )


def update_partition(
    conn: Connection,
    partition_id: str,
    *,
    expected_version: int,
    updated_at: datetime,
    changes: PartitionChanges,
) -> None:
    """Apply ``changes`` if the partition is still at ``expected_version``; bump the version."""
    unknown = sorted(set(changes) - set(PartitionChanges.__annotations__))
    if unknown:
        raise TypeError(
            f"update_partition cannot change {', '.join(unknown)}: it changes"
            f" {', '.join(sorted(PartitionChanges.__annotations__))}"
        )
    values: dict[str, Any] = {"updated_at": updated_at, "version": expected_version + 1}
    for key, value in changes.items():
        if key == "state":
            assert isinstance(value, PartitionState)
            values.update(_state_values(value))
        elif key == "errors":
            assert isinstance(value, tuple)
            values["errors"] = list(value)
        elif key != "ipus":
            values[key] = value
    done = conn.execute(
        update(partitions)
        .where(partitions.c.id == partition_id, partitions.c.version == expected_version)
        .values(**values)
    )
    if done.rowcount == 0:
        _check_version(conn, partition_id, expected_version)
        raise Conflict(f"partition {partition_id} changed while it was updated: retry")
    new_ipus = changes.get("ipus")
    if new_ipus is not None:
        current = get_partition(conn, partition_id)
        check_partition_ipus(current.spec, new_ipus)
        conn.execute(delete(partition_ipus).where(partition_ipus.c.partition_id == partition_id))
        _insert_ipus(conn, current, new_ipus)


def delete_partition(
    conn: Connection, partition_id: str, *, expected_version: int | None
) -> PartitionRecord:
    """Delete the partition and its IPU rows; return it as it was."""
    record = get_partition(conn, partition_id)
    if expected_version is not None and record.version != expected_version:
        _check_version(conn, partition_id, expected_version)
    conn.execute(delete(partition_ipus).where(partition_ipus.c.partition_id == partition_id))
    done = conn.execute(
        delete(partitions).where(
            partitions.c.id == partition_id, partitions.c.version == record.version
        )
    )
    if done.rowcount == 0:
        raise Conflict(f"partition {partition_id} changed while it was released: retry")
    return record


def not_found(partition_id: str) -> NotFound:
    return NotFound(
        f"partition {partition_id} does not exist: list partitions to see the existing ones"
    )
