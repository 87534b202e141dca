"""The whole fabric over REST: who am I, the pod map, fragmentation, and the change stream.

Records and calls for ``GET /api/v1/whoami``, ``/api/v1/admin/pod-map``,
``/api/v1/admin/allocations/{id}/fragmentation`` and the server-sent events
of ``/api/v1/admin/stream`` (docs/rest-api.md); :class:`~.rest.RestClient`
and :class:`~.rest.AsyncRestClient` run them::

    >>> with RestClient.from_config(url="http://127.0.0.1:8080") as rest:
    ...     for change in rest.changes():
    ...         print(change.kind, change.data.get("id"))
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from .http_transport import HttpCall, HttpSite, error_of_exception, error_of_reply, get


@dataclass(frozen=True)
class Identity:
    user_id: str
    admin: bool
    allocation_ids: tuple[str, ...] | None
    """None: every allocation."""
    secure: bool


@dataclass(frozen=True)
class IpuCell:
    slot: int
    device_id: int
    position: int
    partition_id: str | None
    fault: str
    utilisation: float | None
    process: str = ""


@dataclass(frozen=True)
class MachineMap:
    index: int
    agent_id: str
    allocation_id: str | None
    reachable: bool
    state: str
    reason: str
    links_down: tuple[str, ...]
    ipus: tuple[IpuCell, ...]


@dataclass(frozen=True)
class DomainMap:
    index: int
    topology: str
    machines: tuple[MachineMap, ...]


@dataclass(frozen=True)
class PartitionSummary:
    id: str
    allocation_id: str
    cluster_id: str
    size: int
    ready_state: str
    operation_state: str
    slots: tuple[int, ...]


@dataclass(frozen=True)
class ClusterMap:
    id: str
    machine_type: str
    ild_topology: str
    gw_topology: str
    num_ipus: int
    domains: tuple[DomainMap, ...]
    gw_links: tuple[tuple[int, int], ...]
    allocations: dict[str, tuple[int, ...]]
    """Allocation id → its machines."""
    partitions: tuple[PartitionSummary, ...]

    def ipus(self) -> Iterator[IpuCell]:
        for domain in self.domains:
            for machine in domain.machines:
                yield from machine.ipus


@dataclass(frozen=True)
class SizeOutlook:
    size: int
    fits: bool
    slots: tuple[int, ...]
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Fragmentation:
    allocation_id: str
    cluster_id: str
    size: int
    free_ipus: int
    unavailable_ipus: int
    largest_free_block: int
    free_blocks: dict[int, int]
    sizes: tuple[SizeOutlook, ...]


@dataclass(frozen=True)
class Change:
    """One event of the stream: ``kind`` (``hello`` once it is open, then ``partition``,
    ``agent``, ``telemetry``, ``inventory``, ``audit``, ``resync``) and the object's whole
    state."""

    kind: str
    data: dict[str, Any]
    seq: int = 0


def _identity(data: Any) -> Identity:
    allocations = data["allocation_ids"]
    return Identity(
        user_id=data["user_id"],
        admin=bool(data["admin"]),
        allocation_ids=tuple(allocations) if allocations is not None else None,
        secure=bool(data["secure"]),
    )


def _cluster(data: Any) -> ClusterMap:
    return ClusterMap(
        id=data["id"],
        machine_type=data["machine_type"],
        ild_topology=data["ild_topology"],
        gw_topology=data["gw_topology"],
        num_ipus=int(data["num_ipus"]),
        domains=tuple(
            DomainMap(
                index=d["index"],
                topology=d["topology"],
                machines=tuple(
                    MachineMap(
                        index=m["index"],
                        agent_id=m["agent_id"],
                        allocation_id=m["allocation_id"],
                        reachable=m["reachable"],
                        state=m["state"],
                        reason=m["reason"],
                        links_down=tuple(m["links_down"]),
                        ipus=tuple(IpuCell(**ipu) for ipu in m["ipus"]),
                    )
                    for m in d["machines"]
                ),
            )
            for d in data["domains"]
        ),
        gw_links=tuple((link["a"], link["b"]) for link in data["gw_links"]),
        allocations={a["id"]: tuple(a["machines"]) for a in data["allocations"]},
        partitions=tuple(
            PartitionSummary(**{**p, "slots": tuple(p["slots"])}) for p in data["partitions"]
        ),
    )


def _fragmentation(data: Any) -> Fragmentation:
    return Fragmentation(
        allocation_id=data["allocation_id"],
        cluster_id=data["cluster_id"],
        size=data["size"],
        free_ipus=data["free_ipus"],
        unavailable_ipus=data["unavailable_ipus"],
        largest_free_block=data["largest_free_block"],
        free_blocks={int(k): int(v) for k, v in data["free_blocks"].items()},
        sizes=tuple(
            SizeOutlook(s["size"], s["fits"], tuple(s["slots"]), tuple(s["reasons"]))
            for s in data["sizes"]
        ),
    )


def whoami() -> HttpCall[Identity]:
    return get("/whoami", _identity)


def pod_map(cluster: str | None) -> HttpCall[list[ClusterMap]]:
    return get(
        "/admin/pod-map", lambda data: [_cluster(c) for c in data["clusters"]], cluster=cluster
    )


def fragmentation(allocation_id: str) -> HttpCall[Fragmentation]:
    return get(f"/admin/allocations/{quote(allocation_id, safe='')}/fragmentation", _fragmentation)


STREAM_PATH = "/admin/stream"


def _stream_args(site: HttpSite) -> dict[str, Any]:
    args = site.client_args()
    args["timeout"] = httpx.Timeout(site.timeout_s, read=None)  # quiet streams are fine
    return args


def read_events(lines: Iterable[str]) -> Iterator[Change]:
    """Server-sent events from the stream's lines (comments left out). The first is ``hello``:
    the stream is open, and every change from then on will follow."""
    kind, seq = "", 0
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield Change(kind or "message", json.loads("\n".join(data)), seq)
            kind, data = "", []
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event":
                kind = value
            elif name == "data":
                data.append(value)
            elif name == "id" and value.isdigit():
                seq = int(value)


def follow_changes(site: HttpSite) -> Iterator[Change]:
    """The change stream, blocking, until the caller stops iterating or the server ends it."""
    try:
        with (
            httpx.Client(**_stream_args(site)) as http,
            http.stream("GET", STREAM_PATH) as reply,
        ):
            if reply.status_code >= 400:
                reply.read()
                raise error_of_reply(site, reply)
            yield from read_events(reply.iter_lines())
    except httpx.HTTPError as exc:
        raise error_of_exception(site, exc) from None


async def follow_changes_async(site: HttpSite) -> AsyncIterator[Change]:
    try:
        async with (
            httpx.AsyncClient(**_stream_args(site)) as http,
            http.stream("GET", STREAM_PATH) as reply,
        ):
            if reply.status_code >= 400:
                await reply.aread()
                raise error_of_reply(site, reply)
            lines: list[str] = []
            async for line in reply.aiter_lines():
                lines.append(line)
                if not line:
                    for change in read_events(lines):
                        yield change
                    lines = []
    except httpx.HTTPError as exc:
        raise error_of_exception(site, exc) from None
