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
from .columns import ID, LABEL, NAME, TEXT_SHORT, UtcDateTime, id_key, optional, reference, required
from .columns import metadata as metadata  # the whole schema's: V-IPU and cloud tables


def _in_allocation(table: str, *, ondelete: str | None = None) -> ForeignKeyConstraint:
    """``table``'s (allocation_id, cluster_id) name an allocation, and one of that cluster."""
    return ForeignKeyConstraint(
        ["allocation_id", "cluster_id"],
        ["allocations.id", "allocations.cluster_id"],
        name=f"fk_{table}_allocation",
        ondelete=ondelete,
    )


agents = Table(
    "agents",
    metadata,
    id_key(),
    *required(host=TEXT_SHORT, port=Integer, machine_type=NAME, serial=String(128), health=NAME),
    *optional(last_heartbeat=UtcDateTime),
    *required(health_reason=Text),
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
    id_key(),
    *required(num_domains=Integer, ild_topology=NAME, gw_topology=NAME, machine_type=NAME),
)

cluster_agents = Table(
    "cluster_agents",
    metadata,
    reference("cluster_id", "clusters.id", cascade=True),
    Column("position", Integer, nullable=False, comment="machine index: cabling order"),
    reference("agent_id", "agents.id"),
    PrimaryKeyConstraint("cluster_id", "position"),
    UniqueConstraint("agent_id"),
)

allocations = Table(
    "allocations",
    metadata,
    id_key(),
    reference("cluster_id", "clusters.id", index=True),
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
    *required(cluster_id=ID, machine=Integer, allocation_id=ID),
    PrimaryKeyConstraint("cluster_id", "machine"),
    UniqueConstraint("allocation_id", "cluster_id", "machine"),
    _in_allocation("allocation_machines", ondelete="CASCADE"),
    ForeignKeyConstraint(
        ["cluster_id", "machine"],
        ["cluster_agents.cluster_id", "cluster_agents.position"],
        name="fk_allocation_machines_cluster_machine",
    ),
)

users = Table(
    "users",
    metadata,
    id_key(),
    *required(key_hash=TEXT_SHORT, admin=Boolean),
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
    reference("owner_id", "users.id", cascade=True, index=True),
    reference(
        "partition_id",
        "partitions.id",
        cascade=True,
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
    *required(label=TEXT_SHORT, created_at=UtcDateTime),
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
    reference(
        "agent_id",
        "agents.id",
        cascade=True,
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
    reference("user_id", "users.id", cascade=True),
    reference("allocation_id", "allocations.id", cascade=True, index=True),
    PrimaryKeyConstraint("user_id", "allocation_id"),
)

partitions = Table(
    "partitions",
    metadata,
    id_key(),
    Column("cluster_id", ID, nullable=False, index=True),
    Column("allocation_id", ID, nullable=False, index=True),
    # the resolved spec (vpod.domain.partitions.PartitionSpec)
    *required(
        size=Integer,
        num_segments=Integer,
        num_gcds=Integer,
        num_replicas=Integer,
        reconfigurable=Boolean,
        routing=NAME,
    ),
    *optional(gw_routing=NAME),
    *required(sync_type=NAME),
    Column("requested_ipus", JSON, nullable=True, comment="[[domain, position], ...] if given"),
    # life cycle (vpod.domain.partition_states)
    *required(
        ready_state=NAME,
        operation_state=NAME,
        errors=JSON,
        disable_auto_reset=Boolean,
        relocatable=Boolean,
        max_auto_reset_retries=Integer,
        auto_reset_retry_count=Integer,
    ),
    *optional(last_auto_reset_time=UtcDateTime),
    *required(created_at=UtcDateTime, updated_at=UtcDateTime),
    Column("version", Integer, nullable=False, comment="bumped by every update"),
    Column(
        "operation_owner",
        TEXT_SHORT,
        nullable=True,
        comment="controller running the operation (replica/boot); NULL: idle or before 0007",
    ),
    UniqueConstraint("id", "allocation_id", "cluster_id"),
    _in_allocation("partitions"),
)

partition_ipus = Table(
    "partition_ipus",
    metadata,
    *required(
        cluster_id=ID,
        slot=Integer,
        partition_id=ID,
        allocation_id=ID,
        machine=Integer,
        routing_id=Integer,
        segment=Integer,
        gcd=Integer,
    ),
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
    *required(outcome=LABEL, source=TEXT_SHORT, detail=Text),
)

# One row, bumped by database triggers on every change to agents (but their health), agent
# keys, clusters and allocations: see store/inventory_version.py.
inventory_version = Table(
    "inventory_version",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    *required(version=BigInteger),
    CheckConstraint("id = 1", name="one_row"),
)

leases = Table(
    "leases",
    metadata,
    Column("name", LABEL, primary_key=True),
    *required(holder=TEXT_SHORT, expires_at=UtcDateTime),
    Column("term", BigInteger, nullable=False, comment="fencing token: +1 per new holder"),
)
