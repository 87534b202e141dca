"""What every cloud route depends on: the :class:`Cloud` it serves and who is calling.

Kept apart from the routes so that route modules (``router``,
``dataset_routes``) share them without importing each other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request, WebSocket
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from vpod.wire.rest.cloud_tasks import TaskOut

from ..app import Cloud
from ..model import errors
from ..services.projects import Principal
from .errors import cloud_error_response

PREFIX = "/api/cloud/v1"
ACCEPTED: dict[int | str, dict[str, Any]] = {202: {"description": "The task it started."}}

Route = TypeVar("Route", bound=Callable[..., Any])
T = TypeVar("T")

_bearer = HTTPBearer(
    scheme_name="CloudToken",
    description="`Authorization: Bearer vpod_ID.SECRET`: a project's or an administrator's token.",
    auto_error=False,
)


def starts_task(
    declare: Callable[..., Callable[[Route], Route]], path: str, summary: str | None = None
) -> Callable[[Route], Route]:
    """Declare (``router.post``, ``router.delete``) a route that starts a task: it answers
    ``202 Accepted`` with the task (mutating calls all do)."""
    return declare(
        path, status_code=202, response_model=TaskOut, responses=ACCEPTED, summary=summary
    )


def creates(
    declare: Callable[..., Callable[[Route], Route]],
    path: str,
    response_model: Any,
    summary: str | None = None,
    **declared: Any,
) -> Callable[[Route], Route]:
    """Declare (``router.post``) a route that makes something: it answers ``201 Created`` with
    what it made (``declared``: the route's other settings, its tags)."""
    return declare(
        path, status_code=201, response_model=response_model, summary=summary, **declared
    )


async def cloud_of(request: Request) -> Cloud:
    """The cloud these routes serve, which the cloud extension keeps in the application's
    state: found by a call through the whole served stack and by one made in-process on the
    application (the console's login) alike (``async``: a plain ``def`` dependency runs on
    FastAPI's thread pool, a hand-off per request)."""
    found: Cloud = request.app.state.cloud
    return found


CloudDep = Annotated[Cloud, Depends(cloud_of)]


async def principal(
    cloud: CloudDep,
    credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),
) -> Principal:
    """The project (or administrator) a request's bearer token names."""
    return await _authenticated(cloud, credentials.credentials if credentials else None)


async def websocket_principal(cloud: Cloud, websocket: WebSocket) -> Principal:
    """The project (or administrator) a WebSocket's ``Authorization: Bearer`` names, as for
    every other cloud call."""
    scheme, _, token = websocket.headers.get("authorization", "").partition(" ")
    return await _authenticated(cloud, token if scheme.lower() == "bearer" else None)


async def websocket_admitted(
    cloud: Cloud, websocket: WebSocket, check: Callable[[Principal], Awaitable[T]]
) -> tuple[Principal, T] | None:
    """The WebSocket's caller and what ``check`` gives for it (the server it asks for, a
    session), both before the upgrade; None once a refusal has been answered as plain HTTP
    with the usual JSON error body."""
    try:
        who = await websocket_principal(cloud, websocket)
        return who, await check(who)
    except errors.CloudError as exc:
        await websocket.send_denial_response(cloud_error_response(exc))
        return None


async def _authenticated(cloud: Cloud, token: str | None) -> Principal:
    """A project is refused while the controller runs open (tenants could not be isolated)."""
    who = await cloud.projects.authenticate(token)
    if not who.admin:
        cloud.require_tenancy()
    return who


async def administrator(cloud: CloudDep, who: Principal = Depends(principal)) -> Principal:
    cloud.projects.require_admin(who)
    return who


async def fleet_operator(
    cloud: CloudDep,
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),
) -> None:
    """A cloud administrator's token, or a V-IPU administrator's user id and access key (the
    headers of the controller's own API): the hardware views operators share."""
    user_id = request.headers.get("x-vipu-user-id")
    if credentials is None and user_id is not None:
        client = request.client
        source = f"{client.host}:{client.port}" if client is not None else "unknown:0"
        key = request.headers.get("x-vipu-access-key", "")
        await cloud.ctx.vipu.vipu_admin(user_id, key, source=source)
        return
    who = await principal(cloud, credentials)
    cloud.projects.require_admin(who)


Tenant = Annotated[Principal, Depends(principal)]
Operator = Annotated[Principal, Depends(administrator)]
