"""The JSON shapes of the cloud API (requests and responses), with their OpenAPI descriptions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..validation import BOOT_VOLUME_DEFAULT_GIB


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- requests -------------------------------------------------------------------------------


class InterfaceIn(_In):
    type: str = Field("external", description="`external`, `subnet` or `any_subnet`.")


class ClusterVolumeIn(_In):
    """A new volume (`name` and `size_gib`), or an existing available one (`id`: id or name)."""

    id: str | None = Field(None, description="Attach this available volume (id or name).")
    name: str | None = Field(None, description="Create a new data volume with this name.")
    size_gib: int | None = Field(None, ge=1, description="Size of the new volume.")
    volume_type: str = Field("standard", description="`standard` or `ssd`.")


class ClusterCreateIn(_In):
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


class LimitsIn(_In):
    flavor: str
    server_count: int | None = None
    volumes_gib: list[int] = Field(default_factory=list, description="Sizes of new volumes.")
    boot_volume_gib: int = BOOT_VOLUME_DEFAULT_GIB


class ResizeIn(_In):
    server_count: int = Field(ge=1, description="The cluster's new number of servers.")


class RebuildIn(_In):
    image: str | None = Field(None, description="New image; default: the flavor's first.")


class MetadataIn(_In):
    metadata: dict[str, str]
    replace: bool = Field(False, description="Replace all metadata instead of merging.")


class VolumeCreateIn(_In):
    name: str
    size_gib: int = Field(ge=1)
    volume_type: str = "standard"


class AttachIn(_In):
    cluster: str = Field(description="Cluster id or name.")
    server: int = Field(1, ge=1, description="Which server of the cluster (1 = the first).")


class ProjectCreateIn(_In):
    id: str
    name: str = ""
    quotas: dict[str, int] = Field(default_factory=dict, description="-1 means unlimited.")


class QuotasIn(_In):
    quotas: dict[str, int]


class TokenIn(_In):
    label: str = ""


class HostIn(_In):
    id: str
    role: str = Field(description="`baremetal` or `hypervisor`.")
    model: str = Field(description="`poplar`, `h100-80`, `a100-80`, `a100-40`, `l40s-48`.")
    fabric: str | None = Field(None, description="InfiniBand fabric id, if on one.")
    address: str = ""
    slots: int | None = Field(None, description="GPUs (default 8; 1 for Poplar hosts).")


class HostEnabledIn(_In):
    enabled: bool


# -- responses ------------------------------------------------------------------------------


class PhaseOut(BaseModel):
    phase: str
    at: datetime


class TaskOut(BaseModel):
    id: str
    project_id: str
    operation: str
    resource_type: str
    resource_id: str
    resource_name: str
    state: str = Field(description="NEW, RUNNING, FINISHED or ERROR.")
    detailed_state: str | None = Field(description="The phase it is in (or ended in).")
    phases: list[PhaseOut] = Field(description="Every phase entered so far, with when.")
    expected_phases: list[str] = Field(description="The phases this operation walks, in order.")
    error: str = ""
    warnings: list[str] = Field(default_factory=list)
    params: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None


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


class VolumeOut(BaseModel):
    id: str
    name: str
    size_gib: int
    volume_type: str
    boot: bool
    status: str = Field(description="Cinder's: creating, available, attaching, in-use, ...")
    cluster_id: str | None
    server_id: str | None
    task_id: str | None
    created_at: datetime


class VipuOut(BaseModel):
    cluster_id: str | None
    allocation_id: str | None
    user_id: str | None


class ClusterStorageOut(BaseModel):
    name: str
    mount_path: str | None = Field(description="Where the bucket is mounted (null: not).")


class ClusterOut(BaseModel):
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


class FlavorOut(BaseModel):
    name: str
    kind: str
    description: str
    vcpus: int
    ram_gib: int
    disk_gib: int
    network: str
    accelerators: str
    ipus: int
    gpus_per_server: int
    host_model: str | None
    poplar_count: int
    infiniband: bool
    bare_metal: bool
    takes_volumes: bool
    price_per_hour: str
    price_per_month: str
    currency: str
    capacity: int = Field(description="How many more fit now (servers, for GPU flavors).")
    images: list[str]


class ExceededOut(BaseModel):
    quota: str
    limit: int
    used: int
    requested: int
    message: str


class LimitsOut(BaseModel):
    fits: bool
    exceeded: list[ExceededOut]
    usage: dict[str, int]
    reserved_free: int = Field(
        0, description="Units of this flavor your reservations hold that no cluster uses now."
    )


class ReservationIn(_In):
    flavor: str = Field(description="A virtual vPOD or GPU bare-metal flavor.")
    units: int = Field(description="vPODs (or GPU servers) to reserve.")
    term: str = Field("1y", description="A term `vpod reservation create --help` lists.")


class UtilisationOut(BaseModel):
    start: datetime
    end: datetime
    used_unit_minutes: int
    reserved_unit_minutes: int
    ratio: float = Field(description="used ÷ reserved unit-minutes (0 when nothing was reserved).")


class ReservationOut(BaseModel):
    id: str
    flavor: str
    pool: str
    units: int
    pool_units: int = Field(description="Hardware units held (IPU-Machines or GPU servers).")
    term: str
    status: str = Field(description="`active`, `expired` or `cancelled`.")
    price_per_unit_month: str
    price_per_month: str
    currency: str
    starts_at: datetime
    ends_at: datetime
    cancelled_at: datetime | None
    billed_until: datetime = Field(description="Charges run until then.")
    utilisation: UtilisationOut


class ProjectOut(BaseModel):
    id: str
    name: str
    quotas: dict[str, int]
    usage: dict[str, int]
    created_at: datetime


class TokenOut(BaseModel):
    id: str
    project_id: str | None
    label: str
    created_at: datetime
    token: str | None = Field(None, description="The token itself: shown only when made.")


class ProjectCreatedOut(BaseModel):
    project: ProjectOut
    token: TokenOut


class InvoiceLineOut(BaseModel):
    resource_type: str
    resource_id: str
    resource_name: str
    item: str
    quantity: int
    unit_price_per_hour: str
    minutes: int
    amount: str
    billing: str = Field(
        "on_demand", description="`on_demand` (per minute) or `reserved` (per month, pro rata)."
    )
    unit_price_per_month: str | None = Field(None, description="Reserved lines: one unit-month.")


class InvoiceOut(BaseModel):
    project_id: str
    start: datetime
    end: datetime
    currency: str
    total: str
    minutes: int
    lines: list[InvoiceLineOut]
    by_item: dict[str, str]


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


class HostOut(BaseModel):
    id: str
    role: str
    model: str
    slots: int
    free_slots: int
    fabric: str | None
    address: str
    enabled: bool
    registered_at: datetime


class MetadataOut(BaseModel):
    task: TaskOut
    metadata: dict[str, str]
