"""The cloud layer's tables, in the store's one ``metadata`` (migration ``0002_cloud``).

:mod:`vpod.store.schema` imports it, so Alembic and the "migrations match
the models" test see them. What the database enforces:

- a cluster or volume name is unique within its project
  (``uq_cloud_clusters_project_id_name``, ``uq_cloud_volumes_project_id_name``);
- a host slot (a GPU, or a whole bare-metal host) is held by at most one
  server: primary key (host_id, slot) of ``cloud_host_slots``; two requests
  racing for a host cannot both get it;
- a host holding servers cannot be removed, a project holding clusters or
  volumes cannot be removed (foreign keys without cascade);
- a cluster's servers and their slots go with it (``ON DELETE CASCADE``).

One task at a time per cluster or volume is a compare-and-set on
``active_task_id`` (see ``cloud_clusters.start_task``). Prices in metering
entries are decimal text, exact on both dialects.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from .columns import (
    ID,
    LABEL,
    NAME,
    TEXT_SHORT,
    UtcDateTime,
    id_key,
    metadata,
    optional,
    project_resource,
    reference,
    required,
    stamps,
)

TOKEN_ID = String(32)
PRICE = String(32)

cloud_projects = Table(
    "cloud_projects",
    metadata,
    id_key(),
    *required(name=TEXT_SHORT),
    Column("quotas", JSON, nullable=False, comment="{quota name: limit}, -1 unlimited"),
    Column("created_at", UtcDateTime, nullable=False),
    Column(
        "deleted_at",
        UtcDateTime,
        nullable=True,
        comment="set when deleted: the id stays taken, so it never names another tenant",
    ),
)

cloud_tokens = Table(
    "cloud_tokens",
    metadata,
    Column("id", TOKEN_ID, primary_key=True),
    reference(
        "project_id",
        "cloud_projects.id",
        cascade=True,
        nullable=True,
        index=True,
        comment="NULL: an administrator's token",
    ),
    *required(key_hash=TEXT_SHORT, label=TEXT_SHORT, created_at=UtcDateTime),
)

cloud_clusters = project_resource(
    "cloud_clusters",
    *required(
        flavor=LABEL,
        kind=NAME,
        status=NAME,
        image=LABEL,
        server_count=Integer,
        ipus=Integer,
    ),
    *optional(gpu_family=NAME),
    *required(gpus=Integer, interfaces=JSON, network=JSON, metadata=JSON),
    *optional(
        vipu_cluster_id=ID,
        allocation_id=ID,
        vipu_user_id=ID,
        saved_partitions=JSON,
        fabric=LABEL,
        active_task_id=ID,
    ),
    *required(error=Text),
    *stamps(),
)

cloud_hosts = Table(
    "cloud_hosts",
    metadata,
    id_key(),
    *required(role=NAME, model=LABEL, slots=Integer),
    *optional(fabric=LABEL),
    *required(address=TEXT_SHORT, enabled=Boolean, registered_at=UtcDateTime),
)

cloud_servers = Table(
    "cloud_servers",
    metadata,
    id_key(),
    reference("cluster_id", "cloud_clusters.id", cascade=True),
    Column(
        "position", Integer, nullable=False, comment="1, 2, ...: the server's number in its cluster"
    ),
    *required(name=ID, status=NAME, image=LABEL),
    *optional(host_id=ID),
    *required(address=TEXT_SHORT),
    *stamps(),
    UniqueConstraint("cluster_id", "position"),
)

cloud_host_slots = Table(
    "cloud_host_slots",
    metadata,
    reference("host_id", "cloud_hosts.id"),
    Column("slot", Integer, nullable=False),
    reference("server_id", "cloud_servers.id", cascade=True, index=True),
    PrimaryKeyConstraint("host_id", "slot"),
)

cloud_volumes = project_resource(
    "cloud_volumes",
    *required(size_gib=Integer, volume_type=NAME, boot=Boolean, status=NAME),
    *optional(image=LABEL),
    Column("cluster_id", ID, nullable=True, index=True),
    *optional(server_id=ID),
    *required(delete_with_cluster=Boolean),
    *optional(active_task_id=ID),
    *stamps(),
)

cloud_tasks = Table(
    "cloud_tasks",
    metadata,
    id_key(),
    Column("project_id", ID, nullable=False, index=True),
    *required(operation=NAME, resource_type=NAME),
    Column("resource_id", ID, nullable=False, index=True),
    *required(resource_name=ID),
    Column("state", NAME, nullable=False, index=True),
    *optional(detailed_state=NAME),
    Column("phases", JSON, nullable=False, comment="[[phase, ISO time], ...]"),
    *required(params=JSON, error=Text, warnings=JSON),
    *stamps(),
    *optional(finished_at=UtcDateTime),
)

cloud_metering = Table(
    "cloud_metering",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    *required(
        time=UtcDateTime,
        project_id=ID,
        resource_type=NAME,
        resource_id=ID,
        resource_name=ID,
        item=LABEL,
        quantity=Integer,
    ),
    Column("unit_price_per_hour", PRICE, nullable=False, comment="decimal text"),
    *required(billable=Boolean, state=NAME),
    Index("ix_cloud_metering_project_id_time", "project_id", "time"),
)
