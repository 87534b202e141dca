"""A huge value in any field is refused as the caller's mistake, with a bounded message.

Every unary rpc of the user, version, admin and agent-registration services,
and every route of the REST API, gets a 10,000-character value in each of
its string fields (and path and query parameters, and JSON body fields) in
turn, the other id fields naming real objects of the pod (agent ``ag1``,
cluster ``c1``, allocation ``al``) so the huge value travels as far as it
can: for ``InjectFault`` that is the agent, whose refusal once quoted the
whole link id and outgrew gRPC's metadata limit. The answer must be a
refusal of the request (INVALID_ARGUMENT, NOT_FOUND ... ; HTTP 4xx), never
UNAVAILABLE, RESOURCE_EXHAUSTED, INTERNAL or a 5xx, and its message at most
:data:`MESSAGE_BOUND` characters.

The requests come from the protos' descriptors and the app's OpenAPI
document, so an rpc, field or route added later is covered without a line
here. The pod is a real ``vipu-server`` (SQLite) with a ``vipu-agent``
process hosting an emulated POD16.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from tests.faults.live import LivePod, build_pod
from vpod.domain.excerpts import MAX_MESSAGE_CHARS
from vpod.wire import admin_pb2, virmgrpc_pb2

HUGE = "z" * 10_000
MESSAGE_BOUND = MAX_MESSAGE_CHARS + 40
"""The guard's limit plus its note of the original length."""
PLAUSIBLE = {"agent_id": "ag1", "cluster_id": "c1", "allocation_id": "al", "agent_ids": "ag1"}
"""Real objects of the pod, for the fields beside the huge one."""
REFUSALS = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.ALREADY_EXISTS,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNAUTHENTICATED,
    }
)
SERVICES = (
    (virmgrpc_pb2.DESCRIPTOR.services_by_name["UserService"], "user"),
    (virmgrpc_pb2.DESCRIPTOR.services_by_name["VersionService"], "user"),
    (admin_pb2.DESCRIPTOR.services_by_name["AdminService"], "admin"),
    (admin_pb2.DESCRIPTOR.services_by_name["AgentRegistrationService"], "admin"),
)
LEFT_OUT_ROUTES = ("/api/v1/admin/stream",)
"""An answer that never ends by design (the change feed)."""

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def pod16(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LivePod]:
    workdir = tmp_path_factory.mktemp("huge")
    pod = build_pod(workdir, f"sqlite:///{workdir / 'vpod.db'}", machines=4, agents_per_process=4)
    try:
        yield pod
    finally:
        pod.close()


# ------------------------------------------------------------------- gRPC


def _string_paths(descriptor: Descriptor, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every string field of a message and of the messages it holds (one level of each)."""
    paths: list[tuple[str, ...]] = []
    for field in descriptor.fields:
        if field.type == FieldDescriptor.TYPE_STRING:
            paths.append((*prefix, field.name))
        elif field.type == FieldDescriptor.TYPE_MESSAGE and len(prefix) < 3:
            if field.message_type.full_name.startswith("google.protobuf"):
                continue
            paths.extend(_string_paths(field.message_type, (*prefix, field.name)))
    return paths


def _holder(message: Message, path: tuple[str, ...]) -> Message:
    """The message that holds the last field of ``path`` (created on the way)."""
    for name in path[:-1]:
        field = message.DESCRIPTOR.fields_by_name[name]
        held = getattr(message, name)
        message = held.add() if field.is_repeated else held
    return message


def _set(message: Message, name: str, value: str) -> None:
    field = message.DESCRIPTOR.fields_by_name[name]
    if field.is_repeated:
        getattr(message, name).append(value)
    else:
        setattr(message, name, value)


def _requests(method: MethodDescriptor) -> Iterator[tuple[str, Message]]:
    """For each string field: the request with that field huge and the others plausible,
    once for each value of the enums beside it (a fault's kind decides which field counts)."""
    request_type = GetMessageClass(method.input_type)
    for path in _string_paths(method.input_type):
        holder_type = (
            _holder(request_type(), path).DESCRIPTOR if len(path) > 1 else method.input_type
        )
        enums = [
            f
            for f in holder_type.fields
            if f.type == FieldDescriptor.TYPE_ENUM and not f.is_repeated
        ]
        choices = [[v.number for v in f.enum_type.values] for f in enums]
        for values in itertools.product(*choices) if enums else [()]:
            request = request_type()
            for other in _string_paths(method.input_type):
                if other != path and other[-1] in PLAUSIBLE:
                    _set(_holder(request, other), other[-1], PLAUSIBLE[other[-1]])
            holder = _holder(request, path)
            _set(holder, path[-1], HUGE)
            label = ".".join(path)
            for field, value in zip(enums, values, strict=True):
                setattr(holder, field.name, value)
                label += f" {field.name}={value}"
            yield label, request


def _grpc_cases() -> list[tuple[str, str, MethodDescriptor]]:
    return [
        (f"{service.name}.{method.name}", port, method)
        for service, port in SERVICES
        for method in service.methods
        if not method.client_streaming and not method.server_streaming
    ]


@pytest.mark.parametrize(
    ("name", "port", "method"),
    _grpc_cases(),
    ids=lambda v: v.full_name if isinstance(v, MethodDescriptor) else str(v),
)
def test_every_rpc_refuses_a_huge_string_with_a_bounded_message(
    pod16: LivePod, name: str, port: str, method: MethodDescriptor
) -> None:
    controller = pod16.controller
    address = controller.user_port if port == "user" else controller.admin_port
    answers: dict[str, tuple[str, int]] = {}
    with grpc.insecure_channel(f"127.0.0.1:{address}") as channel:
        reply_type = GetMessageClass(method.output_type)
        call = channel.unary_unary(
            f"/{method.containing_service.full_name}/{method.name}",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=reply_type.FromString,
        )
        for label, request in _requests(method):
            try:
                call(request, timeout=30)
                answers[label] = ("OK", 0)
            except grpc.RpcError as exc:
                answers[label] = (exc.code().name, len(exc.details() or ""))
    if not answers:
        pytest.skip(f"{name} takes no string")
    wrong = {
        label: answer
        for label, answer in answers.items()
        if grpc.StatusCode[answer[0]] not in REFUSALS or answer[1] > MESSAGE_BOUND
        if answer[0] != "OK"
    }
    accepted = sorted(label for label, answer in answers.items() if answer[0] == "OK")
    assert wrong == {}
    assert accepted == []


# ------------------------------------------------------------------- REST


def _value(schema: dict[str, Any], components: dict[str, Any], huge: bool) -> Any:
    """A value of ``schema``: strings huge when ``huge``, else the smallest valid one."""
    if "$ref" in schema:
        return _value(components[schema["$ref"].rsplit("/", 1)[1]], components, huge)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"]
            return _value(options[0], components, huge) if options else None
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: _value(sub, components, huge) for name, sub in props.items()}
    if kind == "array":
        return [_value(schema.get("items", {}), components, huge)]
    if kind == "integer":
        return max(1, int(schema.get("minimum", 1)))
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return False
    if "enum" in schema:
        return schema["enum"][0]
    return HUGE if huge else "x"


def _rest_cases(openapi: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, item in sorted(openapi["paths"].items())
        if path not in LEFT_OUT_ROUTES
        for method, operation in sorted(item.items())
        if method in ("get", "post", "put", "patch", "delete")
    ]


def _rest_requests(
    path: str, operation: dict[str, Any], components: dict[str, Any]
) -> Iterator[tuple[str, str, dict[str, str], Any]]:
    """Each path and query parameter huge in turn (the others plausible), then the body's
    strings all huge."""
    params = operation.get("parameters", [])
    path_params = [p["name"] for p in params if p["in"] == "path"]
    query_params = [p["name"] for p in params if p["in"] == "query"]
    content = operation.get("requestBody", {}).get("content", {})
    schema = content.get("application/json", {}).get("schema")

    def url(huge: str | None) -> str:
        filled = path
        for name in path_params:
            value = HUGE if name == huge else PLAUSIBLE.get(name, "x")
            filled = filled.replace("{" + name + "}", value)
        return filled

    body = _value(schema, components, huge=False) if schema else None
    for name in path_params:
        yield f"path {name}", url(name), {}, body
    for name in query_params:
        yield f"query {name}", url(None), {name: HUGE}, body
    huge_body = _value(schema, components, huge=True) if schema else None
    if HUGE in json.dumps(huge_body):  # a body of enums and numbers has nothing to make huge
        yield "body", url(None), {}, huge_body


def test_every_route_refuses_huge_values_with_a_bounded_message(pod16: LivePod) -> None:
    base = f"http://127.0.0.1:{pod16.controller.http_port}"
    wrong: dict[str, tuple[int, int]] = {}
    with httpx.Client(base_url=base, timeout=30) as http:
        openapi = http.get("/openapi.json").json()
        components = openapi.get("components", {}).get("schemas", {})
        cases = _rest_cases(openapi)
        assert len(cases) > 20
        for method, path, operation in cases:
            for label, url, query, body in _rest_requests(path, operation, components):
                answer = http.request(method, url, params=query, json=body)
                error = answer.json().get("error", {}) if answer.content else {}
                message = error.get("message", "") if isinstance(error, dict) else ""
                if not 400 <= answer.status_code < 500 or len(message) > MESSAGE_BOUND:
                    wrong[f"{method} {path} {label}"] = (answer.status_code, len(message))
    assert wrong == {}
