"""The REST API's calls (``/api/v1``, admin under ``/api/v1/admin``), described once.

Each returns an :class:`~.http_transport.HttpCall` reading the reply into
the records of :mod:`.rest_records`; :mod:`.rest` runs them. No I/O here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Unpack
from urllib.parse import quote

from vpod.wire.rest.version import Version

from . import rest_records as read
from .admin_calls import AllocationOptions, ClusterLayout, EventFilter
from .admin_records import (
    Agent,
    AgentFaults,
    Allocation,
    AuditEvent,
    Cluster,
    ClusterTestReport,
    CreatedUser,
    DiscoveredAgent,
    Fault,
    LinkTest,
    PartitionInfo,
    User,
)
from .http_transport import HttpCall, delete, get, nothing, post, put
from .partition_waits import WaitUntilActive
from .records import IpuAttributes, Partition, PartitionStatus
from .user_calls import PartitionOptions

API_PREFIX = "/api/v1"


def _id(ref: str) -> str:
    return quote(ref, safe="")


def _dashed(name: str) -> str:
    return name.lower().replace("_", "-")


def version() -> HttpCall[str]:
    return get("/version", lambda data: Version.model_validate(data).version)


def list_partitions(allocation: str | None = None) -> HttpCall[list[Partition]]:
    return get(
        "/partitions",
        lambda data: [read.partition(p) for p in data["partitions"]],
        allocation=allocation,
    )


def get_partition(partition_id: str) -> HttpCall[Partition]:
    return get(f"/partitions/{_id(partition_id)}", read.partition)


def create_partition(
    partition_id: str, size: int, **options: Unpack[PartitionOptions]
) -> HttpCall[Partition]:
    body: dict[str, Any] = {"id": partition_id, "size": size}
    plain = {
        "allocation": "allocation_id",
        "cluster": "cluster_id",
        "num_gcds": "num_gcds",
        "num_replicas": "num_replicas",
        "num_ilds": "num_ipulink_segments",
        "reconfigurable": "reconfigurable",
        "disable_auto_reset": "disable_auto_reset",
        "relocatable": "relocatable",
    }
    for key, field in plain.items():
        if key in options:
            body[field] = options[key]  # type: ignore[literal-required]
    if "routing" in options:
        body["ipulink_routing_type"] = options["routing"].cli_name
    if "gw_routing" in options:
        body["gw_routing_type"] = options["gw_routing"].cli_name
    if "sync_type" in options:
        body["sync_type"] = options["sync_type"].cli_name
    return post("/partitions", read.partition, body)


def remove_partition(partition_id: str, *, force: bool = False) -> HttpCall[None]:
    return delete(f"/partitions/{_id(partition_id)}", nothing, force=force or None)


def reset_partition(partition_id: str, *, relocatable: bool = False) -> HttpCall[None]:
    return post(
        f"/partitions/{_id(partition_id)}/reset", nothing, None, relocatable=relocatable or None
    )


def partition_status(partition_id: str) -> HttpCall[PartitionStatus]:
    return get(f"/partitions/{_id(partition_id)}/status", read.partition_status)


wait_until_active = WaitUntilActive(partition_status)
"""Poll the partition's status until it is ACTIVE (the user clients' ``wait_until_active``)."""


def ipuof_files(partition_id: str) -> HttpCall[dict[str, dict[str, Any]]]:
    """Every GCD's IPUoF file by name (``<partition>_gcd<N>.conf``)."""
    return get(f"/partitions/{_id(partition_id)}/ipuof-config", lambda data: dict(data["files"]))


def ipuof_file(partition_id: str, gcd: int = 0) -> HttpCall[dict[str, Any]]:
    """GCD ``gcd``'s IPUoF file: exactly what ``~/.ipuof.conf.d/*.conf`` holds."""
    return get(f"/partitions/{_id(partition_id)}/ipuof-config", lambda data: dict(data), gcd=gcd)


def list_allocations(cluster: str | None = None) -> HttpCall[list[Allocation]]:
    """The allocations the caller may use (every one, for an administrator)."""
    return get(
        "/allocations",
        lambda data: [read.allocation(a) for a in data["allocations"]],
        cluster=cluster,
    )


def list_ipu_attributes(agents: Sequence[str] = ()) -> HttpCall[list[IpuAttributes]]:
    return _ipu_attributes("/ipu-attributes", agents)


def list_all_ipu_attributes(agents: Sequence[str] = ()) -> HttpCall[list[IpuAttributes]]:
    """Every agent's IPU attributes (administrators)."""
    return _ipu_attributes("/admin/ipu-attributes", agents)


def _ipu_attributes(path: str, agents: Sequence[str]) -> HttpCall[list[IpuAttributes]]:
    return get(
        path,
        lambda data: [read.ipu_attributes(a) for a in data["agents"]],
        agent=list(agents) or None,
    )


# -- administration


def create_agent(agent_id: str, host: str, port: int, *, key: str = "") -> HttpCall[Agent]:
    body: dict[str, Any] = {"id": agent_id, "host": host, "port": port}
    if key:
        body["agent_key"] = key
    return post("/admin/agents", read.agent, body)


def list_agents(cluster: str | None = None) -> HttpCall[list[Agent]]:
    return get(
        "/admin/agents", lambda data: [read.agent(a) for a in data["agents"]], cluster=cluster
    )


def remove_agent(agent_id: str, *, force: bool = False) -> HttpCall[None]:
    return delete(f"/admin/agents/{_id(agent_id)}", nothing, force=force or None)


def discover_agents(
    addresses: Sequence[str] = (), *, add: bool = False, key: str = ""
) -> HttpCall[list[DiscoveredAgent]]:
    body: dict[str, Any] = {"addresses": list(addresses), "add": add}
    if key:
        body["agent_key"] = key
    return post(
        "/admin/agents/discover", lambda data: [read.discovered(a) for a in data["agents"]], body
    )


def inject_fault(agent_id: str, fault: Fault) -> HttpCall[AgentFaults]:
    return post(f"/admin/agents/{_id(agent_id)}/faults", read.agent_faults, read.fault_body(fault))


def clear_fault(agent_id: str, fault: Fault | None = None) -> HttpCall[AgentFaults]:
    params: dict[str, Any] = {}
    if fault is not None:
        params = {"kind": _dashed(fault.kind.name)}
        if fault.device_id or fault.kind.name == "IPU":
            params["device_id"] = fault.device_id
        if fault.link_id:
            params["link_id"] = fault.link_id
    return delete(f"/admin/agents/{_id(agent_id)}/faults", read.agent_faults, **params)


def create_cluster(
    cluster_id: str, agent_ids: Sequence[str], **layout: Unpack[ClusterLayout]
) -> HttpCall[Cluster]:
    body: dict[str, Any] = {"id": cluster_id, "agent_ids": list(agent_ids)}
    num_ilds = layout.get("num_ilds")
    topology = layout.get("topology")
    cluster_topology = layout.get("cluster_topology")
    if num_ilds:
        body["num_ipulinkdomains"] = num_ilds
    if topology is not None:
        body["topology"] = topology.value
    if cluster_topology is not None:
        body["cluster_topology"] = cluster_topology.value
    return post("/admin/clusters", read.cluster, body)


def list_clusters() -> HttpCall[list[Cluster]]:
    return get("/admin/clusters", lambda data: [read.cluster(c) for c in data["clusters"]])


def remove_cluster(cluster_id: str, *, force: bool = False) -> HttpCall[None]:
    return delete(f"/admin/clusters/{_id(cluster_id)}", nothing, force=force or None)


def cluster_test(cluster_id: str, tests: Sequence[LinkTest] = ()) -> HttpCall[ClusterTestReport]:
    body = {"tests": [_dashed(t.name) for t in tests]}
    return post(f"/admin/clusters/{_id(cluster_id)}/test", read.test_report, body)


def create_allocation(
    allocation_id: str, cluster_id: str, **options: Unpack[AllocationOptions]
) -> HttpCall[Allocation]:
    body: dict[str, Any] = {"id": allocation_id, "cluster_id": cluster_id}
    size = options.get("size")
    if size is not None:
        body["size"] = size
    if options.get("agent_ids"):
        body["agent_ids"] = list(options["agent_ids"])
    if options.get("hosts"):
        body["hosts"] = list(options["hosts"])
    return post("/admin/allocations", read.allocation, body)


def set_allocation_hosts(allocation_id: str, hosts: Sequence[str]) -> HttpCall[Allocation]:
    return put(
        f"/admin/allocations/{_id(allocation_id)}/hosts", read.allocation, {"hosts": list(hosts)}
    )


def remove_allocation(allocation_id: str, *, force: bool = False) -> HttpCall[None]:
    return delete(f"/admin/allocations/{_id(allocation_id)}", nothing, force=force or None)


def create_user(
    user_id: str, *, allocation_ids: Sequence[str] = (), admin: bool = False
) -> HttpCall[CreatedUser]:
    body = {"id": user_id, "allocation_ids": list(allocation_ids), "admin": admin}
    return post("/admin/users", read.created_user, body)


def list_users() -> HttpCall[list[User]]:
    return get("/admin/users", lambda data: [read.user(u) for u in data["users"]])


def rotate_user_key(user_id: str) -> HttpCall[CreatedUser]:
    return post(f"/admin/users/{_id(user_id)}/key", read.created_user)


def remove_user(user_id: str) -> HttpCall[None]:
    return delete(f"/admin/users/{_id(user_id)}", nothing)


def list_partition_infos(
    *, allocation: str | None = None, cluster: str | None = None
) -> HttpCall[list[PartitionInfo]]:
    """Every allocation's partitions with their status (administrators)."""
    return get(
        "/admin/partitions",
        lambda data: [read.partition_info(p) for p in data["partitions"]],
        allocation=allocation,
        cluster=cluster,
    )


def _stamp(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return aware.isoformat()


def list_events(**filters: Unpack[EventFilter]) -> HttpCall[list[AuditEvent]]:
    return get(
        "/admin/events",
        lambda data: [read.event(e) for e in data["events"]],
        since=_stamp(filters.get("since")),
        until=_stamp(filters.get("until")),
        actor=filters.get("actor") or None,
        action=filters.get("action") or None,
        target=filters.get("target") or None,
        outcome=filters.get("outcome") or None,
        limit=filters.get("limit") or None,
        before_id=filters.get("before_id") or None,
    )
