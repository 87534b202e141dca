"""``/healthz`` (the process serves) and ``/readyz`` (the controller can do its work).

Liveness and readiness are kept apart, as Kubernetes probes expect: a
controller whose database is down is alive (restarting it would not help)
but not ready (a load balancer should send requests elsewhere).

Ready means: the store answers within :data:`STORE_TIMEOUT_S`, and every
component named in the :class:`Readiness` (the server registers its gRPC
endpoints) has been marked started and not stopped since.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from .. import errors
from ..status import ControllerStatus
from .rest_deps import StatusDep

STORE_TIMEOUT_S = 2.0
"""How long ``/readyz`` waits for the database before saying it is not ready."""


class Readiness:
    """The components that must have started before the controller is ready.

    The server creates one with the names of its endpoints, hands it to
    :func:`vpod.controller.transports.rest.create_http_app`, and marks each
    component started once it listens (and stopped when it shuts down).
    """

    def __init__(self, components: Iterable[str] = ()) -> None:
        self._waiting: set[str] = set(components)
        self._known: set[str] = set(self._waiting)

    def started(self, component: str) -> None:
        self._known.add(component)
        self._waiting.discard(component)

    def stopped(self, component: str) -> None:
        self._known.add(component)
        self._waiting.add(component)

    @property
    def waiting(self) -> list[str]:
        """Components not started (or stopped), sorted."""
        return sorted(self._waiting)

    @property
    def components(self) -> list[str]:
        return sorted(self._known)


class Check(BaseModel):
    name: str
    ok: bool
    detail: str = ""


class Health(BaseModel):
    status: str = Field(examples=["ok"])


class ReadinessReport(BaseModel):
    ready: bool
    checks: list[Check]


async def store_check(status: ControllerStatus, timeout: float = STORE_TIMEOUT_S) -> Check:
    try:
        await status.ping_store(timeout)
    except TimeoutError:
        return Check(
            name="store", ok=False, detail=f"the database did not answer within {timeout:g} s"
        )
    except errors.ServiceError as exc:
        return Check(name="store", ok=False, detail=str(exc))
    return Check(name="store", ok=True)


async def readiness(request: Request) -> Readiness:
    """The app's :class:`Readiness` (FastAPI dependency)."""
    found: Readiness = request.app.state.readiness
    return found


router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> Health:
    """Liveness: 200 while the process serves HTTP."""
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=ReadinessReport,
    responses={503: {"model": ReadinessReport, "description": "Not ready: see `checks`."}},
)
async def readyz(
    status: StatusDep, components: Annotated[Readiness, Depends(readiness)]
) -> JSONResponse:
    """Readiness: 200 when the store answers and every endpoint has started, else 503."""
    checks = [await store_check(status)]
    waiting = set(components.waiting)
    checks.extend(
        Check(name=name, ok=name not in waiting, detail="not started" if name in waiting else "")
        for name in components.components
    )
    report = ReadinessReport(ready=all(ch.ok for ch in checks), checks=checks)
    return JSONResponse(report.model_dump(mode="json"), status_code=200 if report.ready else 503)
