"""The cloud API's calls (``/api/cloud/v1``), described once as :class:`~.http_transport.HttpCall`.

:mod:`.cloud` runs them blocking or on asyncio. Paths take a cluster or
volume by id or by name, as the API does. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict, Unpack
from urllib.parse import quote

from .cloud_records import (
    CloudCluster,
    ClusterSsh,
    Console,
    DatasetStorage,
    Flavor,
    Host,
    Invoice,
    InvoiceDays,
    Keypair,
    Limits,
    MetadataUpdate,
    Project,
    ProjectCreated,
    Reservation,
    Shell,
    StorageEndpoint,
    Task,
    Token,
    Volume,
)
from .http_transport import HttpCall, delete, get, nothing, post, put
from .json_records import reads, reads_list


class ClusterOptions(TypedDict, total=False):
    """What a cluster may ask for beyond its name and flavor (unset: the API's default)."""

    image: str
    server_count: int
    interfaces: Sequence[Mapping[str, str]]
    """``{"type": "external" | "subnet" | "any_subnet"}`` entries."""
    volumes: Sequence[Mapping[str, Any]]
    """``{"id": ...}`` attaches a volume; ``{"name", "size_gib", "volume_type"}`` makes one."""
    boot_volume_gib: int
    metadata: Mapping[str, str]
    dataset_storage: str
    """The project's dataset storage (id or name) the servers get."""
    dataset_mount: str
    """Also mount its bucket at this absolute path on every server."""
    keypairs: Sequence[str]
    """The project's keypairs (names or ids) that may log in to its servers."""


def _id(ref: str) -> str:
    return quote(ref, safe="")


_task = reads(Task)


def _when(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def flavors() -> HttpCall[list[Flavor]]:
    return get("/flavors", reads_list(Flavor))


def project() -> HttpCall[Project]:
    """The caller's project, its quotas and usage."""
    return get("/project", reads(Project))


def check_limits(
    flavor: str,
    *,
    server_count: int | None = None,
    volumes_gib: Sequence[int] = (),
    boot_volume_gib: int | None = None,
) -> HttpCall[Limits]:
    """Would a cluster of ``flavor`` fit the project's quotas?"""
    body: dict[str, Any] = {"flavor": flavor, "server_count": server_count}
    if volumes_gib:
        body["volumes_gib"] = list(volumes_gib)
    if boot_volume_gib is not None:
        body["boot_volume_gib"] = boot_volume_gib
    return post("/check_limits", reads(Limits), body)


def list_clusters() -> HttpCall[list[CloudCluster]]:
    return get("/clusters", reads_list(CloudCluster))


def create_cluster(name: str, flavor: str, **options: Unpack[ClusterOptions]) -> HttpCall[Task]:
    body: dict[str, Any] = {"name": name, "flavor": flavor}
    for key, value in options.items():
        if isinstance(value, Sequence) and not isinstance(value, str):
            body[key] = [dict(item) for item in value]
        elif isinstance(value, Mapping):
            body[key] = dict(value)
        else:
            body[key] = value
    return post("/clusters", _task, body)


def get_cluster(cluster: str) -> HttpCall[CloudCluster]:
    """A cluster by id or name."""
    return get(f"/clusters/{_id(cluster)}", reads(CloudCluster))


def delete_cluster(cluster: str, *, delete_volumes: bool = False) -> HttpCall[Task]:
    return delete(f"/clusters/{_id(cluster)}", _task, delete_volumes=delete_volumes)


def cluster_action(action: str) -> Callable[[str], HttpCall[Task]]:
    """The call of ``action`` (``suspend``, ``resume`` or ``reboot``) on a cluster."""

    def act(cluster: str) -> HttpCall[Task]:
        return post(f"/clusters/{_id(cluster)}/{action}", _task)

    act.__doc__ = f"{action.capitalize()} the cluster (by id or name)."
    return act


def resize_cluster(cluster: str, server_count: int) -> HttpCall[Task]:
    return post(f"/clusters/{_id(cluster)}/resize", _task, {"server_count": server_count})


def rebuild_cluster(cluster: str, image: str | None = None) -> HttpCall[Task]:
    return post(f"/clusters/{_id(cluster)}/rebuild", _task, {"image": image})


def cluster_metadata(cluster: str) -> HttpCall[dict[str, str]]:
    return get(f"/clusters/{_id(cluster)}/metadata", lambda data: {**data})


def set_cluster_metadata(
    cluster: str, metadata: Mapping[str, str], *, replace: bool = False
) -> HttpCall[MetadataUpdate]:
    body = {"metadata": dict(metadata), "replace": replace}
    return put(f"/clusters/{_id(cluster)}/metadata", reads(MetadataUpdate), body)


def shell(cluster: str, server: int = 1) -> HttpCall[Shell]:
    """How to open a shell on server ``server`` (1 = the first) of the cluster."""
    return get(f"/clusters/{_id(cluster)}/shell", reads(Shell), server=server)


def list_volumes() -> HttpCall[list[Volume]]:
    return get("/volumes", reads_list(Volume))


def create_volume(name: str, size_gib: int, volume_type: str = "standard") -> HttpCall[Task]:
    body = {"name": name, "size_gib": size_gib, "volume_type": volume_type}
    return post("/volumes", _task, body)


def get_volume(volume: str) -> HttpCall[Volume]:
    return get(f"/volumes/{_id(volume)}", reads(Volume))


def delete_volume(volume: str) -> HttpCall[Task]:
    return delete(f"/volumes/{_id(volume)}", _task)


def attach_volume(volume: str, cluster: str, server: int = 1) -> HttpCall[Task]:
    return post(f"/volumes/{_id(volume)}/attach", _task, {"cluster": cluster, "server": server})


def detach_volume(volume: str) -> HttpCall[Task]:
    return post(f"/volumes/{_id(volume)}/detach", _task)


def list_tasks(
    *, resource: str | None = None, state: str | None = None, limit: int | None = None
) -> HttpCall[list[Task]]:
    """The project's tasks, newest first."""
    return get("/tasks", reads_list(Task), resource=resource, state=state, limit=limit)


def get_task(task_id: str, wait_s: float = 0) -> HttpCall[Task]:
    """A task; ``wait_s`` > 0 waits up to that long for its next change."""
    return get(f"/tasks/{_id(task_id)}", _task, wait=wait_s or None)


def invoice(start: datetime | None = None, end: datetime | None = None) -> HttpCall[Invoice]:
    """The project's invoice (default: this month so far)."""
    return get("/invoice", reads(Invoice), start=_when(start), end=_when(end))


def invoice_days(
    start: datetime | None = None, end: datetime | None = None
) -> HttpCall[InvoiceDays]:
    """The invoice's total of each day of the period (default: this month so far)."""
    return get("/invoice/days", reads(InvoiceDays), start=_when(start), end=_when(end))


_reservation = reads(Reservation)


def list_reservations(
    start: datetime | None = None, end: datetime | None = None
) -> HttpCall[list[Reservation]]:
    """The project's reservations, utilisation over ``[start, end)`` (default: this month)."""
    return get(
        "/reservations",
        reads_list(Reservation),
        start=_when(start),
        end=_when(end),
    )


def create_reservation(flavor: str, units: int, term: str = "1y") -> HttpCall[Reservation]:
    """Reserve ``units`` of ``flavor`` for ``term``; NoCapacity says the numbers."""
    return post("/reservations", _reservation, {"flavor": flavor, "units": units, "term": term})


def get_reservation(
    reservation: str, start: datetime | None = None, end: datetime | None = None
) -> HttpCall[Reservation]:
    return get(
        f"/reservations/{_id(reservation)}", _reservation, start=_when(start), end=_when(end)
    )


def cancel_reservation(reservation: str) -> HttpCall[Reservation]:
    """Release the capacity now; billed to the end of the month (docs/cloud.md)."""
    return delete(f"/reservations/{_id(reservation)}", _reservation)


# -- administration (the cloud administrator's token)


def list_projects() -> HttpCall[list[Project]]:
    return get("/admin/projects", reads_list(Project))


def create_project(
    project_id: str, *, name: str = "", quotas: Mapping[str, int] | None = None
) -> HttpCall[ProjectCreated]:
    """A new project and its first token (shown only in this reply)."""
    body = {"id": project_id, "name": name, "quotas": dict(quotas or {})}
    return post("/admin/projects", reads(ProjectCreated), body)


def get_project(project_id: str) -> HttpCall[Project]:
    return get(f"/admin/projects/{_id(project_id)}", reads(Project))


def remove_project(project_id: str) -> HttpCall[None]:
    return delete(f"/admin/projects/{_id(project_id)}", nothing)


def set_quotas(project_id: str, quotas: Mapping[str, int]) -> HttpCall[Project]:
    return put(
        f"/admin/projects/{_id(project_id)}/quotas",
        reads(Project),
        {"quotas": dict(quotas)},
    )


def list_tokens(project_id: str) -> HttpCall[list[Token]]:
    return get(f"/admin/projects/{_id(project_id)}/tokens", reads_list(Token))


def issue_token(project_id: str, label: str = "") -> HttpCall[Token]:
    return post(
        f"/admin/projects/{_id(project_id)}/tokens",
        reads(Token),
        {"label": label},
    )


def revoke_token(token_id: str) -> HttpCall[None]:
    return delete(f"/admin/tokens/{_id(token_id)}", nothing)


def project_invoice(
    project_id: str, start: datetime | None = None, end: datetime | None = None
) -> HttpCall[Invoice]:
    return get(
        f"/admin/projects/{_id(project_id)}/invoice",
        reads(Invoice),
        start=_when(start),
        end=_when(end),
    )


def list_hosts() -> HttpCall[list[Host]]:
    return get("/admin/hosts", reads_list(Host))


def register_host(
    host_id: str,
    role: str,
    model: str,
    *,
    fabric: str | None = None,
    address: str = "",
    slots: int | None = None,
) -> HttpCall[Host]:
    body = {
        "id": host_id,
        "role": role,
        "model": model,
        "fabric": fabric,
        "address": address,
        "slots": slots,
    }
    return post("/admin/hosts", reads(Host), body)


def set_host_enabled(host_id: str, enabled: bool) -> HttpCall[None]:
    return put(f"/admin/hosts/{_id(host_id)}/enabled", nothing, {"enabled": enabled})


def remove_host(host_id: str) -> HttpCall[None]:
    return delete(f"/admin/hosts/{_id(host_id)}", nothing)


_storage = reads(DatasetStorage)


def storage_endpoints() -> HttpCall[list[StorageEndpoint]]:
    """The S3-compatible endpoints the operator offers."""
    return get("/storage-endpoints", reads_list(StorageEndpoint))


def list_dataset_storage() -> HttpCall[list[DatasetStorage]]:
    return get("/dataset-storage", reads_list(DatasetStorage))


def register_dataset_storage(
    name: str, endpoint: str, bucket: str, access_key_id: str, secret_access_key: str
) -> HttpCall[DatasetStorage]:
    """Register a bucket and its keys (sealed at rest; the secret is never shown again)."""
    body = {
        "name": name,
        "endpoint": endpoint,
        "bucket": bucket,
        "access_key_id": access_key_id,
        "secret_access_key": secret_access_key,
    }
    return post("/dataset-storage", _storage, body)


def get_dataset_storage(storage: str) -> HttpCall[DatasetStorage]:
    return get(f"/dataset-storage/{_id(storage)}", _storage)


def delete_dataset_storage(storage: str) -> HttpCall[None]:
    """Refused (FailedPrecondition) while a cluster holds it: detach it first."""
    return delete(f"/dataset-storage/{_id(storage)}", nothing)


def attach_dataset_storage(
    storage: str, cluster: str, mount_path: str | None = None
) -> HttpCall[Task]:
    body = {"storage": storage, "mount_path": mount_path}
    return post(f"/clusters/{_id(cluster)}/dataset-storage", _task, body)


def detach_dataset_storage(cluster: str) -> HttpCall[Task]:
    return delete(f"/clusters/{_id(cluster)}/dataset-storage", _task)


# -- ssh ------------------------------------------------------------------------------------


_keypair = reads(Keypair)


def list_keypairs() -> HttpCall[list[Keypair]]:
    return get("/keypairs", reads_list(Keypair))


def create_keypair(name: str, public_key: str | None = None) -> HttpCall[Keypair]:
    """Import ``public_key`` (an OpenSSH line), or, without one, have the cloud make an
    ed25519 key: its ``private_key`` is in this answer only."""
    body: dict[str, Any] = {"name": name}
    if public_key is not None:
        body["public_key"] = public_key
    return post("/keypairs", _keypair, body)


def get_keypair(keypair: str) -> HttpCall[Keypair]:
    return get(f"/keypairs/{_id(keypair)}", _keypair)


def delete_keypair(keypair: str) -> HttpCall[None]:
    """Refused (FailedPrecondition) while a cluster holds it."""
    return delete(f"/keypairs/{_id(keypair)}", nothing)


def cluster_keypairs(cluster: str) -> HttpCall[list[Keypair]]:
    return get(f"/clusters/{_id(cluster)}/keypairs", reads_list(Keypair))


def add_cluster_keypair(cluster: str, keypair: str) -> HttpCall[list[Keypair]]:
    """Let the keypair log in to the cluster's servers; the cluster's keypairs after."""
    return put(
        f"/clusters/{_id(cluster)}/keypairs/{_id(keypair)}",
        reads_list(Keypair),
        None,
    )


def remove_cluster_keypair(cluster: str, keypair: str) -> HttpCall[list[Keypair]]:
    return delete(f"/clusters/{_id(cluster)}/keypairs/{_id(keypair)}", reads_list(Keypair))


def cluster_ssh(cluster: str) -> HttpCall[ClusterSsh]:
    """Each server's name, user and host keys (to pin in known_hosts)."""
    return get(f"/clusters/{_id(cluster)}/ssh", reads(ClusterSsh))


def cluster_console(cluster: str, server: str = "1") -> HttpCall[Console]:
    """The address of a browser terminal on the server (its number or name)."""
    return get(f"/clusters/{_id(cluster)}/console", reads(Console), server=server)
