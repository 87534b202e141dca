"""Partition keys: access keys that may use one partition only (a Slurm job's credential).

A user mints one for a partition it may use; the key is presented like any
access key (its id as the user id). The store keeps the hash of the key
(hashing is the caller's job, as for users), who minted it and which
partition it is for. A key goes with its partition (``ON DELETE CASCADE``),
so a partition made again with the same id (a requeued job) never answers to
an old key, and with its owner.
"""

from __future__ import annotations

from sqlalchemy import delete, func, insert, select

from .errors import AlreadyExists, LimitReached, NotFound
from .records import PartitionKeyRecord
from .row_records import record_of
from .schema import partition_keys, partitions, users
from .table_group import TableGroup


class PartitionKeyStore(TableGroup):
    """The ``partition_keys`` table of one database (same engine as the :class:`Store`)."""

    def put(self, record: PartitionKeyRecord, key_hash: str, *, limit: int | None = None) -> None:
        """Store a key, replacing one of the same id, owner and partition (a repeated mint).

        ``AlreadyExists`` when the id is a user's, or another owner's or partition's key;
        ``NotFound`` when the partition is gone; ``LimitReached`` when the
        partition holds ``limit`` keys already (counted in this transaction, so concurrent
        mints cannot pass it).
        """
        with self._db.write() as conn:
            taken_by_user = conn.execute(
                select(func.count()).select_from(users).where(users.c.id == record.id)
            ).scalar_one()
            if taken_by_user:
                raise AlreadyExists(f"{record.id} is a user's id: name the key otherwise")
            current = conn.execute(
                select(partition_keys.c.owner_id, partition_keys.c.partition_id).where(
                    partition_keys.c.id == record.id
                )
            ).first()
            if current is not None:
                if (current.owner_id, current.partition_id) != (
                    record.owner_id,
                    record.partition_id,
                ):
                    raise AlreadyExists(f"partition key {record.id} exists for another partition")
                conn.execute(delete(partition_keys).where(partition_keys.c.id == record.id))
            exists = conn.execute(
                select(func.count())
                .select_from(partitions)
                .where(partitions.c.id == record.partition_id)
            ).scalar_one()
            if not exists:
                raise NotFound(f"partition {record.partition_id} does not exist")
            if limit is not None:
                held = conn.execute(
                    select(func.count())
                    .select_from(partition_keys)
                    .where(partition_keys.c.partition_id == record.partition_id)
                ).scalar_one()
                if held >= limit:
                    raise LimitReached(
                        f"partition {record.partition_id} has {held} keys, the most it may"
                        " have: revoke one first"
                    )
            conn.execute(
                insert(partition_keys).values(
                    id=record.id,
                    owner_id=record.owner_id,
                    partition_id=record.partition_id,
                    key_hash=key_hash,
                    created_at=record.created_at,
                )
            )

    def find(self, key_id: str) -> tuple[PartitionKeyRecord, str] | None:
        """The key and its hash, or ``None`` (for authentication: one primary-key read)."""
        with self._db.read() as conn:
            row = conn.execute(select(partition_keys).where(partition_keys.c.id == key_id)).first()
        if row is None:
            return None
        record = record_of(PartitionKeyRecord, row)
        return record, str(row.key_hash)

    def list(self, *, owner_id: str | None = None) -> list[PartitionKeyRecord]:
        query = select(partition_keys).order_by(partition_keys.c.id)
        if owner_id is not None:
            query = query.where(partition_keys.c.owner_id == owner_id)
        with self._db.read() as conn:
            rows = conn.execute(query).all()
        return [record_of(PartitionKeyRecord, r) for r in rows]

    def remove(self, key_id: str) -> bool:
        """Delete a key; False when there was none."""
        with self._db.write() as conn:
            done = conn.execute(delete(partition_keys).where(partition_keys.c.id == key_id))
        return bool(done.rowcount)


__all__ = ["PartitionKeyRecord", "PartitionKeyStore"]
