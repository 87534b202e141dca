"""The FastAPI dependencies of the HTTP routes: each route names the use-cases it needs.

:func:`.rest.create_http_app` puts one :class:`HttpUseCases` on
``app.state.use_cases``; the dependencies below hand each route the one
use-case it asks for. A test can serve a single router with only the
use-cases its routes need, or replace one with ``app.dependency_overrides``.

They are ``async`` although they only read attributes: FastAPI runs a plain ``def``
dependency on its thread pool, a hand-off (and a GIL hand-back) per dependency per request
that cost more than the request's own work on the small routes.
"""

from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import Depends, Request

from ..agent_tokens import AgentTokens
from ..allocation_hosts import AllocationHosts
from ..audit_log import AuditLog
from ..auth import Authenticator
from ..change_feed import ChangeFeed
from ..fleet import Fleet
from ..inventory import Inventory
from ..listings import Listings
from ..partition_keys import PartitionKeys
from ..partition_views import PartitionViews
from ..partitions import PartitionService
from ..pod_map import PodMapService
from ..settings import Settings
from ..status import ControllerStatus
from ..teardown import Teardown
from ..telemetry import IpuTelemetryView


class HttpUseCases(Protocol):
    """What the HTTP API calls (the controller's :class:`~vpod.controller.app.Controller`)."""

    settings: Settings
    auth: Authenticator
    inventory: Inventory
    partitions: PartitionService
    views: PartitionViews
    listings: Listings
    fleet: Fleet
    teardown: Teardown
    audit_log: AuditLog
    status: ControllerStatus
    pod_map: PodMapService
    changes: ChangeFeed
    telemetry: IpuTelemetryView
    agent_tokens: AgentTokens
    partition_keys: PartitionKeys
    allocation_hosts: AllocationHosts


def _use_cases(request: Request) -> HttpUseCases:
    found: HttpUseCases = request.app.state.use_cases
    return found


async def settings(request: Request) -> Settings:
    return _use_cases(request).settings


async def authenticator(request: Request) -> Authenticator:
    return _use_cases(request).auth


async def inventory(request: Request) -> Inventory:
    return _use_cases(request).inventory


async def partition_service(request: Request) -> PartitionService:
    return _use_cases(request).partitions


async def partition_views(request: Request) -> PartitionViews:
    return _use_cases(request).views


async def listings(request: Request) -> Listings:
    return _use_cases(request).listings


async def fleet(request: Request) -> Fleet:
    return _use_cases(request).fleet


async def teardown(request: Request) -> Teardown:
    return _use_cases(request).teardown


async def audit_log(request: Request) -> AuditLog:
    return _use_cases(request).audit_log


async def controller_status(request: Request) -> ControllerStatus:
    return _use_cases(request).status


async def pod_map_service(request: Request) -> PodMapService:
    return _use_cases(request).pod_map


async def change_feed(request: Request) -> ChangeFeed:
    return _use_cases(request).changes


async def telemetry(request: Request) -> IpuTelemetryView:
    return _use_cases(request).telemetry


async def agent_tokens(request: Request) -> AgentTokens:
    return _use_cases(request).agent_tokens


async def partition_keys(request: Request) -> PartitionKeys:
    return _use_cases(request).partition_keys


async def allocation_hosts(request: Request) -> AllocationHosts:
    return _use_cases(request).allocation_hosts


SettingsDep = Annotated[Settings, Depends(settings)]
AuthenticatorDep = Annotated[Authenticator, Depends(authenticator)]
InventoryDep = Annotated[Inventory, Depends(inventory)]
AllocationHostsDep = Annotated[AllocationHosts, Depends(allocation_hosts)]
PartitionsDep = Annotated[PartitionService, Depends(partition_service)]
ViewsDep = Annotated[PartitionViews, Depends(partition_views)]
ListingsDep = Annotated[Listings, Depends(listings)]
FleetDep = Annotated[Fleet, Depends(fleet)]
TeardownDep = Annotated[Teardown, Depends(teardown)]
AuditLogDep = Annotated[AuditLog, Depends(audit_log)]
StatusDep = Annotated[ControllerStatus, Depends(controller_status)]
PodMapDep = Annotated[PodMapService, Depends(pod_map_service)]
ChangesDep = Annotated[ChangeFeed, Depends(change_feed)]
TelemetryDep = Annotated[IpuTelemetryView, Depends(telemetry)]
AgentTokensDep = Annotated[AgentTokens, Depends(agent_tokens)]
PartitionKeysDep = Annotated[PartitionKeys, Depends(partition_keys)]
