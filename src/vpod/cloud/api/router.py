"""The cloud's REST/JSON API under ``/api/cloud/v1``: thin routes over the cloud's use-cases.

Authentication: ``Authorization: Bearer vpod_ID.SECRET``. A project's token
reaches the project endpoints (its own clusters, volumes, tasks, invoices);
an administrator's token reaches ``/admin/...``. Mutating calls answer
``202 Accepted`` with the task they started. Errors use the controller's
one mapping (``{"error": {"code", "message"}}``, see docs/rest-api.md);
a quota overrun or missing capacity is 409 ``RESOURCE_EXHAUSTED``.

The OpenAPI document of these routes alone is ``/api/cloud/v1/openapi.json``
(the controller's ``/openapi.json`` holds them as well).

The routes are module-level (``router``); each takes the :class:`Cloud` it
serves as a dependency (``cloud_of``), which reads it from the application's state, where
the cloud extension keeps it, so a route can be served and tested alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime, timedelta
from enum import Enum
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from vpod.domain.moments import LATEST, TimeOutOfRange, utc_moment
from vpod.wire.field_copy import copy_all_fields
from vpod.wire.rest.cloud_billing import InvoiceDaysOut, InvoiceOut
from vpod.wire.rest.cloud_clusters import (
    ClusterCreateIn,
    ClusterOut,
    MetadataIn,
    MetadataOut,
    RebuildIn,
    ResizeIn,
    ShellOut,
)
from vpod.wire.rest.cloud_flavors import FlavorOut, LimitsIn, LimitsOut
from vpod.wire.rest.cloud_hosts import HostEnabledIn, HostIn, HostOut
from vpod.wire.rest.cloud_projects import (
    ProjectCreatedOut,
    ProjectCreateIn,
    ProjectOut,
    QuotasIn,
    TokenIn,
    TokenOut,
)
from vpod.wire.rest.cloud_reservations import ReservationIn, ReservationOut
from vpod.wire.rest.cloud_tasks import TaskOut
from vpod.wire.rest.cloud_volumes import AttachIn, VolumeCreateIn, VolumeOut

from ..app import Cloud
from ..flavors import find_flavor
from ..model import errors
from ..model.hosts import HostRegistration
from ..model.reservations import Reservation
from ..services.clusters import ClusterRequest, Clusters, NewVolume
from ..services.projects import Principal
from ..services.reservations import plan_of
from .convert import (
    cluster_out,
    exceeded_out,
    flavor_out,
    host_out,
    invoice_days_out,
    invoice_out,
    project_out,
    reservation_out,
    shell_out,
    task_out,
    token_out,
    volume_out,
)
from .dataset_routes import dataset_router
from .deps import ACCEPTED, PREFIX, CloudDep, Operator, Tenant, creates, starts_task
from .errors import CloudRoute, error_responses
from .gpu_routes import gpu_router
from .shell_relay import CONNECT_PATH, connect_path, shell_relay
from .ssh_routes import TUNNEL_PATH, ssh_router
from .ssh_tunnel import ssh_tunnel


def _request(body: ClusterCreateIn) -> ClusterRequest:
    new, attach = [], []
    for volume in body.volumes:
        if volume.id:
            attach.append(volume.id)
        elif volume.name and volume.size_gib:
            new.append(NewVolume(volume.name, volume.size_gib, volume.volume_type))
        else:
            raise errors.InvalidArgument(
                "each volume needs an id (attach an existing one) or a name and size_gib"
                " (create one)"
            )
    return ClusterRequest(
        name=body.name,
        flavor=body.flavor,
        image=body.image,
        server_count=body.server_count,
        interfaces=[i.model_dump() for i in body.interfaces]
        if body.interfaces is not None
        else None,
        new_volumes=new,
        attach_volumes=attach,
        boot_volume_gib=body.boot_volume_gib,
        metadata=body.metadata,
        keypairs=body.keypairs,
    )


def _period(
    start: datetime | None, end: datetime | None, now: datetime
) -> tuple[datetime, datetime]:
    """Default period: the current calendar month so far (UTC; at least its first minute)."""
    for moment, name in ((start, "start"), (end, "end")):
        if moment is not None and moment.tzinfo is None:
            raise errors.InvalidArgument(f"give {name} with a time zone, e.g. 2026-01-01T00:00:00Z")
    defaulted = end is None
    try:
        end = now if end is None else utc_moment(end, "end")
        start = None if start is None else utc_moment(start, "start")
    except TimeOutOfRange as exc:
        raise errors.InvalidArgument(str(exc)) from None
    if start is None:
        start = end.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if defaulted and end <= start:  # nothing after now is charged anyway
        end = start + timedelta(minutes=1) if start < LATEST - timedelta(minutes=1) else LATEST
    return start, end


async def _invoice_period(
    cloud: CloudDep,
    start: datetime | None = Query(None, description="Default: the first of this month."),
    end: datetime | None = Query(None, description="Default: now (excluded)."),
) -> tuple[datetime, datetime]:
    return _period(start, end, cloud.ctx.clock.now())


InvoicePeriod = Annotated[tuple[datetime, datetime], Depends(_invoice_period)]
"""An invoice route's ``?start=&end=``, checked, in UTC, defaulted to this month so far."""


router = APIRouter(
    prefix=PREFIX, tags=["cloud"], route_class=CloudRoute, responses=error_responses()
)
"""Every route of the cloud API; :func:`cloud_router` binds it to one :class:`Cloud`."""
ADMIN_TAGS: list[str | Enum] = ["cloud admin"]
"""The administrator's routes are declared on ``router`` itself, under ``/admin``: the routes
of a router nested in another are reported (``scope["route"]``, hence the ``/metrics`` labels)
with their own router's path only, without the ``/api/cloud/v1`` prefix."""


# -- catalog and project --------------------------------------------------------------


@router.get("/flavors", response_model=list[FlavorOut], summary="The flavor catalog")
async def list_flavors(cloud: CloudDep, _who: Tenant) -> list[FlavorOut]:
    # an administrator's view is any other tenant's: capacity nobody has reserved
    catalog = await cloud.capacity.catalog(_who.project_id or "")
    return [flavor_out(f, n) for f, n in catalog]


@router.get("/project", response_model=ProjectOut, summary="Your project, quotas, usage")
async def my_project(cloud: CloudDep, who: Tenant) -> ProjectOut:
    project = await cloud.projects.get(who.project())
    usage = await cloud.projects.usage(project.id)
    usage["reserved_units"] = await cloud.reservations.units_held(project.id)
    return project_out(project, usage)


@router.post("/check_limits", response_model=LimitsOut, summary="Would a cluster fit?")
async def check_limits(cloud: CloudDep, body: LimitsIn, who: Tenant) -> LimitsOut:
    request = ClusterRequest(
        name="check",
        flavor=body.flavor,
        server_count=body.server_count,
        new_volumes=[NewVolume("v", s) for s in body.volumes_gib],
        boot_volume_gib=body.boot_volume_gib,
    )
    over, used = await cloud.clusters.check_limits(who, request)
    used["reserved_units"] = await cloud.reservations.units_held(who.project())
    flavor = find_flavor(body.flavor)
    return LimitsOut(
        fits=not over,
        exceeded=[exceeded_out(e) for e in over],
        usage=used,
        reserved_free=await cloud.reservations.reserved_free(who.project(), flavor),
    )


# -- reservations -----------------------------------------------------------------------


async def _reservations_out(
    cloud: Cloud,
    who: Principal,
    records: list[Reservation],
    start: datetime | None,
    end: datetime | None,
) -> list[ReservationOut]:
    now = cloud.ctx.clock.now()
    first, last = _period(start, end, now)
    plans = [plan_of(r) for r in records]
    used = await cloud.billing.utilisation(who.project(), plans, first, last)
    return [reservation_out(r, used[r.id], first, last, now) for r in records]


@router.get(
    "/reservations",
    response_model=list[ReservationOut],
    summary="Your reservations, with utilisation over a period (?start=&end=)",
)
async def list_reservations(
    cloud: CloudDep,
    who: Tenant,
    start: datetime | None = None,
    end: datetime | None = None,
) -> list[ReservationOut]:
    records = await cloud.reservations.list_reservations(who)
    return await _reservations_out(cloud, who, records, start, end)


@creates(router.post, "/reservations", ReservationOut, "Reserve units of a flavor for a term")
async def create_reservation(cloud: CloudDep, body: ReservationIn, who: Tenant) -> ReservationOut:
    record = await cloud.reservations.create(who, body.flavor, body.units, body.term)
    return (await _reservations_out(cloud, who, [record], None, None))[0]


@router.get("/reservations/{reservation}", response_model=ReservationOut)
async def get_reservation(
    cloud: CloudDep,
    reservation: str,
    who: Tenant,
    start: datetime | None = None,
    end: datetime | None = None,
) -> ReservationOut:
    record = await cloud.reservations.get(who, reservation)
    return (await _reservations_out(cloud, who, [record], start, end))[0]


@router.delete(
    "/reservations/{reservation}",
    response_model=ReservationOut,
    summary="Cancel: capacity released now, billed to the end of this month",
)
async def cancel_reservation(cloud: CloudDep, reservation: str, who: Tenant) -> ReservationOut:
    record = await cloud.reservations.cancel(who, reservation)
    return (await _reservations_out(cloud, who, [record], None, None))[0]


# -- clusters ---------------------------------------------------------------------------


@router.get("/clusters", response_model=list[ClusterOut], summary="Your clusters")
async def list_clusters(cloud: CloudDep, who: Tenant) -> list[ClusterOut]:
    return [cluster_out(v) for v in await cloud.cluster_views.list_clusters(who)]


@starts_task(router.post, "/clusters", "Create a cluster")
async def create_cluster(cloud: CloudDep, body: ClusterCreateIn, who: Tenant) -> TaskOut:
    request = _request(body)
    if body.dataset_storage is not None:
        storage_id, mount = await cloud.datasets.check_for_cluster(
            who, body.dataset_storage, body.dataset_mount
        )
        request = replace(request, dataset_storage_id=storage_id, dataset_mount=mount)
    elif body.dataset_mount is not None:
        raise errors.InvalidArgument("dataset_mount needs dataset_storage: name the storage")
    return task_out(await cloud.clusters.create(who, request))


@router.get("/clusters/{cluster}", response_model=ClusterOut, summary="One cluster")
async def get_cluster(cloud: CloudDep, cluster: str, who: Tenant) -> ClusterOut:
    return cluster_out(await cloud.cluster_views.get(who, cluster))


@starts_task(router.delete, "/clusters/{cluster}", "Delete a cluster")
async def delete_cluster(
    cloud: CloudDep,
    cluster: str,
    who: Tenant,
    delete_volumes: bool = Query(False, description="Delete its data volumes too."),
) -> TaskOut:
    return task_out(await cloud.clusters.delete(who, cluster, delete_volumes=delete_volumes))


def _action(
    name: str, call: Callable[[Clusters, Principal, str], Awaitable[Any]], doc: str
) -> None:
    async def route(cluster: str, cloud: CloudDep, who: Tenant) -> TaskOut:
        return task_out(await call(cloud.clusters, who, cluster))

    router.add_api_route(
        f"/clusters/{{cluster}}/{name}",
        route,
        methods=["POST"],
        status_code=202,
        response_model=TaskOut,
        responses=ACCEPTED,
        summary=doc,
        name=f"{name}_cluster",
    )


_action("suspend", Clusters.suspend, "Suspend: release compute, keep volumes")
_action("resume", Clusters.resume, "Resume a suspended cluster")
_action("reboot", Clusters.reboot, "Reboot every server")


@starts_task(router.post, "/clusters/{cluster}/resize", "Change a GPU cluster's server count")
async def resize_cluster(cloud: CloudDep, cluster: str, body: ResizeIn, who: Tenant) -> TaskOut:
    return task_out(await cloud.clusters.resize(who, cluster, body.server_count))


@starts_task(router.post, "/clusters/{cluster}/rebuild", "Re-image every server")
async def rebuild_cluster(cloud: CloudDep, cluster: str, body: RebuildIn, who: Tenant) -> TaskOut:
    return task_out(await cloud.clusters.rebuild(who, cluster, body.image))


@router.get("/clusters/{cluster}/metadata", response_model=dict[str, str])
async def get_metadata(cloud: CloudDep, cluster: str, who: Tenant) -> dict[str, str]:
    return dict((await cloud.cluster_views.find(who, cluster)).metadata)


@router.put("/clusters/{cluster}/metadata", response_model=MetadataOut)
async def set_metadata(cloud: CloudDep, cluster: str, body: MetadataIn, who: Tenant) -> MetadataOut:
    task, updated = await cloud.clusters.set_metadata(
        who, cluster, body.metadata, replace=body.replace
    )
    return MetadataOut(task=task_out(task), metadata=dict(updated.metadata))


@router.get(
    "/clusters/{cluster}/shell",
    response_model=ShellOut,
    summary="How to open a shell on a server",
)
async def shell(
    cloud: CloudDep, cluster: str, who: Tenant, server: int = Query(1, ge=1)
) -> ShellOut:
    access = await cloud.shells.shell(who, cluster, server)
    return shell_out(access, connect_path(PREFIX, cluster, server))


# -- volumes ----------------------------------------------------------------------------


@router.get("/volumes", response_model=list[VolumeOut], summary="Your volumes")
async def list_volumes(cloud: CloudDep, who: Tenant) -> list[VolumeOut]:
    return [volume_out(v) for v in await cloud.volumes.list_volumes(who)]


@starts_task(router.post, "/volumes")
async def create_volume(cloud: CloudDep, body: VolumeCreateIn, who: Tenant) -> TaskOut:
    return task_out(await cloud.volumes.create(who, body.name, body.size_gib, body.volume_type))


@router.get("/volumes/{volume}", response_model=VolumeOut)
async def get_volume(cloud: CloudDep, volume: str, who: Tenant) -> VolumeOut:
    return volume_out(await cloud.volumes.find(who, volume))


@starts_task(router.delete, "/volumes/{volume}")
async def delete_volume(cloud: CloudDep, volume: str, who: Tenant) -> TaskOut:
    return task_out(await cloud.volumes.delete(who, volume))


@starts_task(router.post, "/volumes/{volume}/attach")
async def attach_volume(cloud: CloudDep, volume: str, body: AttachIn, who: Tenant) -> TaskOut:
    return task_out(await cloud.volumes.attach(who, volume, body.cluster, body.server))


@starts_task(router.post, "/volumes/{volume}/detach")
async def detach_volume(cloud: CloudDep, volume: str, who: Tenant) -> TaskOut:
    return task_out(await cloud.volumes.detach(who, volume))


# -- tasks and invoices -------------------------------------------------------------------


@router.get("/tasks", response_model=list[TaskOut], summary="Your tasks, newest first")
async def list_tasks(
    cloud: CloudDep,
    who: Tenant,
    resource: str | None = Query(None, description="Only this cluster's or volume's."),
    state: str | None = Query(None, description="NEW, RUNNING, FINISHED or ERROR."),
    limit: int = Query(50, ge=1, le=500),
) -> list[TaskOut]:
    found = await cloud.tasks.list_tasks(who, resource_id=resource, state=state, limit=limit)
    return [task_out(t) for t in found]


@router.get("/tasks/{task}", response_model=TaskOut)
async def get_task(
    cloud: CloudDep,
    task: str,
    who: Tenant,
    wait: float = Query(0, ge=0, le=60, description="Wait up to this many seconds for the end."),
) -> TaskOut:
    return task_out(await cloud.tasks.wait(who, task, wait))


@router.get("/invoice", response_model=InvoiceOut, summary="Your invoice for a period")
async def invoice(cloud: CloudDep, who: Tenant, period: InvoicePeriod) -> InvoiceOut:
    return invoice_out(await cloud.billing.invoice(who.project(), *period))


@router.get(
    "/invoice/days",
    response_model=InvoiceDaysOut,
    summary="Your invoice's total day by day",
    description="Consecutive 24-hour periods from `start`, the last one ending at `end`"
    " (at most 366 days); they add up to `GET /invoice` of the same period.",
)
async def invoice_days(cloud: CloudDep, who: Tenant, period: InvoicePeriod) -> InvoiceDaysOut:
    return invoice_days_out(await cloud.billing.daily(who.project(), *period))


# -- administration -----------------------------------------------------------------------


@router.get("/admin/projects", tags=ADMIN_TAGS, response_model=list[ProjectOut])
async def admin_projects(cloud: CloudDep, _who: Operator) -> list[ProjectOut]:
    projects = await cloud.projects.list_projects()
    return [project_out(p, await cloud.projects.usage(p.id)) for p in projects]


@creates(router.post, "/admin/projects", ProjectCreatedOut, tags=ADMIN_TAGS)
async def admin_create_project(
    cloud: CloudDep, body: ProjectCreateIn, _who: Operator
) -> ProjectCreatedOut:
    project, token = await cloud.projects.create(body.id, body.name, body.quotas)
    return ProjectCreatedOut(
        project=project_out(project, await cloud.projects.usage(project.id)),
        token=token_out(token.record, token.token),
    )


@router.get("/admin/projects/{project}", tags=ADMIN_TAGS, response_model=ProjectOut)
async def admin_project(cloud: CloudDep, project: str, _who: Operator) -> ProjectOut:
    found = await cloud.projects.get(project)
    return project_out(found, await cloud.projects.usage(project))


@router.delete("/admin/projects/{project}", tags=ADMIN_TAGS, status_code=204)
async def admin_remove_project(cloud: CloudDep, project: str, _who: Operator) -> None:
    await cloud.projects.remove(project)


@router.put("/admin/projects/{project}/quotas", tags=ADMIN_TAGS, response_model=ProjectOut)
async def admin_quotas(cloud: CloudDep, project: str, body: QuotasIn, _who: Operator) -> ProjectOut:
    updated = await cloud.projects.set_quotas(project, body.quotas)
    return project_out(updated, await cloud.projects.usage(project))


@router.get("/admin/projects/{project}/tokens", tags=ADMIN_TAGS, response_model=list[TokenOut])
async def admin_tokens(cloud: CloudDep, project: str, _who: Operator) -> list[TokenOut]:
    return [token_out(t) for t in await cloud.projects.list_tokens(project)]


@creates(router.post, "/admin/projects/{project}/tokens", TokenOut, tags=ADMIN_TAGS)
async def admin_new_token(cloud: CloudDep, project: str, body: TokenIn, _who: Operator) -> TokenOut:
    new = await cloud.projects.issue_token(project, body.label)
    return token_out(new.record, new.token)


@router.delete("/admin/tokens/{token_id}", tags=ADMIN_TAGS, status_code=204)
async def admin_revoke_token(cloud: CloudDep, token_id: str, _who: Operator) -> None:
    await cloud.projects.revoke_token(token_id)


@router.get("/admin/projects/{project}/invoice", tags=ADMIN_TAGS, response_model=InvoiceOut)
async def admin_invoice(
    cloud: CloudDep, project: str, _who: Operator, period: InvoicePeriod
) -> InvoiceOut:
    return invoice_out(await cloud.billing.invoice(project, *period))


@router.get(
    "/admin/hosts",
    tags=ADMIN_TAGS,
    response_model=list[HostOut],
    summary="Registered GPU and Poplar hosts",
)
async def admin_hosts(cloud: CloudDep, _who: Operator) -> list[HostOut]:
    return [host_out(u) for u in await cloud.hosts.list_hosts()]


@creates(router.post, "/admin/hosts", HostOut, "Register a host", tags=ADMIN_TAGS)
async def admin_register_host(cloud: CloudDep, body: HostIn, _who: Operator) -> HostOut:
    await cloud.hosts.register(copy_all_fields(HostRegistration, body))
    usage = {u.host.id: u for u in await cloud.hosts.list_hosts()}
    return host_out(usage[body.id])


@router.put("/admin/hosts/{host}/enabled", tags=ADMIN_TAGS, status_code=204)
async def admin_enable_host(
    cloud: CloudDep, host: str, body: HostEnabledIn, _who: Operator
) -> None:
    await cloud.hosts.set_enabled(host, body.enabled)


@router.delete("/admin/hosts/{host}", tags=ADMIN_TAGS, status_code=204)
async def admin_remove_host(cloud: CloudDep, host: str, _who: Operator) -> None:
    await cloud.hosts.remove(host)


@router.get("/openapi.json", include_in_schema=False)
async def openapi(request: Request) -> dict[str, Any]:
    """The controller's document, cut down to the cloud's paths."""
    whole: dict[str, Any] = request.app.openapi()
    document = dict(whole)
    document["info"] = {
        **whole.get("info", {}),
        "title": "vpod cloud API",
        "description": __doc__ or "",
    }
    document["paths"] = {p: v for p, v in whole["paths"].items() if p.startswith(PREFIX)}
    return document


def cloud_router(cloud: Cloud) -> APIRouter:
    """The cloud API's routes, for ``cloud``: the HTTP routes find it in the application's
    state (``cloud_of``; the cloud extension keeps it there), the WebSocket relays hold it."""
    bound = APIRouter()
    # Included as they are: a router-wide dependency here (how the cloud used to be bound)
    # makes FastAPI build every route again, 0.12 s of each start, and resolve it per request.
    for routes in (router, dataset_router, gpu_router, ssh_router):
        bound.include_router(routes)
    # The WebSocket relays are made for this cloud and hold it themselves.
    bound.add_api_websocket_route(PREFIX + CONNECT_PATH, shell_relay(cloud))
    bound.add_api_websocket_route(PREFIX + TUNNEL_PATH, ssh_tunnel(cloud))
    return bound


__all__ = ["PREFIX", "cloud_router", "router"]
