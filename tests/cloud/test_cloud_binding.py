"""``BindCloud`` gives each request for the cloud API the cloud its routes serve (read by
``cloud_of``), without a dependency FastAPI would build every route again for."""

from __future__ import annotations

import asyncio
from typing import Any

from vpod.cloud.api import PREFIX, BindCloud


def _seen_by_the_app(scope: dict[str, Any], cloud: object) -> dict[str, Any]:
    seen: list[dict[str, Any]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope)

    asyncio.run(BindCloud(app, cloud)(scope, None, None))  # type: ignore[arg-type]
    return seen[0]


def test_a_cloud_request_carries_the_cloud_and_the_servers_state_is_never_written() -> None:
    cloud = object()
    shared_state = {"other": 1}
    scope = {"type": "http", "path": PREFIX + "/flavors", "state": shared_state}
    seen = _seen_by_the_app(scope, cloud)
    assert seen["state"] == {"other": 1, "cloud": cloud}
    assert shared_state == {"other": 1}, "the binding wrote into a state other requests share"
    assert seen["path"] == scope["path"]


def test_a_request_outside_the_cloud_api_is_passed_on_as_it_came() -> None:
    for scope in (
        {"type": "http", "path": "/api/v1/version"},
        {"type": "lifespan"},
        {"type": "websocket", "path": PREFIX + "/connect"},
    ):
        assert _seen_by_the_app(scope, object()) is scope
