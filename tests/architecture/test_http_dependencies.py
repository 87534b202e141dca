"""Every FastAPI route and dependency of the HTTP APIs is ``async``: FastAPI runs a plain
``def`` one on its thread pool, a hand-off per request that cost more than the small
routes' own work (docs/performance.md, "Start-up" and "HTTP requests")."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterator
from typing import Any

from fastapi import APIRouter
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

import vpod.cloud.api
import vpod.controller.transports
import vpod.web

PACKAGES = (vpod.controller.transports, vpod.cloud.api, vpod.web)


def _routers() -> Iterator[APIRouter]:
    seen: set[int] = set()
    for package in PACKAGES:
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if isinstance(value, APIRouter) and id(value) not in seen:
                    seen.add(id(value))
                    yield value


def _is_async(call: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(call) or inspect.isasyncgenfunction(call):
        return True
    # a security scheme: an instance with an async __call__
    return not inspect.isfunction(call) and inspect.iscoroutinefunction(type(call).__call__)


def _dependencies(dependant: Dependant) -> Iterator[Callable[..., Any]]:
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield sub.call
        yield from _dependencies(sub)


def test_every_route_and_dependency_is_async() -> None:
    routes = [r for router in _routers() for r in router.routes if isinstance(r, APIRoute)]
    assert len(routes) >= 100, len(routes)  # the walk found the APIs
    blocking = sorted(
        {
            f"{getattr(call, '__module__', '?')}.{getattr(call, '__qualname__', call)}"
            for route in routes
            for call in (route.endpoint, *_dependencies(route.dependant))
            if not _is_async(call)
        }
    )
    assert blocking == [], f"make these async def (they run on the thread pool): {blocking}"
