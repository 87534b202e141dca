"""The tables, as SQLAlchemy Core metadata; migrations in ``migrations/`` must match it.

The invariants that keep two controllers from handing out the same hardware
are constraints here, so the database enforces them whichever process writes:

- an agent is in at most one cluster: ``cluster_agents`` primary key
  (cluster_id, position) and unique ``agent_id``;
- a machine is in at most one allocation: ``allocation_machines`` primary key
  (cluster_id, machine);
- an IPU is in at most one partition: ``partition_ipus`` primary key
  (cluster_id, slot);
- a partition's IPUs lie on machines of its own allocation: ``partition_ipus``
  has a foreign key (allocation_id, cluster_id, machine) to
  ``allocation_machines``, and (partition_id, allocation_id, cluster_id) to
  ``partitions``; a check ties ``machine`` to ``slot`` (4 IPUs per machine);
- nothing is removed while something depends on it: foreign keys without
  cascade from cluster agents to agents, allocations to clusters, allocation
  machines to cluster machines, partitions to allocations. Rows that merely
  belong to a parent (a cluster's agent list, an allocation's machines, a
  partition's IPUs, a user's grants) go with it (``ON DELETE CASCADE``).

Enumerations are stored as the member *name* (``"ACTIVE"``, ``"RINGSWNC"``)
in short strings, never as numbers, so the database reads well and a new
member needs no migration. Times are UTC; see :class:`UtcDateTime`.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from vpod.domain.catalog import IPUS_PER_MACHINE

from . import (
    cloud_schema,  # noqa: F401  (the cloud tables join the same metadata)
    dataset_schema,  # noqa: F401  (dataset storage, the same metadata)
    gpu_schema,  # noqa: F401  (GPU host agents, the same metadata)
    keypair_schema,  # noqa: F401  (SSH keypairs, the same metadata)
    reservation_schema,  # noqa: F401  (reservation plans, the same metadata)
    ssh_port_schema,  # noqa: F401  (direct SSH ports, the same metadata)
)
from .columns import ID, LABEL, NAME, TEXT_SHORT, UtcDateTime
from .columns import metadata as metadata  # the whole schema's: V-IPU and cloud tables

agents = Table(
    "agents",
    metadata,
    Column("id", ID, primary_key=True),
    Column("host", TEXT_SHORT, nullable=False),
    Column("port", Integer, nullable=False),
    Column("machine_type", NAME, nullable=False),
    Column("serial", String(128), nullable=False),
    Column("health", NAME, nullable=False),
    Column("last_heartbeat", UtcDateTime, nullable=True),
    Column("health_reason", Text, nullable=False),
    Column(
        "device_faults",
        JSON,
        nullable=True,
        comment="[[device_id, reason], ...] last reported; NULL (older rows): none",
    ),
    Column(
        "ipuof_facts",
        JSON,
        nullable=True,
        comment="the IPUoF details the agent reported (addresses, ports, ids); NULL: not yet",
    ),
)

clusters = Table(
    "clusters",
    metadata,
    Column("id", ID, primary_key=True),
    Column("num_domains", Integer, nullable=False),
    Column("ild_topology", NAME, nullable=False),
    Column("gw_topology", NAME, nullable=False),
    Column("machine_type", NAME, nullable=False),
)

cluster_agents = Table(
    "cluster_agents",
    metadata,
    Column("cluster_id", ID, ForeignKey("clusters.id", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False, comment="machine index: cabling order"),
    Column("agent_id", ID, ForeignKey("agents.id"), nullable=False),
    PrimaryKeyConstraint("cluster_id", "position"),
    UniqueConstraint("agent_id"),
)

allocations = Table(
    "allocations",
    metadata,
    Column("id", ID, primary_key=True),
    Column("cluster_id", ID, ForeignKey("clusters.id"), nullable=False, index=True),
    Column(
        "hosts",
        JSON,
        nullable=True,
        comment="CIDRs that may attach over IPUoF; NULL or []: the trusted host network",
    ),
    UniqueConstraint("id", "cluster_id"),
)

allocation_machines = Table(
    "allocation_machines",
    metadata,
    Column("cluster_id", ID, nullable=False),
    Column("machine", Integer, nullable=False),
    Column("allocation_id", ID, nullable=False),
    PrimaryKeyConstraint("cluster_id", "machine"),
    UniqueConstraint("allocation_id", "cluster_id", "machine"),
    ForeignKeyConstraint(
        ["allocation_id", "cluster_id"],
        ["allocations.id", "allocations.cluster_id"],
        ondelete="CASCADE",
        name="fk_allocation_machines_allocation",
    ),
    ForeignKeyConstraint(
        ["cluster_id", "machine"],
        ["cluster_agents.cluster_id", "cluster_agents.position"],
        name="fk_allocation_machines_cluster_machine",
    ),
)

users = Table(
    "users",
    metadata,
    Column("id", ID, primary_key=True),
    Column("key_hash", TEXT_SHORT, nullable=False),
    Column("admin", Boolean, nullable=False),
    Column("created_at", UtcDateTime, nullable=True, comment="NULL for users older than 0003"),
    Column(
        "access_version",
        Integer,
        nullable=False,
        server_default="0",
        comment="bumped by every change to what the user may do (key, admin, grants)",
    ),
)

partition_keys = Table(
    "partition_keys",
    metadata,
    Column("id", ID, primary_key=True, comment="the user id the key is presented with"),
    Column("owner_id", ID, ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True),
    Column(
        "partition_id",
        ID,
        ForeignKey("partitions.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
        comment="the one partition the key may use: it goes with the partition",
    ),
    Column("key_hash", TEXT_SHORT, nullable=False, comment="sha256 of a 256-bit random key"),
    Column("created_at", UtcDateTime, nullable=False),
)

agent_tokens = Table(
    "agent_tokens",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("key_hash", TEXT_SHORT, nullable=False, comment="scrypt of the secret part"),
    Column("label", TEXT_SHORT, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)

agent_keys = Table(
    "agent_keys",
    metadata,
    Column(
        "agent_id",
        ID,
        primary_key=True,
        comment="no foreign key: a removed agent added again keeps answering to its key",
    ),
    Column("host", TEXT_SHORT, nullable=False, comment="where the agent registered from"),
    Column("port", Integer, nullable=False),
    Column("agent_key", TEXT_SHORT, nullable=False, comment="presented on every call to it"),
    Column("updated_at", UtcDateTime, nullable=False),
)

agent_bindings = Table(
    "agent_bindings",
    metadata,
    Column(
        "agent_id",
        ID,
        ForeignKey("agents.id", ondelete="CASCADE"),
        primary_key=True,
        comment="an agent id answers to the one token it first registered with",
    ),
    Column(
        "token_id",
        String(32),
        ForeignKey("agent_tokens.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    Column("bound_at", UtcDateTime, nullable=False),
)

user_allocations = Table(
    "user_allocations",
    metadata,
    Column("user_id", ID, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column(
        "allocation_id",
        ID,
        ForeignKey("allocations.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    PrimaryKeyConstraint("user_id", "allocation_id"),
)

partitions = Table(
    "partitions",
    metadata,
    Column("id", ID, primary_key=True),
    Column("cluster_id", ID, nullable=False, index=True),
    Column("allocation_id", ID, nullable=False, index=True),
    # the resolved spec (vpod.domain.partitions.PartitionSpec)
    Column("size", Integer, nullable=False),
    Column("num_segments", Integer, nullable=False),
    Column("num_gcds", Integer, nullable=False),
    Column("num_replicas", Integer, nullable=False),
    Column("reconfigurable", Boolean, nullable=False),
    Column("routing", NAME, nullable=False),
    Column("gw_routing", NAME, nullable=True),
    Column("sync_type", NAME, nullable=False),
    Column("requested_ipus", JSON, nullable=True, comment="[[domain, position], ...] if given"),
    # life cycle (vpod.domain.partition_states)
    Column("ready_state", NAME, nullable=False),
    Column("operation_state", NAME, nullable=False),
    Column("errors", JSON, nullable=False),
    Column("disable_auto_reset", Boolean, nullable=False),
    Column("relocatable", Boolean, nullable=False),
    Column("max_auto_reset_retries", Integer, nullable=False),
    Column("auto_reset_retry_count", Integer, nullable=False),
    Column("last_auto_reset_time", UtcDateTime, nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Column("version", Integer, nullable=False, comment="bumped by every update"),
    Column(
        "operation_owner",
        TEXT_SHORT,
        nullable=True,
        comment="controller running the operation (replica/boot); NULL: idle or before 0007",
    ),
    UniqueConstraint("id", "allocation_id", "cluster_id"),
    ForeignKeyConstraint(
        ["allocation_id", "cluster_id"],
        ["allocations.id", "allocations.cluster_id"],
        name="fk_partitions_allocation",
    ),
)

partition_ipus = Table(
    "partition_ipus",
    metadata,
    Column("cluster_id", ID, nullable=False),
    Column("slot", Integer, nullable=False),
    Column("partition_id", ID, nullable=False),
    Column("allocation_id", ID, nullable=False),
    Column("machine", Integer, nullable=False),
    Column("routing_id", Integer, nullable=False),
    Column("segment", Integer, nullable=False),
    Column("gcd", Integer, nullable=False),
    PrimaryKeyConstraint("cluster_id", "slot"),
    UniqueConstraint("partition_id", "routing_id"),
    ForeignKeyConstraint(
        ["partition_id", "allocation_id", "cluster_id"],
        ["partitions.id", "partitions.allocation_id", "partitions.cluster_id"],
        ondelete="CASCADE",
        name="fk_partition_ipus_partition",
    ),
    ForeignKeyConstraint(
        ["allocation_id", "cluster_id", "machine"],
        [
            "allocation_machines.allocation_id",
            "allocation_machines.cluster_id",
            "allocation_machines.machine",
        ],
        name="fk_partition_ipus_allocation_machine",
    ),
    CheckConstraint(
        f"slot >= machine * {IPUS_PER_MACHINE} AND slot < (machine + 1) * {IPUS_PER_MACHINE}"
        " AND machine >= 0",
        name="slot_on_machine",
    ),
    Index("ix_partition_ipus_allocation_machine", "allocation_id", "cluster_id", "machine"),
)

events = Table(
    "events",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    Column("time", UtcDateTime, nullable=False, index=True),
    Column("actor", TEXT_SHORT, nullable=False, index=True),
    Column("action", LABEL, nullable=False, index=True),
    Column("target", TEXT_SHORT, nullable=False, index=True),
    Column("outcome", LABEL, nullable=False),
    Column("source", TEXT_SHORT, nullable=False),
    Column("detail", Text, nullable=False),
)

# One row, bumped by database triggers on every change to agents (but their health), agent
# keys, clusters and allocations: see store/inventory_version.py.
inventory_version = Table(
    "inventory_version",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("version", BigInteger, nullable=False),
    CheckConstraint("id = 1", name="one_row"),
)

leases = Table(
    "leases",
    metadata,
    Column("name", LABEL, primary_key=True),
    Column("holder", TEXT_SHORT, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False),
    Column("term", BigInteger, nullable=False, comment="fencing token: +1 per new holder"),
)
