"""The cloud API's clusters: creating one and changing it, the cluster with its servers
(their GPUs and sshd host keys) and volumes, its metadata and a shell on a server."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from .cloud_tasks import TaskOut
from .cloud_volumes import VolumeOut
from .fields import StrictBody

BOOT_VOLUME_DEFAULT_GIB = 50
"""A VM server's boot volume when the request names no size."""


class InterfaceIn(StrictBody):
    type: str = Field("external", description="`external`, `subnet` or `any_subnet`.")


class ClusterVolumeIn(StrictBody):
    """A new volume (`name` and `size_gib`), or an existing available one (`id`: id or name)."""

    id: str | None = Field(None, description="Attach this available volume (id or name).")
    name: str | None = Field(None, description="Create a new data volume with this name.")
    size_gib: int | None = Field(None, ge=1, description="Size of the new volume.")
    volume_type: str = Field("standard", description="`standard` or `ssd`.")


class ClusterCreateIn(StrictBody):
    name: str = Field(description="3 to 63 characters: letters, digits, `.`, `_`, `-`.")
    flavor: str = Field(description="A flavor name from `GET /flavors`.")
    image: str | None = Field(None, description="Boot image; default: the flavor's first.")
    server_count: int | None = Field(
        None, description="GPU clusters: how many servers (default 1). vPODs: leave out."
    )
    interfaces: list[InterfaceIn] | None = Field(
        None, description="Network interfaces, at least one (default: one external)."
    )
    volumes: list[ClusterVolumeIn] = Field(
        default_factory=list, description="Data volumes (VM flavors only)."
    )
    boot_volume_gib: int = Field(BOOT_VOLUME_DEFAULT_GIB, description="Per server (VMs).")
    metadata: dict[str, str] = Field(default_factory=dict)
    dataset_storage: str | None = Field(
        None, description="Give the servers this dataset storage of yours (id or name)."
    )
    dataset_mount: str | None = Field(
        None, description="Also mount its bucket at this absolute path on every server."
    )
    keypairs: list[str] = Field(
        default_factory=list,
        description="Your keypairs (names or ids) that may log in to its servers over SSH.",
    )


class ResizeIn(StrictBody):
    server_count: int = Field(ge=1, description="The cluster's new number of servers.")


class RebuildIn(StrictBody):
    image: str | None = Field(None, description="New image; default: the flavor's first.")


class MetadataIn(StrictBody):
    metadata: dict[str, str]
    replace: bool = Field(False, description="Replace all metadata instead of merging.")


class GpuOut(BaseModel):
    """One GPU: inventory, health and its last sample (null readings: no sample yet)."""

    index: int
    uuid: str | None = Field(description="null: a host registered by hand, without an agent.")
    name: str | None
    memory_mib: int | None
    pci_bus_id: str | None = None
    mig_mode: bool | None = None
    nvlinks: int = 0
    healthy: bool | None = Field(description="null: no agent watches its host.")
    problems: str = ""
    warnings: list[str] = Field(default_factory=list)
    in_use: bool | None = None
    utilization_pct: int | None = None
    memory_used_mib: int | None = None
    temperature_c: int | None = None
    power_w: float | None = None
    last_xid: int | None = None


class SshHostKeyOut(BaseModel):
    key: str = Field(description="`TYPE BASE64`, as known_hosts holds it after the host name.")
    fingerprint: str = Field(description="`SHA256:...`, what ssh shows for the host key.")


class ServerOut(BaseModel):
    id: str
    name: str
    position: int
    status: str = Field(description="Nova's: BUILD, ACTIVE, SHUTOFF, SHELVED_OFFLOADED, ...")
    image: str
    address: str
    host_id: str | None
    gpus: list[GpuOut] = Field(
        default_factory=list, description="The GPUs it holds (GPU clusters), by UUID."
    )
    ssh_host_keys: list[SshHostKeyOut] = Field(
        default_factory=list,
        description="Its sshd's public host keys: check them, do not trust on first use.",
    )
    ssh_port: int | None = Field(
        None,
        description="Its direct SSH port on the controller's host, where the operator gives"
        " servers one (`ssh_direct_ports`); null: reach it through the tunnel.",
    )


class VipuOut(BaseModel):
    cluster_id: str | None
    allocation_id: str | None
    user_id: str | None


class ClusterStorageOut(BaseModel):
    name: str
    mount_path: str | None = Field(description="Where the bucket is mounted (null: not).")


class ClusterSummary(BaseModel):
    """What a cluster is in brief: its name, flavor, status, image and size."""

    id: str
    name: str
    flavor: str
    kind: str
    status: str
    image: str
    server_count: int
    ipus: int
    gpus: int
    gpu_family: str | None


class ClusterOut(ClusterSummary):
    interfaces: list[dict[str, str]]
    network: dict[str, Any]
    metadata: dict[str, str]
    vipu: VipuOut | None
    saved_partitions: list[str] | None = Field(
        description="Ids of the partitions kept while SUSPENDED (null otherwise)."
    )
    fabric: str | None
    task_id: str | None = Field(description="The task running on it now, if any.")
    error: str
    created_at: datetime
    updated_at: datetime
    servers: list[ServerOut]
    volumes: list[VolumeOut]
    dataset_storage: ClusterStorageOut | None = Field(
        None, description="The dataset storage its servers hold, if any."
    )
    keypairs: list[str] = Field(
        default_factory=list, description="Names of the keypairs that may log in over SSH."
    )


class MetadataOut(BaseModel):
    task: TaskOut
    metadata: dict[str, str]


class ShellOut(BaseModel):
    kind: str = Field(
        description="`relay`: a WebSocket to `connect` (the server's shell, relayed by the"
        " controller, see docs/cloud.md); `ssh`: ssh to `user`@`host` -p `port`."
    )
    host: str = Field(description="The server's host name (relay) or address (ssh).")
    user: str = Field(description="Who the shell runs as on the server.")
    port: int = Field(description="ssh's port; 0 for the relay.")
    connect: str = Field(
        description="The relay's path under the API's URL (a WebSocket, same bearer token)."
    )
    console: str = Field(
        default="",
        description="A remote console of the server (OpenStack: Nova's noVNC URL); empty"
        " where the back end has none.",
    )
