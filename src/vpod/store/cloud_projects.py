"""Cloud projects (tenants), their quotas and API tokens, and what they use.

Tokens are stored as a public id plus the slow salted hash of the secret
(hashing is the caller's job, as for V-IPU users). ``usage`` sums what a
project holds, for quota checks; it runs inside the transaction that adds
a cluster or volume, after locking the project row, so two concurrent
requests of one project are checked one after the other.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Table, and_, delete, func, insert, or_, select, update

from vpod.domain.cloud.statuses import ClusterStatus
from vpod.domain.cloud.tenants import Project, Token

from .cloud_schema import (
    cloud_clusters,
    cloud_projects,
    cloud_servers,
    cloud_tokens,
    cloud_volumes,
)
from .dataset_schema import cloud_dataset_storages
from .engine import Database
from .errors import AlreadyExists, Conflict, NotFound
from .keypair_schema import cloud_keypairs
from .row_records import record_of, values_of


def not_found(project_id: str) -> NotFound:
    return NotFound(
        f"project {project_id} does not exist: `GET /api/cloud/v1/admin/projects` lists them"
    )


def _project(row: Any) -> Project:
    quotas = {str(k): int(v) for k, v in dict(row.quotas).items()}
    return record_of(Project, row, quotas=quotas)


def insert_project(conn: Connection, project: Project) -> None:
    values = values_of(project, quotas=dict(project.quotas))
    conn.execute(insert(cloud_projects).values(**values))


_LIVE = cloud_projects.c.deleted_at.is_(None)
"""Deleted projects keep their row (their id is never reused) but exist no more."""


def get_project(conn: Connection, project_id: str, *, lock: bool = False) -> Project:
    query = select(cloud_projects).where(cloud_projects.c.id == project_id, _LIVE)
    if lock:
        query = query.with_for_update()
    row = conn.execute(query).one_or_none()
    if row is None:
        raise not_found(project_id)
    return _project(row)


ProjectAdmit = Callable[[Project, dict[str, int]], None]
"""A quota check run where a resource is recorded: the project and its usage as they are in
that transaction; raising refuses the resource."""


def add_to_project(
    database: Database,
    table: Table,
    values: dict[str, Any],
    *,
    kind: str,
    hint: str = "",
    admit: ProjectAdmit | None = None,
) -> None:
    """Insert a project's named resource (``values``), the project locked first so that a
    deletion cannot race it, and ``admit`` run on its usage then (two concurrent additions
    cannot both squeeze under a quota); NotFound without the project, AlreadyExists (what
    the ``kind`` is, then ``hint``) when the name is taken."""
    name, project_id = values["name"], values["project_id"]
    taken = AlreadyExists(
        f"{kind} {name} exists in project {project_id}: pick another name, or delete it first"
        + hint
    )
    with database.write(explain=lambda: taken) as conn:
        project = get_project(conn, project_id, lock=True)
        if admit is not None:
            admit(project, usage(conn, project_id))
        conn.execute(insert(table).values(**values))


def list_projects(conn: Connection) -> list[Project]:
    rows = conn.execute(select(cloud_projects).where(_LIVE).order_by(cloud_projects.c.id))
    return [_project(row) for row in rows]


def set_quotas(conn: Connection, project_id: str, quotas: dict[str, int]) -> None:
    done = conn.execute(
        update(cloud_projects).where(cloud_projects.c.id == project_id, _LIVE).values(quotas=quotas)
    )
    if done.rowcount == 0:
        raise not_found(project_id)


def delete_project(conn: Connection, project_id: str, *, at: datetime) -> None:
    get_project(conn, project_id)
    used = usage(conn, project_id)
    if used["clusters"] or used["volumes"]:
        raise Conflict(
            f"project {project_id} still holds {used['clusters']} clusters and"
            f" {used['volumes']} volumes: delete them first",
            retryable=False,
        )
    conn.execute(delete(cloud_tokens).where(cloud_tokens.c.project_id == project_id))
    # Its dataset storage registrations (sealed credentials) go too: no cluster holds them.
    conn.execute(
        delete(cloud_dataset_storages).where(cloud_dataset_storages.c.project_id == project_id)
    )
    # Its keypairs (public keys only) too: no cluster is left to hold them.
    conn.execute(delete(cloud_keypairs).where(cloud_keypairs.c.project_id == project_id))
    conn.execute(
        update(cloud_projects).where(cloud_projects.c.id == project_id).values(deleted_at=at)
    )


def usage(conn: Connection, project_id: str) -> dict[str, int]:
    """What the project holds, by quota name.

    Every cluster counts against ``clusters`` whatever its status (deleting it frees the
    slot), and every volume against ``volumes`` and ``volume_gib``. A cluster counts against
    ``ipus`` and ``gpus_*`` unless it is in ERROR holding no server: a rolled-back creation
    released its allocation and servers, so it holds no accelerator. Any other cluster in
    ERROR (a failed rebuild, suspend or resume) may still hold them, and a SUSPENDED one keeps
    counting so that resuming it is never refused for quota.
    """
    clusters = conn.execute(
        select(func.count()).where(cloud_clusters.c.project_id == project_id)
    ).scalar_one()
    holds_servers = (
        select(cloud_servers.c.id).where(cloud_servers.c.cluster_id == cloud_clusters.c.id).exists()
    )
    holding = and_(
        cloud_clusters.c.project_id == project_id,
        or_(cloud_clusters.c.status != ClusterStatus.ERROR, holds_servers),
    )
    ipus = conn.execute(
        select(func.coalesce(func.sum(cloud_clusters.c.ipus), 0)).where(holding)
    ).scalar_one()
    used = {"clusters": int(clusters), "ipus": int(ipus)}
    for family, gpus in conn.execute(
        select(cloud_clusters.c.gpu_family, func.sum(cloud_clusters.c.gpus))
        .where(holding, cloud_clusters.c.gpu_family.is_not(None))
        .group_by(cloud_clusters.c.gpu_family)
    ):
        used[f"gpus_{family}"] = int(gpus)
    volumes = conn.execute(
        select(func.count(), func.coalesce(func.sum(cloud_volumes.c.size_gib), 0)).where(
            cloud_volumes.c.project_id == project_id
        )
    ).one()
    used["volumes"] = int(volumes[0])
    used["volume_gib"] = int(volumes[1])
    # Named resources without accelerators, counted only when the project has any (as the
    # GPU families are).
    for name, table in (("keypairs", cloud_keypairs), ("dataset_storages", cloud_dataset_storages)):
        count = conn.execute(
            select(func.count()).where(table.c.project_id == project_id)
        ).scalar_one()
        if count:
            used[name] = int(count)
    return used


# -- tokens -----------------------------------------------------------------------------------


def _token(row: Any) -> Token:
    return record_of(Token, row)


def insert_token(conn: Connection, token: Token) -> None:
    if token.project_id is not None:
        get_project(conn, token.project_id)
    conn.execute(insert(cloud_tokens).values(**values_of(token)))


def find_token(conn: Connection, token_id: str) -> Token | None:
    row = conn.execute(select(cloud_tokens).where(cloud_tokens.c.id == token_id)).one_or_none()
    return None if row is None else _token(row)


def list_tokens(conn: Connection, *, admin: bool, project_id: str | None) -> list[Token]:
    query = select(cloud_tokens).order_by(cloud_tokens.c.created_at, cloud_tokens.c.id)
    if admin:
        query = query.where(cloud_tokens.c.project_id.is_(None))
    elif project_id is not None:
        query = query.where(cloud_tokens.c.project_id == project_id)
    return [_token(row) for row in conn.execute(query)]


def delete_token(conn: Connection, token_id: str) -> None:
    if conn.execute(delete(cloud_tokens).where(cloud_tokens.c.id == token_id)).rowcount == 0:
        raise NotFound(f"token {token_id} does not exist (or was revoked already)")
