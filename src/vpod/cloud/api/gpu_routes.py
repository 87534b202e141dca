"""The GPU host routes: agents register and report (``/gpu-agents``), operators list every
GPU (``/admin/gpus``). Module-level, bound like ``router`` by ``cloud_router``.

Agents authenticate with their registration token in the header ``vipu-agent-token``
(the name the IPU agents send it under), not with a cloud token: see docs/gpu.md.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Request

from vpod.wire.errors import error_body, http_status
from vpod.wire.field_copy import copy_all_fields
from vpod.wire.rest.errors import ErrorDetail

from ..services.gpu_hosts import GpuHostRegistration, HostGpus, SampleReport
from .convert import gpu_out, host_out
from .deps import PREFIX, CloudDep, fleet_operator
from .errors import CloudRoute, error_responses
from .gpu_models import (
    GpuHostOut,
    GpuHostRegisterIn,
    GpuHostRegisterOut,
    GpuHostReportOut,
    GpuSampleBatchIn,
    GpuSampleBatchOut,
    GpuSamplesIn,
)

gpu_router = APIRouter(
    prefix=PREFIX, tags=["GPU hosts"], route_class=CloudRoute, responses=error_responses()
)
AgentToken = Annotated[
    str,
    Header(
        alias="vipu-agent-token",
        description="The agent registration token (`vipu-admin create agent-token`).",
    ),
]


def _source(request: Request) -> str:
    client = request.client
    return f"{client.host}:{client.port}" if client is not None else "unknown:0"


@gpu_router.post(
    "/gpu-agents/register",
    response_model=GpuHostRegisterOut,
    summary="A GPU host agent registers its host and inventory",
)
async def register_gpu_host(
    cloud: CloudDep, body: GpuHostRegisterIn, request: Request, token: AgentToken = ""
) -> GpuHostRegisterOut:
    registration = copy_all_fields(GpuHostRegistration, body)
    host, new = await cloud.gpu_hosts.register(registration, token=token, source=_source(request))
    usage = {u.host.id: u for u in await cloud.hosts.list_hosts()}
    gpus = body.inventory.gpus
    return GpuHostRegisterOut(
        host=host_out(usage[host.id]),
        new=new,
        message=f"{'registered' if new else 'registered again'} as {host.model} ({len(gpus)} GPUs)",
    )


@gpu_router.post(
    "/gpu-agents/samples",
    response_model=GpuSampleBatchOut,
    summary="An agent serving several GPU hosts reports a sample of each host's GPUs",
)
async def report_gpu_sample_batch(
    cloud: CloudDep, body: GpuSampleBatchIn, token: AgentToken = ""
) -> GpuSampleBatchOut:
    """Each host is judged as ``/gpu-agents/{host}/samples`` judges it: one host refused
    (removed, registered by another run) does not refuse the others."""
    reports = [SampleReport(r.host_id, r.boot_id, r.samples) for r in body.reports]
    refusals = await cloud.gpu_hosts.report_many(reports, token=token)
    results = []
    for report, refusal in zip(reports, refusals, strict=True):
        error = None
        if refusal is not None:
            _, code = http_status(refusal)
            error = ErrorDetail.model_validate(error_body(code, str(refusal))["error"])
        results.append(
            GpuHostReportOut(host_id=report.host_id, accepted=refusal is None, error=error)
        )
    return GpuSampleBatchOut(results=results)


@gpu_router.post(
    "/gpu-agents/{host}/samples",
    status_code=204,
    summary="A GPU host agent reports a sample of every GPU",
)
async def report_gpu_samples(
    cloud: CloudDep, host: str, body: GpuSamplesIn, token: AgentToken = ""
) -> None:
    await cloud.gpu_hosts.report(
        host_id=host,
        boot_id=body.boot_id,
        samples=body.samples,
        token=token,
    )


@gpu_router.get(
    "/admin/gpus",
    tags=["cloud admin"],
    response_model=list[GpuHostOut],
    summary="Every GPU host with an agent, its GPUs, their health and last samples",
    dependencies=[Depends(fleet_operator)],
)
async def admin_gpus(cloud: CloudDep) -> list[GpuHostOut]:
    """For a cloud administrator's token or a V-IPU administrator's credentials."""
    usage = {u.host.id: u for u in await cloud.hosts.list_hosts()}
    hosts: dict[str, HostGpus] = await cloud.gpu_hosts.inventory()
    found = []
    for host_id, host in hosts.items():
        held = usage.get(host_id)
        if held is None:
            continue
        found.append(
            GpuHostOut(
                host_id=host_id,
                role=held.host.role,
                model=held.host.model,
                fabric=held.host.fabric,
                enabled=held.host.enabled,
                hostname=host.agent.hostname,
                driver_version=host.agent.driver_version,
                cuda_version=host.agent.cuda_version,
                backend=host.agent.backend,
                registered_at=host.agent.registered_at,
                reported_at=host.agent.reported_at,
                silent_for_s=host.silent_for_s,
                gpus=[
                    gpu_out(
                        g,
                        cloud.gpu_hosts.last_sample(host_id, g.idx),
                        g.idx in held.used_slots,
                    )
                    for g in host.gpus
                ],
            )
        )
    return found
