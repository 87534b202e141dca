"""The cloud model and service values to the API's JSON shapes."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from vpod.agent.gpu.model import GpuSample
from vpod.wire.field_copy import copy_all_fields
from vpod.wire.rest.cloud_billing import InvoiceDayOut, InvoiceDaysOut, InvoiceLineOut, InvoiceOut
from vpod.wire.rest.cloud_clusters import (
    ClusterOut,
    ClusterStorageOut,
    GpuOut,
    ServerOut,
    ShellOut,
    SshHostKeyOut,
    VipuOut,
)
from vpod.wire.rest.cloud_flavors import ExceededOut, FlavorOut
from vpod.wire.rest.cloud_hosts import HostOut
from vpod.wire.rest.cloud_projects import ProjectOut, TokenOut
from vpod.wire.rest.cloud_reservations import ReservationOut, UtilisationOut
from vpod.wire.rest.cloud_tasks import PhaseOut, TaskOut
from vpod.wire.rest.cloud_volumes import VolumeOut

from ..billing import Invoice, InvoiceLine
from ..drivers import ShellAccess
from ..flavors import CURRENCY, Flavor, find_flavor, images_for
from ..model.hosts import HostGpu, HostUsage
from ..model.records import Cluster, Task, Volume
from ..model.reservations import Reservation
from ..model.task_params import is_vpod
from ..model.tenants import Project, Token
from ..quotas import Exceeded
from ..reserved_billing import Utilisation
from ..services.cluster_views import ClusterView
from ..services.gpu_hosts import ServerGpu
from ..states import phases_of


def task_out(task: Task) -> TaskOut:
    expected = ["FINISHED"]
    if task.resource_type == "cluster":
        expected = [p.value for p in phases_of(task.operation, is_vpod(task.params))]
    return copy_all_fields(
        TaskOut,
        task,
        phases=[PhaseOut(phase=p, at=at) for p, at in task.phases],
        expected_phases=expected,
        params=task.params.to_json(),
    )


def volume_out(volume: Volume) -> VolumeOut:
    return copy_all_fields(VolumeOut, volume, task_id=volume.active_task_id)


def _vipu(cluster: Cluster) -> VipuOut:
    return VipuOut(
        cluster_id=cluster.vipu_cluster_id,
        allocation_id=cluster.allocation_id,
        user_id=cluster.vipu_user_id,
    )


def cluster_out(view: ClusterView) -> ClusterOut:
    c = view.cluster
    held = view.dataset_storage
    servers = [
        copy_all_fields(
            ServerOut,
            s,
            gpus=[server_gpu_out(g, sample) for g, sample in view.gpus.get(s.id, [])],
            ssh_host_keys=[copy_all_fields(SshHostKeyOut, k) for k in view.host_keys.get(s.id, ())],
            ssh_port=view.ssh_ports.get(s.id),
        )
        for s in view.servers
    ]
    return copy_all_fields(
        ClusterOut,
        c,
        dataset_storage=ClusterStorageOut(name=held[0], mount_path=held[1]) if held else None,
        vipu=_vipu(c) if find_flavor(c.flavor).is_vpod else None,
        saved_partitions=None
        if c.saved_partitions is None
        else [p["id"] for p in c.saved_partitions],
        task_id=c.active_task_id,
        servers=servers,
        volumes=[volume_out(v) for v in view.volumes],
        keypairs=list(view.keypairs),
    )


def flavor_out(flavor: Flavor, capacity: int) -> FlavorOut:
    return copy_all_fields(
        FlavorOut,
        flavor,
        kind=flavor.kind.value,
        price_per_hour=str(flavor.price_per_hour),
        price_per_month=str(flavor.price_per_month),
        currency=CURRENCY,
        capacity=capacity,
        images=list(images_for(flavor)),
    )


def exceeded_out(over: Exceeded) -> ExceededOut:
    return copy_all_fields(ExceededOut, over, message=over.sentence())


def project_out(project: Project, usage: dict[str, int]) -> ProjectOut:
    return copy_all_fields(ProjectOut, project, usage=usage)


def token_out(record: Token, token: str | None = None) -> TokenOut:
    return copy_all_fields(TokenOut, record, token=token)


def _invoice_line_out(line: InvoiceLine) -> InvoiceLineOut:
    month = line.unit_price_per_month
    return copy_all_fields(
        InvoiceLineOut,
        line,
        unit_price_per_hour=str(line.unit_price_per_hour),
        amount=str(line.amount),
        unit_price_per_month=None if month is None else str(month),
    )


def invoice_out(invoice: Invoice) -> InvoiceOut:
    return copy_all_fields(
        InvoiceOut,
        invoice,
        total=str(invoice.total),
        lines=[_invoice_line_out(line) for line in invoice.lines],
        by_item={item: str(amount) for item, amount in invoice.by_item.items()},
    )


def invoice_days_out(days: list[Invoice]) -> InvoiceDaysOut:
    """Each day's total; consecutive periods' totals add up to the whole one's exactly
    (docs/cloud.md, the rounding rule), so the sum is the period's total."""
    return InvoiceDaysOut(
        project_id=days[0].project_id,
        start=days[0].start,
        end=days[-1].end,
        currency=days[0].currency,
        total=str(sum((d.total for d in days), Decimal(0))),
        days=[
            InvoiceDayOut(start=d.start, end=d.end, total=str(d.total), minutes=d.minutes)
            for d in days
        ],
    )


def shell_out(access: ShellAccess, connect: str) -> ShellOut:
    return copy_all_fields(ShellOut, access, connect=connect if access.kind == "relay" else "")


_READINGS = ("utilization_pct", "memory_used_mib", "temperature_c", "power_w", "last_xid")
"""The fields of a GPU's last reading that GpuOut shows (all null before its first sample)."""


def gpu_out(gpu: HostGpu, sample: GpuSample | None, in_use: bool | None) -> GpuOut:
    reading = sample.reading if sample is not None else None
    return copy_all_fields(
        GpuOut,
        gpu,
        index=gpu.idx,
        mig_mode=gpu.details.get("mig_mode"),
        nvlinks=len(gpu.details.get("nvlink_peers", ())),
        warnings=list(sample.warnings) if sample is not None else [],
        in_use=in_use,
        **{name: getattr(reading, name, None) for name in _READINGS},
    )


def server_gpu_out(held: ServerGpu, sample: GpuSample | None) -> GpuOut:
    """A GPU a server holds; a host registered by hand says only the slot."""
    if held.record is None:
        return GpuOut(index=held.slot, uuid=None, name=None, memory_mib=None, healthy=None)
    return gpu_out(held.record, sample, True)


def host_out(usage: HostUsage) -> HostOut:
    return copy_all_fields(HostOut, usage.host, free_slots=len(usage.free))


def reservation_out(
    record: Reservation, used: Utilisation, start: datetime, end: datetime, now: datetime
) -> ReservationOut:
    return copy_all_fields(
        ReservationOut,
        record,
        pool_units=record.units * record.per_unit,
        status=record.status_at(now).value,
        price_per_unit_month=str(record.price_per_unit_month),
        price_per_month=str(record.price_per_unit_month * record.units),
        currency=CURRENCY,
        billed_until=record.billed_end,
        utilisation=copy_all_fields(
            UtilisationOut, used, start=start, end=end, ratio=float(used.ratio)
        ),
    )
