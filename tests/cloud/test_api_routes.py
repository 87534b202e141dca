"""Every route of the cloud API answers the cloud's errors as HTTP, never as a 500."""

from __future__ import annotations

from fastapi.routing import APIRoute

from vpod.cloud.api import router as cloud_api
from vpod.cloud.api.errors import CloudRoute


def test_every_route_maps_the_cloud_errors() -> None:
    """Included routes keep the class they were made with, so the module-level router (the
    administrator's routes are on it too, under /admin) must make CloudRoutes: a plain APIRoute
    would answer a refusal (a cloud error) with a 500."""
    routes = [r for r in cloud_api.router.routes if isinstance(r, APIRoute)]
    assert len(routes) >= 38  # every route of docs/cloud.md's table, and the OpenAPI document
    assert all(isinstance(r, CloudRoute) for r in routes), [
        r.path for r in routes if not isinstance(r, CloudRoute)
    ]
