"""SSH keypairs in the store: a project's public keys and the clusters each may log in to
(tables in :mod:`.keypair_schema`). One transaction per call.

Deleting a keypair that a cluster holds is refused by the database (the
association's foreign key) as well as here, with a sentence naming the
clusters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, select

from .cloud_projects import get_project
from .cloud_schema import cloud_clusters
from .engine import Database
from .errors import AlreadyExists, Conflict
from .keypair_schema import cloud_cluster_keypairs, cloud_keypairs


@dataclass(frozen=True)
class KeypairRecord:
    id: str
    project_id: str
    name: str
    key_type: str
    public_key: str
    fingerprint: str
    created_at: datetime


def _keypair(row: Any) -> KeypairRecord:
    return KeypairRecord(**{c.name: row._mapping[c.name] for c in cloud_keypairs.columns})


class KeypairStore:
    def __init__(self, database: Database) -> None:
        self._db = database

    def add(self, keypair: KeypairRecord) -> None:
        def taken() -> AlreadyExists:
            return AlreadyExists(
                f"keypair {keypair.name} exists in project {keypair.project_id}: pick another"
                " name, or delete it first (`vpod keypair delete`)"
            )

        with self._db.write(explain=taken) as conn:
            get_project(conn, keypair.project_id, lock=True)
            conn.execute(insert(cloud_keypairs).values(**keypair.__dict__))

    def find(self, project_id: str, ref: str) -> KeypairRecord | None:
        """The project's keypair with id or name ``ref``."""
        table = cloud_keypairs
        with self._db.read() as conn:
            row = conn.execute(
                select(table).where(
                    table.c.project_id == project_id, (table.c.id == ref) | (table.c.name == ref)
                )
            ).first()
        return None if row is None else _keypair(row)

    def list_keypairs(self, project_id: str) -> list[KeypairRecord]:
        table = cloud_keypairs
        query = select(table).where(table.c.project_id == project_id).order_by(table.c.name)
        with self._db.read() as conn:
            return [_keypair(row) for row in conn.execute(query)]

    def delete(self, keypair_id: str) -> None:
        """Conflict while a cluster holds it (naming the clusters)."""

        def held() -> Conflict:
            return Conflict(
                f"keypair {keypair_id} was given to a cluster meanwhile: remove it there first",
                retryable=False,
            )

        with self._db.write(explain=held) as conn:
            holders = self._holders(conn, keypair_id)
            if holders:
                raise Conflict(
                    f"keypair {keypair_id} may log in to cluster(s) {', '.join(holders)}: remove"
                    " it there first (`vpod cluster keypair remove CLUSTER NAME`)",
                    retryable=False,
                )
            conn.execute(delete(cloud_keypairs).where(cloud_keypairs.c.id == keypair_id))

    def holders(self, keypair_id: str) -> list[str]:
        """Names of the clusters holding the keypair."""
        with self._db.read() as conn:
            return self._holders(conn, keypair_id)

    def _holders(self, conn: Connection, keypair_id: str) -> list[str]:
        a = cloud_cluster_keypairs
        rows = conn.execute(
            select(cloud_clusters.c.name)
            .select_from(a.join(cloud_clusters, cloud_clusters.c.id == a.c.cluster_id))
            .where(a.c.keypair_id == keypair_id)
            .order_by(cloud_clusters.c.name)
        )
        return [str(r[0]) for r in rows]

    # -- a cluster's keypairs -----------------------------------------------------------------

    def give(self, cluster_id: str, keypair_ids: Sequence[str]) -> None:
        """Let the keypairs log in to the cluster's servers (idempotent)."""
        a = cloud_cluster_keypairs
        with self._db.write() as conn:
            held = {
                str(r[0])
                for r in conn.execute(select(a.c.keypair_id).where(a.c.cluster_id == cluster_id))
            }
            rows = [
                {"cluster_id": cluster_id, "keypair_id": k}
                for k in dict.fromkeys(keypair_ids)
                if k not in held
            ]
            if rows:
                conn.execute(insert(a), rows)

    def take(self, cluster_id: str, keypair_id: str) -> None:
        """The keypair may no longer log in to the cluster (idempotent)."""
        a = cloud_cluster_keypairs
        with self._db.write() as conn:
            conn.execute(
                delete(a).where(a.c.cluster_id == cluster_id, a.c.keypair_id == keypair_id)
            )

    def of_clusters(self, cluster_ids: Sequence[str]) -> dict[str, list[KeypairRecord]]:
        """Cluster id -> the keypairs it holds (by name), for those that hold any."""
        if not cluster_ids:
            return {}
        a, k = cloud_cluster_keypairs, cloud_keypairs
        found: dict[str, list[KeypairRecord]] = {}
        with self._db.read() as conn:
            rows = conn.execute(
                select(a.c.cluster_id, k)
                .select_from(a.join(k, k.c.id == a.c.keypair_id))
                .where(a.c.cluster_id.in_(list(cluster_ids)))
                .order_by(k.c.name)
            )
            for row in rows:
                found.setdefault(str(row.cluster_id), []).append(_keypair(row))
        return found
