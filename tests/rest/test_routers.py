"""Each REST router stands alone: served by itself over the controller's use-cases.

The routers are module-level and find their use-cases through FastAPI
dependencies, so an application holding one router (and the use-cases on
``app.state``) serves exactly its routes, with the same answers as the
whole API.
"""

from __future__ import annotations

import httpx
from fastapi import APIRouter, FastAPI

from vpod.controller.transports import rest_admin, rest_user
from vpod.controller.transports.rest_errors import install_error_handlers

from .live import LivePod


def _alone(pod: LivePod, *routers: APIRouter) -> str:
    app = FastAPI()
    install_error_handlers(app)
    for router in routers:
        app.include_router(router)
    app.state.use_cases = pod.controller
    return pod.serve_app(app)


def test_the_user_router_alone_answers_as_the_whole_api(pod: LivePod, http: httpx.Client) -> None:
    """Allocations and a 404 for an unknown partition, the same as the full app; the admin
    routes are simply not there."""
    with httpx.Client(base_url=_alone(pod, rest_user.router)) as alone:
        assert alone.get("/api/v1/allocations").json() == http.get("/api/v1/allocations").json()
        missing = alone.get("/api/v1/partitions/nope")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "NOT_FOUND"
        assert alone.get("/api/v1/admin/agents").status_code == 404


def test_the_admin_router_alone_lists_agents_with_their_cluster(pod: LivePod) -> None:
    with httpx.Client(base_url=_alone(pod, rest_admin.router)) as alone:
        agents = {a["id"]: a for a in alone.get("/api/v1/admin/agents").json()["agents"]}
        assert (agents["ag1"]["cluster_id"], agents["ag1"]["allocation_id"]) == ("pod", "alloc-a")
        assert (agents["ag5"]["cluster_id"], agents["ag5"]["allocation_id"]) == (None, None)
        assert alone.get("/api/v1/version").status_code == 404
