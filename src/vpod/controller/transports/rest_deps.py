"""The FastAPI dependencies of the HTTP routes: each route names the use-cases it needs.

:func:`.rest.create_http_app` puts one :class:`HttpUseCases` on
``app.state.use_cases``; the dependencies below hand each route the one
use-case it asks for. A test can serve a single router with only the
use-cases its routes need, or replace one with ``app.dependency_overrides``.
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


def use_cases(request: Request) -> HttpUseCases:
    found: HttpUseCases = request.app.state.use_cases
    return found


def settings(request: Request) -> Settings:
    return use_cases(request).settings


def authenticator(request: Request) -> Authenticator:
    return use_cases(request).auth


def inventory(request: Request) -> Inventory:
    return use_cases(request).inventory


def partition_service(request: Request) -> PartitionService:
    return use_cases(request).partitions


def partition_views(request: Request) -> PartitionViews:
    return use_cases(request).views


def listings(request: Request) -> Listings:
    return use_cases(request).listings


def fleet(request: Request) -> Fleet:
    return use_cases(request).fleet


def teardown(request: Request) -> Teardown:
    return use_cases(request).teardown


def audit_log(request: Request) -> AuditLog:
    return use_cases(request).audit_log


def controller_status(request: Request) -> ControllerStatus:
    return use_cases(request).status


def pod_map_service(request: Request) -> PodMapService:
    return use_cases(request).pod_map


def change_feed(request: Request) -> ChangeFeed:
    return use_cases(request).changes


def telemetry(request: Request) -> IpuTelemetryView:
    return use_cases(request).telemetry


def agent_tokens(request: Request) -> AgentTokens:
    return use_cases(request).agent_tokens


def partition_keys(request: Request) -> PartitionKeys:
    return use_cases(request).partition_keys


def allocation_hosts(request: Request) -> AllocationHosts:
    return use_cases(request).allocation_hosts


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
