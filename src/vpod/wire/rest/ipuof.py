"""A partition's static IPUoF config files (vipu-system.md §5)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class IpuofDevice(BaseModel):
    """One device of a static IPUoF config file (vipu-system.md §5)."""

    ip: str
    server_port: int
    rdma_port: int
    device_id: int
    ipulink_segment_id: int
    routing_id: int
    ipu_arch_id: int
    ipu_id: int
    chip_id: str
    gwsw_version: str


class IpuofConfigFile(BaseModel):
    """One GCD's static IPUoF config: save it as ``<partition>_gcd<N>.conf``."""

    devices: list[IpuofDevice]
    attributes: dict[str, str]


class IpuofConfigSet(BaseModel):
    """Every GCD's config file of a partition, by file name."""

    partition_id: str
    ipuof_server_version: str
    files: dict[str, IpuofConfigFile] = Field(
        description="`<partition>_gcd<N>.conf` -> its content."
    )
