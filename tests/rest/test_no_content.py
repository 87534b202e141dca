"""A ``204 No Content`` answer carries nothing after its status line.

Removals and resets answer 204 (:mod:`vpod.controller.transports.rest_no_content`).
Their routes must use the plain response class: FastAPI's default JSON response
would render the handler's None as ``null`` and announce a length on an answer
that may have no body, which strict HTTP clients and proxies refuse.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
from fastapi import Response
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from vpod.controller.transports.rest import create_http_app

from .live import LivePod


def _api_routes(routes: list[BaseRoute]) -> Iterator[APIRoute]:
    """The API routes, with those of included routers spelled out."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _api_routes(inner.routes)
        elif isinstance(route, APIRoute):
            yield route


def test_every_no_content_route_renders_no_body(pod: LivePod) -> None:
    routes = [
        r for r in _api_routes(create_http_app(pod.controller).routes) if r.status_code == 204
    ]
    served = {(method, route.path) for route in routes for method in route.methods or ()}
    assert ("DELETE", "/api/v1/partitions/{partition_id}") in served
    assert ("POST", "/api/v1/partitions/{partition_id}/reset") in served
    wrong = [route.path for route in routes if route.response_class is not Response]
    assert not wrong, f"204 routes that would render a body: {wrong}"
    assert all(route.response_model is None for route in routes)


def test_a_removal_answers_204_with_no_body_type_or_length(http: httpx.Client) -> None:
    made = http.post("/api/v1/admin/agent-tokens", json={"label": "no content"})
    assert made.status_code == 201
    token_id = made.json()["agent_token"]["id"]
    removed = http.delete(f"/api/v1/admin/agent-tokens/{token_id}")
    assert removed.status_code == 204
    assert removed.content == b""
    assert "content-type" not in removed.headers
    assert "content-length" not in removed.headers
    left = http.get("/api/v1/admin/agent-tokens").json()["agent_tokens"]
    assert token_id not in {token["id"] for token in left}
