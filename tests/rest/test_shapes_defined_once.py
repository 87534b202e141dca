"""The REST APIs' shapes are defined once, in ``vpod.wire.rest``, and the client reads through them.

The routes are found, not listed: every ``/api/v1`` route of the controller's
HTTP app and every route of the cloud API's routers, so a route added with a
body or an answer defined elsewhere fails here the day it is added. The client
side reads replies through the same shapes: a reply that is not one is the
server's fault, said as such.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.routing import BaseRoute

import vpod.wire.rest
from vpod.client import rest_records
from vpod.client.cloud_records import Task, TaskState
from vpod.client.errors import NotFound, ServerError
from vpod.client.http_transport import HttpSite, error_of_reply
from vpod.client.json_records import from_json
from vpod.cloud.api.dataset_routes import dataset_router
from vpod.cloud.api.router import router as cloud_router
from vpod.cloud.api.ssh_routes import ssh_router
from vpod.controller.transports.rest import create_http_app

from .live import LivePod
from .test_request_bodies import _flat, _models, _nested

SHAPES = "vpod.wire.rest."


def _shapes_by_name() -> dict[str, type[BaseModel]]:
    """Every model of ``vpod.wire.rest``, by its name (what a document's components say)."""
    found: dict[str, type[BaseModel]] = {}
    for info in pkgutil.iter_modules(vpod.wire.rest.__path__, SHAPES):
        for value in vars(importlib.import_module(info.name)).values():
            if isinstance(value, type) and issubclass(value, BaseModel):
                found.setdefault(value.__name__, value)
    return found


def _referenced(spec: dict[str, Any]) -> type[BaseModel] | None:
    """The shape a response documented by reference names (``#/components/schemas/NAME``, as
    the error answers are: vpod.wire.rest.errors.documented_error); it must be one of
    ``vpod.wire.rest``."""
    ref = spec.get("content", {}).get("application/json", {}).get("schema", {}).get("$ref")
    if ref is None:
        return None
    name = ref.rsplit("/", 1)[-1]
    shape = _shapes_by_name().get(name)
    assert shape is not None, f"a response names {ref}, which is no shape of vpod.wire.rest"
    return shape


def _api_models(routes: list[BaseRoute], prefix: str = "") -> dict[type[BaseModel], str]:
    """Every model a route under ``prefix`` takes or answers with (nested ones too), with a
    route that does."""
    found: dict[type[BaseModel], str] = {}
    for route in _flat(routes):
        if not isinstance(route, APIRoute) or not route.path.startswith(prefix):
            continue
        annotations = [param.field_info.annotation for param in route.dependant.body_params]
        annotations.append(route.response_model)
        for spec in route.responses.values():
            annotations.append(spec.get("model"))
            annotations.append(_referenced(spec))
        seen: set[type[BaseModel]] = set()
        for annotation in annotations:
            for model in _models(annotation):
                _nested(model, seen)
        for model in seen:
            found.setdefault(model, f"{sorted(route.methods)} {route.path}")
    return found


def _elsewhere(models: dict[type[BaseModel], str]) -> list[str]:
    return sorted(
        f"{model.__module__}.{model.__name__} (used by {route})"
        for model, route in models.items()
        if not model.__module__.startswith(SHAPES)
    )


def test_every_body_and_answer_of_the_api_is_a_shape_of_vpod_wire_rest(pod: LivePod) -> None:
    models = _api_models(create_http_app(pod.controller).routes, "/api/v1")
    # the walk reaches bodies, answers, nested shapes and the error body (else it proves nothing)
    names = {model.__name__ for model in models}
    assert {"CreatePartitionBody", "Partition", "PartitionIpuOut", "ErrorResponse"} <= names
    elsewhere = _elsewhere(models)
    assert not elsewhere, f"REST shapes defined outside vpod.wire.rest: {elsewhere}"


def test_every_body_and_answer_of_the_cloud_api_is_a_shape_of_vpod_wire_rest() -> None:
    """The GPU host agent's routes excepted: their shapes are built on the agent's types."""
    models = _api_models([*cloud_router.routes, *dataset_router.routes, *ssh_router.routes])
    names = {model.__name__ for model in models}
    assert {"ClusterCreateIn", "ClusterOut", "GpuOut", "KeypairOut", "ErrorResponse"} <= names
    elsewhere = _elsewhere(models)
    assert not elsewhere, f"cloud REST shapes defined outside vpod.wire.rest: {elsewhere}"


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


def test_the_cloud_client_reads_a_reply_through_its_shape() -> None:
    task = {
        "id": "task-1",
        "project_id": "p",
        "operation": "CLUSTER_CREATE",
        "resource_type": "cluster",
        "resource_id": "c1",
        "resource_name": "demo",
        "state": "RUNNING",
        "detailed_state": "NETWORK",
        "phases": [{"phase": "NETWORK", "at": "2026-01-02T03:04:05Z"}],
        "expected_phases": ["NETWORK", "POPLAR_SERVERS"],
        "created_at": "2026-01-02T03:04:05Z",
        "updated_at": "2026-01-02T03:04:05Z",
    }
    read = from_json(Task, task)
    assert (read.id, read.state, read.phases[0].phase) == ("task-1", TaskState.RUNNING, "NETWORK")
    del task["expected_phases"]
    with pytest.raises(ServerError, match="the API answered no TaskOut") as raised:
        from_json(Task, task)
    assert "expected_phases" in str(raised.value)
