"""Every request body of every HTTP API refuses fields the API does not define.

The routes are found, not listed: every route of the controller's HTTP app,
of the cloud API's routers and of the web console, so a new route (or a new
nested model) is covered the day it is added. Each body model, and every
model nested in it, must forbid extra fields; and over real HTTP, a body
carrying an unknown field is answered 400 ``INVALID_ARGUMENT`` with a
message that names the field, whatever else is wrong with the body.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterator

import httpx
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.routing import BaseRoute

from vpod.cloud.api.dataset_routes import dataset_router
from vpod.cloud.api.router import router as cloud_router
from vpod.controller.transports.rest import create_http_app
from vpod.web.pages import web_routes
from vpod.web.sessions import SessionStore

from .live import LivePod

UNKNOWN = "zz_not_a_field"


def _models(annotation: object) -> Iterator[type[BaseModel]]:
    """The pydantic models ``annotation`` names, through Optional, lists, dicts, Annotated."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        yield from _models(typing.get_args(annotation)[0])
        return
    if origin is not None or isinstance(annotation, types.UnionType):
        for argument in typing.get_args(annotation):
            yield from _models(argument)


def _nested(model: type[BaseModel], seen: set[type[BaseModel]]) -> None:
    if model in seen:
        return
    seen.add(model)
    for field in model.model_fields.values():
        for inner in _models(field.annotation):
            _nested(inner, seen)


def _flat(routes: list[BaseRoute]) -> Iterator[BaseRoute]:
    """The routes, with those of included routers (kept as one route each) spelled out."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _flat(inner.routes)
        else:
            yield route


def _body_models(routes: list[BaseRoute]) -> dict[type[BaseModel], str]:
    """Every model a request body may hold, with one route that takes it."""
    found: dict[type[BaseModel], str] = {}
    for route in _flat(routes):
        if not isinstance(route, APIRoute):
            continue
        for param in route.dependant.body_params:
            seen: set[type[BaseModel]] = set()
            for model in _models(param.field_info.annotation):
                _nested(model, seen)
            for model in seen:
                found.setdefault(model, f"{sorted(route.methods)} {route.path}")
    return found


def _all_routes(pod: LivePod) -> list[BaseRoute]:
    return [
        *create_http_app(pod.controller).routes,
        *cloud_router.routes,
        *dataset_router.routes,
        *web_routes(SessionStore()).routes,
    ]


def test_every_body_model_of_every_api_forbids_unknown_fields(pod: LivePod) -> None:
    models = _body_models(_all_routes(pod))
    names = {model.__name__ for model in models}
    # the walk finds the bodies of all three APIs (a walk that found nothing would pass)
    assert {"CreatePartitionBody", "ReservationIn", "ClusterCreateIn", "LoginBody"} <= names
    lax = {
        f"{model.__module__}.{model.__name__} (taken by {route})"
        for model, route in models.items()
        if model.model_config.get("extra") != "forbid"
    }
    assert not lax, f"request bodies that accept unknown fields: {sorted(lax)}"
    for model in models:
        problems = _problems(model, {UNKNOWN: 1})
        assert any(p["type"] == "extra_forbidden" and p["loc"] == (UNKNOWN,) for p in problems)


def _problems(model: type[BaseModel], data: dict[str, object]) -> list[dict[str, typing.Any]]:
    try:
        model.model_validate(data)
    except Exception as exc:  # pydantic.ValidationError
        return [dict(e) for e in getattr(exc, "errors", list)()]
    return []


def _routes_with_bodies(pod: LivePod) -> Iterator[tuple[str, str, dict[str, typing.Any]]]:
    """(METHOD, path with every parameter ``x``, its OpenAPI request body) of every
    controller route that takes a body."""
    document = create_http_app(pod.controller).openapi()
    for template, operations in document["paths"].items():
        path = re.sub(r"\{[^}]+\}", "x", template)
        for method, operation in operations.items():
            if "requestBody" in operation:
                yield method.upper(), path, operation["requestBody"]


def test_an_unknown_field_is_refused_over_http_naming_it(pod: LivePod, http: httpx.Client) -> None:
    """Every controller route with a body, with only an unknown field (so required fields are
    missing too): 400, and the message names the unknown field first."""
    tried = 0
    for method, path, _ in _routes_with_bodies(pod):
        answer = http.request(method, path, json={UNKNOWN: 1})
        assert answer.status_code == 400, (method, path, answer.text)
        error = answer.json()["error"]
        assert error["code"] == "INVALID_ARGUMENT"
        assert f"body.{UNKNOWN}" in error["message"], (method, path, error)
        assert "remove it" in error["message"]
        tried += 1
    assert tried >= 5


MALFORMED = {
    "not UTF-8": b'{"\xff\xfe": 1}',
    "not JSON": b"{not json",
    "cut short": b'{"partition_id": "p',
    "empty": b"",
    "an array": b"[]",
    "a number": b"1e999999",
    "null": b"null",
    "nested too deep": b"[" * 100_000 + b"]" * 100_000,
}


def test_a_malformed_body_is_refused_saying_what_is_wrong_with_it(
    pod: LivePod, http: httpx.Client
) -> None:
    """Every controller route with a body, sent a body that is no JSON object at all (or none,
    where the route needs one): 400 ``INVALID_ARGUMENT`` with a message about the body, never
    FastAPI's bare "There was an error parsing the body"."""
    tried = 0
    for method, path, body_spec in _routes_with_bodies(pod):
        optional = not body_spec.get("required", False)
        for kind, body in MALFORMED.items():
            if optional and kind in {"empty", "null"}:
                continue  # no body, which the route takes
            answer = http.request(
                method, path, content=body, headers={"content-type": "application/json"}
            )
            assert answer.status_code == 400, (kind, method, path, answer.text)
            error = answer.json()["error"]
            assert error["code"] == "INVALID_ARGUMENT", (kind, method, path, error)
            assert "body" in error["message"], (kind, method, path, error)
            assert "error parsing" not in error["message"], (kind, method, path, error)
            if kind == "not UTF-8":
                assert "encoded as UTF-8" in error["message"], (method, path, error)
            tried += 1
    assert tried >= 5 * (len(MALFORMED) - 2)
