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
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from .columns import ID, LABEL, NAME, TEXT_SHORT, UtcDateTime, metadata

TOKEN_ID = String(32)
PRICE = String(32)

cloud_projects = Table(
    "cloud_projects",
    metadata,
    Column("id", ID, primary_key=True),
    Column("name", TEXT_SHORT, nullable=False),
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
    Column(
        "project_id",
        ID,
        ForeignKey("cloud_projects.id", ondelete="CASCADE"),
        nullable=True,
        index=True,
        comment="NULL: an administrator's token",
    ),
    Column("key_hash", TEXT_SHORT, nullable=False),
    Column("label", TEXT_SHORT, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)

cloud_clusters = Table(
    "cloud_clusters",
    metadata,
    Column("id", ID, primary_key=True),
    Column("project_id", ID, ForeignKey("cloud_projects.id"), nullable=False, index=True),
    Column("name", ID, nullable=False),
    Column("flavor", LABEL, nullable=False),
    Column("kind", NAME, nullable=False),
    Column("status", NAME, nullable=False),
    Column("image", LABEL, nullable=False),
    Column("server_count", Integer, nullable=False),
    Column("ipus", Integer, nullable=False),
    Column("gpu_family", NAME, nullable=True),
    Column("gpus", Integer, nullable=False),
    Column("interfaces", JSON, nullable=False),
    Column("network", JSON, nullable=False),
    Column("metadata", JSON, nullable=False),
    Column("vipu_cluster_id", ID, nullable=True),
    Column("allocation_id", ID, nullable=True),
    Column("vipu_user_id", ID, nullable=True),
    Column("saved_partitions", JSON, nullable=True),
    Column("fabric", LABEL, nullable=True),
    Column("active_task_id", ID, nullable=True),
    Column("error", Text, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    UniqueConstraint("project_id", "name"),
)

cloud_hosts = Table(
    "cloud_hosts",
    metadata,
    Column("id", ID, primary_key=True),
    Column("role", NAME, nullable=False),
    Column("model", LABEL, nullable=False),
    Column("slots", Integer, nullable=False),
    Column("fabric", LABEL, nullable=True),
    Column("address", TEXT_SHORT, nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("registered_at", UtcDateTime, nullable=False),
)

cloud_servers = Table(
    "cloud_servers",
    metadata,
    Column("id", ID, primary_key=True),
    Column(
        "cluster_id",
        ID,
        ForeignKey("cloud_clusters.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column(
        "position", Integer, nullable=False, comment="1, 2, ...: the server's number in its cluster"
    ),
    Column("name", ID, nullable=False),
    Column("status", NAME, nullable=False),
    Column("image", LABEL, nullable=False),
    Column("host_id", ID, nullable=True),
    Column("address", TEXT_SHORT, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    UniqueConstraint("cluster_id", "position"),
)

cloud_host_slots = Table(
    "cloud_host_slots",
    metadata,
    Column("host_id", ID, ForeignKey("cloud_hosts.id"), nullable=False),
    Column("slot", Integer, nullable=False),
    Column(
        "server_id",
        ID,
        ForeignKey("cloud_servers.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    PrimaryKeyConstraint("host_id", "slot"),
)

cloud_volumes = Table(
    "cloud_volumes",
    metadata,
    Column("id", ID, primary_key=True),
    Column("project_id", ID, ForeignKey("cloud_projects.id"), nullable=False, index=True),
    Column("name", ID, nullable=False),
    Column("size_gib", Integer, nullable=False),
    Column("volume_type", NAME, nullable=False),
    Column("boot", Boolean, nullable=False),
    Column("status", NAME, nullable=False),
    Column("image", LABEL, nullable=True),
    Column("cluster_id", ID, nullable=True, index=True),
    Column("server_id", ID, nullable=True),
    Column("delete_with_cluster", Boolean, nullable=False),
    Column("active_task_id", ID, nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    UniqueConstraint("project_id", "name"),
)

cloud_tasks = Table(
    "cloud_tasks",
    metadata,
    Column("id", ID, primary_key=True),
    Column("project_id", ID, nullable=False, index=True),
    Column("operation", NAME, nullable=False),
    Column("resource_type", NAME, nullable=False),
    Column("resource_id", ID, nullable=False, index=True),
    Column("resource_name", ID, nullable=False),
    Column("state", NAME, nullable=False, index=True),
    Column("detailed_state", NAME, nullable=True),
    Column("phases", JSON, nullable=False, comment="[[phase, ISO time], ...]"),
    Column("params", JSON, nullable=False),
    Column("error", Text, nullable=False),
    Column("warnings", JSON, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Column("finished_at", UtcDateTime, nullable=True),
)

cloud_metering = Table(
    "cloud_metering",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    Column("time", UtcDateTime, nullable=False),
    Column("project_id", ID, nullable=False),
    Column("resource_type", NAME, nullable=False),
    Column("resource_id", ID, nullable=False),
    Column("resource_name", ID, nullable=False),
    Column("item", LABEL, nullable=False),
    Column("quantity", Integer, nullable=False),
    Column("unit_price_per_hour", PRICE, nullable=False, comment="decimal text"),
    Column("billable", Boolean, nullable=False),
    Column("state", NAME, nullable=False),
    Index("ix_cloud_metering_project_id_time", "project_id", "time"),
)
