"""The cloud model and service values to the API's JSON shapes."""

from __future__ import annotations

from datetime import datetime

from vpod.agent.gpu.model import GpuSample
from vpod.wire.rest.cloud_billing import InvoiceLineOut, InvoiceOut
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

from ..billing import Invoice
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
    return TaskOut(
        id=task.id,
        project_id=task.project_id,
        operation=task.operation,
        resource_type=task.resource_type,
        resource_id=task.resource_id,
        resource_name=task.resource_name,
        state=task.state,
        detailed_state=task.detailed_state,
        phases=[PhaseOut(phase=p, at=at) for p, at in task.phases],
        expected_phases=expected,
        error=task.error,
        warnings=list(task.warnings),
        params=task.params.to_json(),
        created_at=task.created_at,
        updated_at=task.updated_at,
        finished_at=task.finished_at,
    )


def volume_out(volume: Volume) -> VolumeOut:
    return VolumeOut(
        id=volume.id,
        name=volume.name,
        size_gib=volume.size_gib,
        volume_type=volume.volume_type,
        boot=volume.boot,
        status=volume.status,
        cluster_id=volume.cluster_id,
        server_id=volume.server_id,
        task_id=volume.active_task_id,
        created_at=volume.created_at,
    )


def _vipu(cluster: Cluster) -> VipuOut:
    return VipuOut(
        cluster_id=cluster.vipu_cluster_id,
        allocation_id=cluster.allocation_id,
        user_id=cluster.vipu_user_id,
    )


def cluster_out(view: ClusterView) -> ClusterOut:
    c = view.cluster
    flavor = find_flavor(c.flavor)
    held = view.dataset_storage
    return ClusterOut(
        dataset_storage=ClusterStorageOut(name=held[0], mount_path=held[1]) if held else None,
        id=c.id,
        name=c.name,
        flavor=c.flavor,
        kind=c.kind,
        status=c.status,
        image=c.image,
        server_count=c.server_count,
        ipus=c.ipus,
        gpus=c.gpus,
        gpu_family=c.gpu_family,
        interfaces=list(c.interfaces),
        network=dict(c.network),
        metadata=dict(c.metadata),
        vipu=_vipu(c) if flavor.is_vpod else None,
        saved_partitions=[p["id"] for p in c.saved_partitions]
        if c.saved_partitions is not None
        else None,
        fabric=c.fabric,
        task_id=c.active_task_id,
        error=c.error,
        created_at=c.created_at,
        updated_at=c.updated_at,
        servers=[
            ServerOut(
                id=s.id,
                name=s.name,
                position=s.position,
                status=s.status,
                image=s.image,
                address=s.address,
                host_id=s.host_id,
                gpus=[server_gpu_out(g, sample) for g, sample in view.gpus.get(s.id, [])],
                ssh_host_keys=[
                    SshHostKeyOut(key=k.key, fingerprint=k.fingerprint)
                    for k in view.host_keys.get(s.id, ())
                ],
                ssh_port=view.ssh_ports.get(s.id),
            )
            for s in view.servers
        ],
        volumes=[volume_out(v) for v in view.volumes],
        keypairs=list(view.keypairs),
    )


def flavor_out(flavor: Flavor, capacity: int) -> FlavorOut:
    return FlavorOut(
        name=flavor.name,
        kind=flavor.kind.value,
        description=flavor.description,
        vcpus=flavor.vcpus,
        ram_gib=flavor.ram_gib,
        disk_gib=flavor.disk_gib,
        network=flavor.network,
        accelerators=flavor.accelerators,
        ipus=flavor.ipus,
        gpus_per_server=flavor.gpus_per_server,
        host_model=flavor.host_model,
        poplar_count=flavor.poplar_count,
        infiniband=flavor.infiniband,
        bare_metal=flavor.bare_metal,
        takes_volumes=flavor.takes_volumes,
        price_per_hour=str(flavor.price_per_hour),
        price_per_month=str(flavor.price_per_month),
        currency=CURRENCY,
        capacity=capacity,
        images=list(images_for(flavor)),
    )


def exceeded_out(over: Exceeded) -> ExceededOut:
    return ExceededOut(
        quota=over.quota,
        limit=over.limit,
        used=over.used,
        requested=over.requested,
        message=over.sentence(),
    )


def project_out(project: Project, usage: dict[str, int]) -> ProjectOut:
    return ProjectOut(
        id=project.id,
        name=project.name,
        quotas=dict(project.quotas),
        usage=usage,
        created_at=project.created_at,
    )


def token_out(record: Token, token: str | None = None) -> TokenOut:
    return TokenOut(
        id=record.id,
        project_id=record.project_id,
        label=record.label,
        created_at=record.created_at,
        token=token,
    )


def invoice_out(invoice: Invoice) -> InvoiceOut:
    return InvoiceOut(
        project_id=invoice.project_id,
        start=invoice.start,
        end=invoice.end,
        currency=invoice.currency,
        total=str(invoice.total),
        minutes=invoice.minutes,
        lines=[
            InvoiceLineOut(
                resource_type=line.resource_type,
                resource_id=line.resource_id,
                resource_name=line.resource_name,
                item=line.item,
                quantity=line.quantity,
                unit_price_per_hour=str(line.unit_price_per_hour),
                minutes=line.minutes,
                amount=str(line.amount),
                billing=line.billing,
                unit_price_per_month=(
                    None if line.unit_price_per_month is None else str(line.unit_price_per_month)
                ),
            )
            for line in invoice.lines
        ],
        by_item={item: str(amount) for item, amount in invoice.by_item.items()},
    )


def shell_out(access: ShellAccess, connect: str) -> ShellOut:
    return ShellOut(
        kind=access.kind,
        host=access.host,
        user=access.user,
        port=access.port,
        connect=connect if access.kind == "relay" else "",
        console=access.console,
    )


def gpu_out(gpu: HostGpu, sample: GpuSample | None, in_use: bool | None) -> GpuOut:
    reading = sample.reading if sample is not None else None
    return GpuOut(
        index=gpu.idx,
        uuid=gpu.uuid,
        name=gpu.name,
        memory_mib=gpu.memory_mib,
        pci_bus_id=gpu.pci_bus_id,
        mig_mode=gpu.details.get("mig_mode"),
        nvlinks=len(gpu.details.get("nvlink_peers", ())),
        healthy=gpu.healthy,
        problems=gpu.problems,
        warnings=list(sample.warnings) if sample is not None else [],
        in_use=in_use,
        utilization_pct=reading.utilization_pct if reading else None,
        memory_used_mib=reading.memory_used_mib if reading else None,
        temperature_c=reading.temperature_c if reading else None,
        power_w=reading.power_w if reading else None,
        last_xid=reading.last_xid if reading else None,
    )


def server_gpu_out(held: ServerGpu, sample: GpuSample | None) -> GpuOut:
    """A GPU a server holds; a host registered by hand says only the slot."""
    if held.record is None:
        return GpuOut(index=held.slot, uuid=None, name=None, memory_mib=None, healthy=None)
    return gpu_out(held.record, sample, True)


def host_out(usage: HostUsage) -> HostOut:
    host = usage.host
    return HostOut(
        id=host.id,
        role=host.role,
        model=host.model,
        slots=host.slots,
        free_slots=len(usage.free),
        fabric=host.fabric,
        address=host.address,
        enabled=host.enabled,
        registered_at=host.registered_at,
    )


def reservation_out(
    record: Reservation, used: Utilisation, start: datetime, end: datetime, now: datetime
) -> ReservationOut:
    return ReservationOut(
        id=record.id,
        flavor=record.flavor,
        pool=record.pool,
        units=record.units,
        pool_units=record.units * record.per_unit,
        term=record.term,
        status=record.status_at(now).value,
        price_per_unit_month=str(record.price_per_unit_month),
        price_per_month=str(record.price_per_unit_month * record.units),
        currency=CURRENCY,
        starts_at=record.starts_at,
        ends_at=record.ends_at,
        cancelled_at=record.cancelled_at,
        billed_until=record.billed_end,
        utilisation=UtilisationOut(
            start=start,
            end=end,
            used_unit_minutes=used.used_unit_minutes,
            reserved_unit_minutes=used.reserved_unit_minutes,
            ratio=float(used.ratio),
        ),
    )
