"""A route declared through :class:`~vpod.controller.transports.rest_routes.Routes` carries its
tag, its documented errors and the status its kind answers with."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.routing import APIRoute

from vpod.controller.transports.rest_errors import error_responses
from vpod.controller.transports.rest_routes import Routes


def _declared() -> dict[tuple[str, str], APIRoute]:
    router = APIRouter(prefix="/things")
    things = Routes(router, "things")

    @things.get("/{thing_id}", 401, 404)
    async def get_thing(thing_id: str) -> dict[str, str]:
        return {"id": thing_id}

    @things.creates("")
    async def create_thing() -> dict[str, str]:
        return {}

    @things.put("/{thing_id}/owner", 403)
    async def set_owner(thing_id: str) -> dict[str, str]:
        return {}

    @things.delete("/{thing_id}/owner", 403)
    async def drop_owner(thing_id: str) -> dict[str, str]:
        return {}

    @things.no_content("delete", "/{thing_id}", 404, 409)
    async def remove_thing(thing_id: str) -> None:
        return None

    @things.no_content("post", "/{thing_id}/reset", 409)
    async def reset_thing(thing_id: str) -> None:
        return None

    @Routes(router).get("/untagged")
    async def untagged() -> dict[str, str]:
        return {}

    return {
        (method, route.path): route
        for route in router.routes
        if isinstance(route, APIRoute)
        for method in route.methods
    }


def test_each_kind_of_route_answers_with_its_status_and_documents_its_errors() -> None:
    routes = _declared()
    got = routes["GET", "/things/{thing_id}"]
    assert got.tags == ["things"]
    assert got.status_code is None  # FastAPI's 200
    assert got.responses == error_responses(401, 404)
    assert sorted(int(s) for s in got.responses) == [400, 401, 404]
    created = routes["POST", "/things"]
    assert (created.status_code, created.tags) == (201, ["things"])
    assert created.responses == error_responses()  # no statuses named: the usual set
    assert routes["PUT", "/things/{thing_id}/owner"].responses == error_responses(403)
    assert routes["DELETE", "/things/{thing_id}/owner"].status_code is None
    for key, errors in (
        (("DELETE", "/things/{thing_id}"), (404, 409)),
        (("POST", "/things/{thing_id}/reset"), (409,)),
    ):
        removal = routes[key]
        assert (removal.status_code, removal.tags) == (204, ["things"])
        assert removal.response_class is Response
        assert removal.responses == error_responses(*errors)


def test_routes_without_a_tag_keep_only_the_routers_tags() -> None:
    router = APIRouter(prefix="/keys", tags=["keys"])

    @Routes(router).creates("", 409)
    async def create_key() -> dict[str, str]:
        return {}

    (route,) = [r for r in router.routes if isinstance(r, APIRoute)]
    assert route.tags == ["keys"]
    assert route.status_code == 201
    assert _declared()["GET", "/things/untagged"].tags == []
