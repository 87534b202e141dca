"""The whole fabric over REST: who am I, the pod map, fragmentation, and the change stream.

Calls for ``GET /api/v1/whoami``, ``/api/v1/admin/pod-map``,
``/api/v1/admin/allocations/{id}/fragmentation`` and the server-sent events
of ``/api/v1/admin/stream`` (docs/rest-api.md), answered in the shapes the controller answers with
(:mod:`vpod.wire.rest.pod_map`, defined once); :class:`~.rest.RestClient` and
:class:`~.rest.AsyncRestClient` run them::

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

from vpod.wire.rest.pod_map import (
    AllocationMap,
    ClusterMap,
    DomainMap,
    Fragmentation,
    GwLink,
    Identity,
    IpuCell,
    MachineMap,
    PartitionSummary,
    PodMap,
    SizeOutlook,
)

from .http_transport import HttpCall, HttpSite, error_of_exception, error_of_reply, get


@dataclass(frozen=True)
class Change:
    """One event of the stream: ``kind`` (``hello`` once it is open, then ``partition``,
    ``agent``, ``telemetry``, ``inventory``, ``audit``, ``resync``) and the object's whole
    state."""

    kind: str
    data: dict[str, Any]
    seq: int = 0


def whoami() -> HttpCall[Identity]:
    return get("/whoami", Identity.model_validate)


def pod_map(cluster: str | None = None) -> HttpCall[list[ClusterMap]]:
    """Every cluster (or one) as domains → machines in ladder order → IPUs."""
    return get(
        "/admin/pod-map", lambda data: list(PodMap.model_validate(data).clusters), cluster=cluster
    )


def fragmentation(allocation_id: str) -> HttpCall[Fragmentation]:
    path = f"/admin/allocations/{quote(allocation_id, safe='')}/fragmentation"
    return get(path, Fragmentation.model_validate)


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


__all__ = [
    "AllocationMap",
    "Change",
    "ClusterMap",
    "DomainMap",
    "Fragmentation",
    "GwLink",
    "Identity",
    "IpuCell",
    "MachineMap",
    "PartitionSummary",
    "SizeOutlook",
    "follow_changes",
    "follow_changes_async",
    "fragmentation",
    "pod_map",
    "read_events",
    "whoami",
]
