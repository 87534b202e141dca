"""SSH keypairs in the store: a project's public keys and the clusters each may log in to
(tables in :mod:`.keypair_schema`). One transaction per call.

Deleting a keypair that a cluster holds is refused by the database (the
association's foreign key) as well as here, with a sentence naming the
clusters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, insert, select

from vpod.domain.cloud.resources import Keypair

from .cloud_projects import ProjectAdmit, add_to_project
from .cloud_records import KeypairRecord
from .cloud_rows import clusters_holding, delete_unless_held, find_in_project
from .keypair_schema import cloud_cluster_keypairs, cloud_keypairs
from .row_records import record_of, values_of
from .table_group import TableGroup


def _keypair(row: Any) -> Keypair:
    """The keypair as stored; who holds it (``clusters``) is the caller's to add."""
    return record_of(Keypair, row, clusters=())


def _columns(keypair: Keypair) -> dict[str, Any]:
    """The keypair's row: the clusters holding it are rows of the association instead."""
    values = values_of(keypair)
    del values["clusters"]
    return values


class KeypairStore(TableGroup):
    def add(self, keypair: Keypair, *, admit: ProjectAdmit | None = None) -> None:
        """Record the keypair if ``admit`` (the quota check) lets it in."""
        hint = " (`vpod keypair delete`)"
        add_to_project(
            self._db, cloud_keypairs, _columns(keypair), kind="keypair", hint=hint, admit=admit
        )

    def find(self, project_id: str, ref: str) -> Keypair | None:
        """The project's keypair with id or name ``ref``."""
        row = self._db.run_read(find_in_project, cloud_keypairs, project_id, ref)
        return None if row is None else _keypair(row)

    def list_keypairs(self, project_id: str) -> list[Keypair]:
        table = cloud_keypairs
        query = select(table).where(table.c.project_id == project_id).order_by(table.c.name)
        with self._db.read() as conn:
            return [_keypair(row) for row in conn.execute(query)]

    def delete(self, keypair_id: str) -> None:
        """Conflict while a cluster holds it (naming the clusters)."""
        delete_unless_held(
            self._db,
            cloud_keypairs,
            keypair_id,
            cloud_cluster_keypairs.c.keypair_id,
            held=lambda holders: (
                f"keypair {keypair_id} may log in to cluster(s) {holders}: remove"
                " it there first (`vpod cluster keypair remove CLUSTER NAME`)"
            ),
            raced=f"keypair {keypair_id} was given to a cluster meanwhile: remove it there first",
        )

    def holders(self, keypair_id: str) -> list[str]:
        """Names of the clusters holding the keypair."""
        return self._db.run_read(clusters_holding, cloud_cluster_keypairs.c.keypair_id, keypair_id)

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

    def of_clusters(self, cluster_ids: Sequence[str]) -> dict[str, list[Keypair]]:
        """Cluster id -> the keypairs it holds (by name), for those that hold any."""
        if not cluster_ids:
            return {}
        a, k = cloud_cluster_keypairs, cloud_keypairs
        found: dict[str, list[Keypair]] = {}
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


__all__ = ["KeypairRecord", "KeypairStore"]
