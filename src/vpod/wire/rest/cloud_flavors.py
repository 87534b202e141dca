"""The cloud API's catalog of flavors, and whether a cluster would fit the project's quotas."""

from __future__ import annotations

from pydantic import BaseModel, Field

from .cloud_clusters import BOOT_VOLUME_DEFAULT_GIB
from .fields import StrictBody


class FlavorSpec(BaseModel):
    """What a flavor's servers are: the catalog's description of it, without its prices."""

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


class FlavorOut(FlavorSpec):
    price_per_hour: str
    price_per_month: str
    currency: str
    capacity: int = Field(description="How many more fit now (servers, for GPU flavors).")
    images: list[str]


class LimitsIn(StrictBody):
    flavor: str
    server_count: int | None = None
    volumes_gib: list[int] = Field(default_factory=list, description="Sizes of new volumes.")
    boot_volume_gib: int = BOOT_VOLUME_DEFAULT_GIB


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
