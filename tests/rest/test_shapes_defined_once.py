"""The REST API's shapes are defined once, in ``vpod.wire.rest``, and the client reads through them.

The routes are found, not listed: every ``/api/v1`` route of the controller's
HTTP app, so a route added with a body or an answer defined elsewhere fails
here the day it is added. The client side reads replies through the same
shapes: a reply that is not one is the server's fault, said as such.
"""

from __future__ import annotations

import httpx
import pytest
from fastapi.routing import APIRoute
from pydantic import BaseModel

from vpod.client import rest_records
from vpod.client.errors import NotFound, ServerError
from vpod.client.http_transport import HttpSite, error_of_reply
from vpod.controller.transports.rest import create_http_app

from .live import LivePod
from .test_request_bodies import _flat, _models, _nested

SHAPES = "vpod.wire.rest."


def _api_models(pod: LivePod) -> dict[type[BaseModel], str]:
    """Every model a ``/api/v1`` route takes or answers with (nested ones too), with a route."""
    found: dict[type[BaseModel], str] = {}
    for route in _flat(create_http_app(pod.controller).routes):
        if not isinstance(route, APIRoute) or not route.path.startswith("/api/v1"):
            continue
        annotations = [param.field_info.annotation for param in route.dependant.body_params]
        annotations.append(route.response_model)
        for spec in route.responses.values():
            annotations.append(spec.get("model"))
        seen: set[type[BaseModel]] = set()
        for annotation in annotations:
            for model in _models(annotation):
                _nested(model, seen)
        for model in seen:
            found.setdefault(model, f"{sorted(route.methods)} {route.path}")
    return found


def test_every_body_and_answer_of_the_api_is_a_shape_of_vpod_wire_rest(pod: LivePod) -> None:
    models = _api_models(pod)
    # the walk reaches bodies, answers, nested shapes and the error body (else it proves nothing)
    names = {model.__name__ for model in models}
    assert {"CreatePartitionBody", "Partition", "PartitionIpuOut", "ErrorResponse"} <= names
    elsewhere = sorted(
        f"{model.__module__}.{model.__name__} (used by {route})"
        for model, route in models.items()
        if not model.__module__.startswith(SHAPES)
    )
    assert not elsewhere, f"REST shapes defined outside vpod.wire.rest: {elsewhere}"


def _partition_json() -> dict[str, object]:
    return {
        "id": "p1",
        "allocation_id": "alloc",
        "cluster_id": "pod",
        "size": 1,
        "num_ipulink_segments": 1,
        "num_gcds": 1,
        "num_replicas": 1,
        "reconfigurable": False,
        "ipulink_routing_type": "dnc",
        "gw_routing_type": None,
        "sync_type": "c2-compatible",
        "ready_state": "ACTIVE",
        "operation_state": "IDLE",
        "disable_auto_reset": False,
        "relocatable": False,
        "ipuof_server_version": "2.6.0",
        "created_at": "2026-01-02T03:04:05Z",
        "updated_at": "2026-01-02T03:04:05Z",
        "ipus": [
            {
                "routing_id": 0,
                "ipulink_domain_topology_id": 0,
                "ipulink_domain_routing_id": 0,
                "topology_id": 3,
                "gcd": 0,
                "agent_id": "ag1",
                "device_id": 3,
            }
        ],
    }


def test_the_client_reads_a_partition_through_its_shape() -> None:
    data = _partition_json()
    found = rest_records.partition(data)
    assert (found.id, found.allocation_id, found.num_gcds) == ("p1", "alloc", 1)
    assert found.ipus[0].agent_id == "ag1"
    assert found.ipus[0].device_id == 3
    assert found.created_at is not None
    assert found.created_at.year == 2026
    assert found.raw is data


@pytest.mark.parametrize("missing", ["ipus", "ready_state", "created_at"])
def test_a_reply_that_is_not_the_shape_is_the_servers_fault(missing: str) -> None:
    data = _partition_json()
    del data[missing]
    with pytest.raises(ServerError, match="the API answered no Partition") as raised:
        rest_records.partition(data)
    assert missing in str(raised.value)


def test_an_error_reply_is_read_through_the_error_body_else_said_plainly() -> None:
    site = HttpSite(base_url="http://127.0.0.1:9", prefix="/api/v1", name="the REST API")
    ours = httpx.Response(
        404, json={"error": {"code": "NOT_FOUND", "message": "partition p9 does not exist"}}
    )
    error = error_of_reply(site, ours)
    assert isinstance(error, NotFound)
    assert "partition p9 does not exist" in str(error)
    foreign = httpx.Response(502, text="<html>bad gateway</html>")
    said = str(error_of_reply(site, foreign))
    assert "answered 502" in said
    assert "bad gateway" in said
