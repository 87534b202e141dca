"""Views of the whole fabric over HTTP: who am I, the pod map, fragmentation, the change stream.

- ``GET /api/v1/whoami``: the caller as the controller sees it;
- ``GET /api/v1/admin/pod-map``: clusters → domains → machines → IPUs;
- ``GET /api/v1/admin/allocations/{id}/fragmentation``: free blocks and what fits;
- ``GET /api/v1/admin/stream``: server-sent events, one per change
  (:mod:`vpod.controller.change_feed`), so a page or a script follows the
  pods without polling each object.

A module-level router; its handlers take their use-cases as dependencies
(:mod:`.rest_deps`). Its bodies are the shapes of :mod:`vpod.wire.rest.pod_map`,
which the use-case builds and ``vpod.client`` reads.
"""

import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Path, Query
from fastapi.responses import StreamingResponse

from vpod.wire.rest.pod_map import Fragmentation, Identity, PodMap

from ..change_feed import Change, ChangeFeed
from .rest_auth import AsAdmin, AsUser
from .rest_deps import AuthenticatorDep, ChangesDep, PodMapDep
from .rest_errors import error_responses
from .rest_routes import Routes
from .rest_user import API_PREFIX

KEEPALIVE_S = 15.0
"""A comment line this often keeps proxies from closing a quiet stream."""
RETRY_MS = 1000
"""How soon a browser reconnects a dropped stream."""


def sse_frame(change: Change) -> bytes:
    """One server-sent event: ``id``, ``event`` (the kind) and one line of JSON."""
    data = json.dumps(change.data, separators=(",", ":"))
    return f"id: {change.seq}\nevent: {change.kind}\ndata: {data}\n\n".encode()


router = APIRouter(prefix=API_PREFIX)
"""Whoami, the pod map, fragmentation and the change stream (``create_http_app`` includes it)."""

pod_map_routes = Routes(router, "admin: pod map")


@Routes(router, "version").get("/whoami", 401, 503)
async def whoami(caller: AsUser, auth: AuthenticatorDep) -> Identity:
    """The caller as the controller sees it: user id, admin or not, allocations."""
    allocations = sorted(caller.allocation_ids) if caller.allocation_ids is not None else None
    return Identity(
        user_id=caller.user_id,
        admin=caller.admin or not auth.secure,  # without --secure everyone is one
        allocation_ids=tuple(allocations) if allocations is not None else None,
        secure=auth.secure,
    )


@pod_map_routes.get("/admin/pod-map", 400, 401, 403, 404, 503)
async def pod_map(
    caller: AsAdmin,
    maps: PodMapDep,
    cluster: Annotated[str | None, Query(max_length=64, description="Only this one.")] = None,
) -> PodMap:
    """Every cluster as IPU-Link domains → machines in ladder order → 4 IPUs each, with
    partitions, allocations, faults, reachability and utilisation; GW-Links between
    domains."""
    return PodMap(clusters=tuple(await maps.pod_map(caller, cluster or None)))


@pod_map_routes.get("/admin/allocations/{allocation_id}/fragmentation", 400, 401, 403, 404, 503)
async def fragmentation(
    caller: AsAdmin, allocation_id: Annotated[str, Path(max_length=64)], maps: PodMapDep
) -> Fragmentation:
    """The allocation's largest free aligned block, its free blocks per size, and what a
    partition of each size would get right now (nothing is reserved)."""
    return await maps.fragmentation(caller, allocation_id)


@router.get(
    "/admin/stream",
    tags=["admin: pod map"],
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "Server-sent events: `partition`, `agent`, `inventory`,"
            " `audit`, `resync`; each `data` is one JSON object.",
        },
        **error_responses(401, 403),
    },
)
async def stream(_caller: AsAdmin, changes: ChangesDep) -> StreamingResponse:
    """Changes as they happen, as server-sent events (`text/event-stream`)."""
    return StreamingResponse(
        _events(changes),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def _events(changes: ChangeFeed) -> AsyncIterator[bytes]:
    async with changes.subscribe() as subscription:
        yield f"retry: {RETRY_MS}\nevent: hello\ndata: {{}}\n\n".encode()
        while not subscription.ended:
            change = await subscription.next(KEEPALIVE_S)
            if change is None:
                if not subscription.ended:
                    yield b": keepalive\n\n"
                continue
            frames = [sse_frame(change)]
            # What arrived meanwhile goes out in the same write.
            while (more := subscription.pending()) is not None:
                frames.append(sse_frame(more))
            yield b"".join(frames)
