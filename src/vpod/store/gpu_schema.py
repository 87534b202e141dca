"""The tables of GPU host agents (migration ``0007_gpu_host_agents``).

- ``cloud_gpu_agents``: the agent of a registered host (``cloud_hosts``): the
  registration token it is bound to (its first registration binds it; null
  when it registered without one, in the open mode), its boot id, what its
  driver says and when it last reported.
- ``cloud_host_gpus``: every GPU the agent found on its host, one row per
  slot (``idx`` is the host slot a server takes, the GPU's NVML index), its
  UUID (unique: one GPU is never on two hosts), model, memory, PCI bus id,
  the rest of its inventory as JSON (NVLinks, topology, MIG, device nodes),
  and its health as the agent last judged it.

Both go with their host (``ON DELETE CASCADE``); a host holding servers cannot
be removed (``cloud_host_slots``).
"""

from __future__ import annotations

from sqlalchemy import JSON, Boolean, Column, Integer, PrimaryKeyConstraint, String, Table, Text

from .columns import LABEL, NAME, TEXT_SHORT, UtcDateTime, metadata, reference, required

cloud_gpu_agents = Table(
    "cloud_gpu_agents",
    metadata,
    reference("host_id", "cloud_hosts.id", cascade=True, primary_key=True),
    Column("token_id", String(32), nullable=True, comment="the agent token it is bound to"),
    *required(
        boot_id=LABEL,
        hostname=TEXT_SHORT,
        driver_version=LABEL,
        cuda_version=LABEL,
    ),
    Column("backend", NAME, nullable=False, comment="nvml or emulated"),
    *required(registered_at=UtcDateTime, reported_at=UtcDateTime),
)

cloud_host_gpus = Table(
    "cloud_host_gpus",
    metadata,
    reference("host_id", "cloud_hosts.id", cascade=True),
    Column("idx", Integer, nullable=False, comment="the GPU's index: the host slot it is"),
    Column("uuid", LABEL, nullable=False, unique=True),
    *required(name=LABEL, memory_mib=Integer, pci_bus_id=LABEL),
    Column("details", JSON, nullable=False, comment="NVLinks, topology, MIG, device nodes"),
    Column("healthy", Boolean, nullable=False),
    Column("problems", Text, nullable=False, comment="why it is unhealthy, '; ' between"),
    Column("changed_at", UtcDateTime, nullable=False, comment="when its health last changed"),
    PrimaryKeyConstraint("host_id", "idx"),
)
