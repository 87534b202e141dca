"""Clients of the cloud API: :class:`CloudClient` (blocking) and :class:`AsyncCloudClient`.

Every mutating call returns a :class:`~.cloud_records.Task`;
:meth:`CloudClient.wait_task` follows it to its end, calling ``on_phase``
for each phase as it is entered, and raises :class:`~.errors.TaskFailed`
when it ends in ERROR.

    >>> from vpod.client import CloudClient
    >>> with CloudClient.from_config() as cloud:         # vpod-cli.toml, VPOD_URL/VPOD_TOKEN
    ...     task = cloud.create_cluster("train", "g2a-ai-fast-v1pod-8")
    ...     cloud.wait_task(task, on_phase=lambda phase: print(phase.phase))
    ...     cloud.get_cluster("train").status
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Unpack

from . import cloud_calls as calls
from .cloud_calls import ClusterOptions
from .cloud_config import API_PREFIX, CloudSettings, resolve_cloud
from .cloud_datasets import AsyncDatasetStorageCalls, DatasetStorageCalls
from .cloud_records import (
    CloudCluster,
    Flavor,
    Host,
    Invoice,
    Limits,
    MetadataUpdate,
    Phase,
    Project,
    ProjectCreated,
    Reservation,
    Shell,
    Task,
    Token,
    Volume,
)
from .cloud_shell import ShellConnection, open_relay
from .cloud_ssh import AsyncSshCalls, SshCalls
from .errors import FailedPrecondition, TaskFailed, Timeout
from .http_transport import DEFAULT_TIMEOUT_S, AsyncHttpTransport, HttpSite, HttpTransport

POLL_S = 0.2
WAIT_TIMEOUT_S = 1800.0
UNREACHABLE_HINT = "is `vpod up` (or vipu-server) running there?"

PhaseCallback = Callable[[Phase], None]
TaskCallback = Callable[[Task], None]


def cloud_site(settings: CloudSettings, timeout_s: float = DEFAULT_TIMEOUT_S) -> HttpSite:
    return HttpSite(
        base_url=settings.url,
        prefix=API_PREFIX,
        headers={"Authorization": f"Bearer {settings.token}"},
        timeout_s=timeout_s,
        name="the cloud API",
        hint=UNREACHABLE_HINT,
    )


class _Follow:
    """The bookkeeping of one wait: which phases were reported, when to give up."""

    def __init__(
        self,
        task: Task,
        timeout: float,
        on_phase: PhaseCallback | None,
        on_update: TaskCallback | None,
    ) -> None:
        self.task = task
        self.timeout = timeout
        self.on_phase = on_phase
        self.on_update = on_update
        self.shown = 0

    def see(self, task: Task) -> bool:
        """Report what is new; True once the task has ended (`TaskFailed` if in ERROR)."""
        self.task = task
        if self.on_phase is not None:
            for phase in task.phases[self.shown :]:
                self.on_phase(phase)
        self.shown = len(task.phases)
        if self.on_update is not None:
            self.on_update(task)
        if task.state.value == "ERROR":
            raise TaskFailed(
                f"task {task.id} ({task.operation} {task.resource_name}) failed: {task.error}", task
            )
        return task.ended

    def gave_up(self) -> Timeout:
        task = self.task
        return Timeout(
            f"task {task.id} ({task.operation} {task.resource_name}) has not ended after"
            f" {self.timeout:g} s (it is {task.detailed_state or task.state.value})"
        )


class CloudClient(DatasetStorageCalls, SshCalls):
    """The cloud API of one controller, over blocking HTTP (``httpx``)."""

    def __init__(self, settings: CloudSettings, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.settings = settings
        self._site = cloud_site(settings, timeout_s)
        self._http = HttpTransport(self._site)

    @classmethod
    def from_config(
        cls,
        config: Path | str | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> CloudClient:
        """Settings as ``vpod`` reads them: arguments, ``VPOD_URL``/``VPOD_TOKEN``, the toml."""
        return cls(resolve_cloud(url, token, config, env))

    def __enter__(self) -> CloudClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # catalog, project, invoices
    def flavors(self) -> list[Flavor]:
        return self._http.invoke(calls.flavors())

    def project(self) -> Project:
        """The caller's project, its quotas and usage."""
        return self._http.invoke(calls.project())

    def check_limits(
        self,
        flavor: str,
        *,
        server_count: int | None = None,
        volumes_gib: Sequence[int] = (),
        boot_volume_gib: int | None = None,
    ) -> Limits:
        """Would a cluster of ``flavor`` fit the project's quotas?"""
        return self._http.invoke(
            calls.check_limits(flavor, server_count, volumes_gib, boot_volume_gib)
        )

    def invoice(self, start: datetime | None = None, end: datetime | None = None) -> Invoice:
        """The project's invoice (default: this month so far)."""
        return self._http.invoke(calls.invoice(start, end))

    # reservations
    def list_reservations(
        self, start: datetime | None = None, end: datetime | None = None
    ) -> list[Reservation]:
        """The project's reservations, utilisation over ``[start, end)`` (default: this month)."""
        return self._http.invoke(calls.list_reservations(start, end))

    def create_reservation(self, flavor: str, units: int, term: str = "1y") -> Reservation:
        """Reserve ``units`` of ``flavor`` for ``term``; NoCapacity says the numbers."""
        return self._http.invoke(calls.create_reservation(flavor, units, term))

    def get_reservation(
        self, reservation: str, start: datetime | None = None, end: datetime | None = None
    ) -> Reservation:
        return self._http.invoke(calls.get_reservation(reservation, start, end))

    def cancel_reservation(self, reservation: str) -> Reservation:
        """Release the capacity now; billed to the end of the month (docs/cloud.md)."""
        return self._http.invoke(calls.cancel_reservation(reservation))

    # clusters
    def list_clusters(self) -> list[CloudCluster]:
        return self._http.invoke(calls.list_clusters())

    def create_cluster(self, name: str, flavor: str, **options: Unpack[ClusterOptions]) -> Task:
        return self._http.invoke(calls.create_cluster(name, flavor, options))

    def get_cluster(self, cluster: str) -> CloudCluster:
        """A cluster by id or name."""
        return self._http.invoke(calls.get_cluster(cluster))

    def delete_cluster(self, cluster: str, *, delete_volumes: bool = False) -> Task:
        return self._http.invoke(calls.delete_cluster(cluster, delete_volumes))

    def suspend_cluster(self, cluster: str) -> Task:
        return self._http.invoke(calls.cluster_action(cluster, "suspend"))

    def resume_cluster(self, cluster: str) -> Task:
        return self._http.invoke(calls.cluster_action(cluster, "resume"))

    def reboot_cluster(self, cluster: str) -> Task:
        return self._http.invoke(calls.cluster_action(cluster, "reboot"))

    def resize_cluster(self, cluster: str, server_count: int) -> Task:
        return self._http.invoke(calls.resize_cluster(cluster, server_count))

    def rebuild_cluster(self, cluster: str, image: str | None = None) -> Task:
        return self._http.invoke(calls.rebuild_cluster(cluster, image))

    def cluster_metadata(self, cluster: str) -> dict[str, str]:
        return self._http.invoke(calls.cluster_metadata(cluster))

    def set_cluster_metadata(
        self, cluster: str, metadata: Mapping[str, str], *, replace: bool = False
    ) -> MetadataUpdate:
        return self._http.invoke(calls.set_cluster_metadata(cluster, metadata, replace))

    def shell(self, cluster: str, server: int = 1) -> Shell:
        """How to open a shell on server ``server`` (1 = the first) of the cluster."""
        return self._http.invoke(calls.shell(cluster, server))

    def open_shell(
        self,
        cluster: str,
        server: int = 1,
        *,
        command: str | None = None,
        tty: bool = False,
        rows: int = 24,
        cols: int = 80,
        term: str = "xterm",
        lang: str = "",
    ) -> ShellConnection:
        """A shell (or ``command``, run by the server's shell) on the server, relayed by the
        controller; :class:`~.errors.FailedPrecondition` when its servers are reached by
        ssh instead."""
        access = self.shell(cluster, server)
        if access.kind != "relay":
            raise FailedPrecondition(
                f"this server is reached by {access.kind}:"
                f" ssh -p {access.port} {access.user}@{access.host}"
            )
        return open_relay(
            self._site,
            access.connect,
            command=command,
            tty=tty,
            rows=rows,
            cols=cols,
            term=term,
            lang=lang,
        )

    # volumes
    def list_volumes(self) -> list[Volume]:
        return self._http.invoke(calls.list_volumes())

    def create_volume(self, name: str, size_gib: int, volume_type: str = "standard") -> Task:
        return self._http.invoke(calls.create_volume(name, size_gib, volume_type))

    def get_volume(self, volume: str) -> Volume:
        return self._http.invoke(calls.get_volume(volume))

    def delete_volume(self, volume: str) -> Task:
        return self._http.invoke(calls.delete_volume(volume))

    def attach_volume(self, volume: str, cluster: str, server: int = 1) -> Task:
        return self._http.invoke(calls.attach_volume(volume, cluster, server))

    def detach_volume(self, volume: str) -> Task:
        return self._http.invoke(calls.detach_volume(volume))

    # tasks
    def list_tasks(
        self, *, resource: str | None = None, state: str | None = None, limit: int | None = None
    ) -> list[Task]:
        """The project's tasks, newest first."""
        return self._http.invoke(calls.list_tasks(resource, state, limit))

    def get_task(self, task_id: str) -> Task:
        return self._http.invoke(calls.get_task(task_id))

    def wait_task(
        self,
        task: Task | str,
        *,
        timeout: float = WAIT_TIMEOUT_S,
        poll: float = POLL_S,
        on_phase: PhaseCallback | None = None,
        on_update: TaskCallback | None = None,
    ) -> Task:
        """Poll until the task ends; ``on_phase`` sees each phase once, ``on_update`` each poll.

        Returns the finished task; `TaskFailed` if it ends in ERROR, `Timeout` after ``timeout`` s.
        """
        current = self.get_task(task) if isinstance(task, str) else task
        follow = _Follow(current, timeout, on_phase, on_update)
        deadline = time.monotonic() + timeout
        while not follow.see(current):
            if time.monotonic() >= deadline:
                raise follow.gave_up()
            time.sleep(poll)
            current = self.get_task(current.id)
        return current

    # administration (the cloud administrator's token)
    def list_projects(self) -> list[Project]:
        return self._http.invoke(calls.list_projects())

    def create_project(
        self, project_id: str, *, name: str = "", quotas: Mapping[str, int] | None = None
    ) -> ProjectCreated:
        """A new project and its first token (shown only in this reply)."""
        return self._http.invoke(calls.create_project(project_id, name, quotas or {}))

    def get_project(self, project_id: str) -> Project:
        return self._http.invoke(calls.get_project(project_id))

    def remove_project(self, project_id: str) -> None:
        self._http.invoke(calls.remove_project(project_id))

    def set_quotas(self, project_id: str, quotas: Mapping[str, int]) -> Project:
        return self._http.invoke(calls.set_quotas(project_id, quotas))

    def list_tokens(self, project_id: str) -> list[Token]:
        return self._http.invoke(calls.list_tokens(project_id))

    def issue_token(self, project_id: str, label: str = "") -> Token:
        return self._http.invoke(calls.issue_token(project_id, label))

    def revoke_token(self, token_id: str) -> None:
        self._http.invoke(calls.revoke_token(token_id))

    def project_invoice(
        self, project_id: str, start: datetime | None = None, end: datetime | None = None
    ) -> Invoice:
        return self._http.invoke(calls.project_invoice(project_id, start, end))

    def list_hosts(self) -> list[Host]:
        return self._http.invoke(calls.list_hosts())

    def register_host(
        self,
        host_id: str,
        role: str,
        model: str,
        *,
        fabric: str | None = None,
        address: str = "",
        slots: int | None = None,
    ) -> Host:
        return self._http.invoke(calls.register_host(host_id, role, model, fabric, address, slots))

    def set_host_enabled(self, host_id: str, enabled: bool) -> None:
        self._http.invoke(calls.set_host_enabled(host_id, enabled))

    def remove_host(self, host_id: str) -> None:
        self._http.invoke(calls.remove_host(host_id))


class AsyncCloudClient(AsyncDatasetStorageCalls, AsyncSshCalls):
    """The cloud API over ``httpx.AsyncClient``; the same methods as :class:`CloudClient`."""

    def __init__(self, settings: CloudSettings, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.settings = settings
        self._http = AsyncHttpTransport(cloud_site(settings, timeout_s))

    @classmethod
    def from_config(
        cls,
        config: Path | str | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> AsyncCloudClient:
        return cls(resolve_cloud(url, token, config, env))

    async def __aenter__(self) -> AsyncCloudClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.close()

    async def flavors(self) -> list[Flavor]:
        return await self._http.invoke(calls.flavors())

    async def project(self) -> Project:
        return await self._http.invoke(calls.project())

    async def check_limits(
        self,
        flavor: str,
        *,
        server_count: int | None = None,
        volumes_gib: Sequence[int] = (),
        boot_volume_gib: int | None = None,
    ) -> Limits:
        return await self._http.invoke(
            calls.check_limits(flavor, server_count, volumes_gib, boot_volume_gib)
        )

    async def invoice(self, start: datetime | None = None, end: datetime | None = None) -> Invoice:
        return await self._http.invoke(calls.invoice(start, end))

    async def list_reservations(
        self, start: datetime | None = None, end: datetime | None = None
    ) -> list[Reservation]:
        return await self._http.invoke(calls.list_reservations(start, end))

    async def create_reservation(self, flavor: str, units: int, term: str = "1y") -> Reservation:
        return await self._http.invoke(calls.create_reservation(flavor, units, term))

    async def get_reservation(
        self, reservation: str, start: datetime | None = None, end: datetime | None = None
    ) -> Reservation:
        return await self._http.invoke(calls.get_reservation(reservation, start, end))

    async def cancel_reservation(self, reservation: str) -> Reservation:
        return await self._http.invoke(calls.cancel_reservation(reservation))

    async def list_clusters(self) -> list[CloudCluster]:
        return await self._http.invoke(calls.list_clusters())

    async def create_cluster(
        self, name: str, flavor: str, **options: Unpack[ClusterOptions]
    ) -> Task:
        return await self._http.invoke(calls.create_cluster(name, flavor, options))

    async def get_cluster(self, cluster: str) -> CloudCluster:
        return await self._http.invoke(calls.get_cluster(cluster))

    async def delete_cluster(self, cluster: str, *, delete_volumes: bool = False) -> Task:
        return await self._http.invoke(calls.delete_cluster(cluster, delete_volumes))

    async def suspend_cluster(self, cluster: str) -> Task:
        return await self._http.invoke(calls.cluster_action(cluster, "suspend"))

    async def resume_cluster(self, cluster: str) -> Task:
        return await self._http.invoke(calls.cluster_action(cluster, "resume"))

    async def reboot_cluster(self, cluster: str) -> Task:
        return await self._http.invoke(calls.cluster_action(cluster, "reboot"))

    async def resize_cluster(self, cluster: str, server_count: int) -> Task:
        return await self._http.invoke(calls.resize_cluster(cluster, server_count))

    async def rebuild_cluster(self, cluster: str, image: str | None = None) -> Task:
        return await self._http.invoke(calls.rebuild_cluster(cluster, image))

    async def cluster_metadata(self, cluster: str) -> dict[str, str]:
        return await self._http.invoke(calls.cluster_metadata(cluster))

    async def set_cluster_metadata(
        self, cluster: str, metadata: Mapping[str, str], *, replace: bool = False
    ) -> MetadataUpdate:
        return await self._http.invoke(calls.set_cluster_metadata(cluster, metadata, replace))

    async def shell(self, cluster: str, server: int = 1) -> Shell:
        return await self._http.invoke(calls.shell(cluster, server))

    async def list_volumes(self) -> list[Volume]:
        return await self._http.invoke(calls.list_volumes())

    async def create_volume(self, name: str, size_gib: int, volume_type: str = "standard") -> Task:
        return await self._http.invoke(calls.create_volume(name, size_gib, volume_type))

    async def get_volume(self, volume: str) -> Volume:
        return await self._http.invoke(calls.get_volume(volume))

    async def delete_volume(self, volume: str) -> Task:
        return await self._http.invoke(calls.delete_volume(volume))

    async def attach_volume(self, volume: str, cluster: str, server: int = 1) -> Task:
        return await self._http.invoke(calls.attach_volume(volume, cluster, server))

    async def detach_volume(self, volume: str) -> Task:
        return await self._http.invoke(calls.detach_volume(volume))

    async def list_tasks(
        self, *, resource: str | None = None, state: str | None = None, limit: int | None = None
    ) -> list[Task]:
        return await self._http.invoke(calls.list_tasks(resource, state, limit))

    async def get_task(self, task_id: str) -> Task:
        return await self._http.invoke(calls.get_task(task_id))

    async def wait_task(
        self,
        task: Task | str,
        *,
        timeout: float = WAIT_TIMEOUT_S,
        poll: float = POLL_S,
        on_phase: PhaseCallback | None = None,
        on_update: TaskCallback | None = None,
    ) -> Task:
        current = await self.get_task(task) if isinstance(task, str) else task
        follow = _Follow(current, timeout, on_phase, on_update)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not follow.see(current):
            if loop.time() >= deadline:
                raise follow.gave_up()
            await asyncio.sleep(poll)
            current = await self.get_task(current.id)
        return current

    async def list_projects(self) -> list[Project]:
        return await self._http.invoke(calls.list_projects())

    async def create_project(
        self, project_id: str, *, name: str = "", quotas: Mapping[str, int] | None = None
    ) -> ProjectCreated:
        return await self._http.invoke(calls.create_project(project_id, name, quotas or {}))

    async def get_project(self, project_id: str) -> Project:
        return await self._http.invoke(calls.get_project(project_id))

    async def remove_project(self, project_id: str) -> None:
        await self._http.invoke(calls.remove_project(project_id))

    async def set_quotas(self, project_id: str, quotas: Mapping[str, int]) -> Project:
        return await self._http.invoke(calls.set_quotas(project_id, quotas))

    async def list_tokens(self, project_id: str) -> list[Token]:
        return await self._http.invoke(calls.list_tokens(project_id))

    async def issue_token(self, project_id: str, label: str = "") -> Token:
        return await self._http.invoke(calls.issue_token(project_id, label))

    async def revoke_token(self, token_id: str) -> None:
        await self._http.invoke(calls.revoke_token(token_id))

    async def project_invoice(
        self, project_id: str, start: datetime | None = None, end: datetime | None = None
    ) -> Invoice:
        return await self._http.invoke(calls.project_invoice(project_id, start, end))

    async def list_hosts(self) -> list[Host]:
        return await self._http.invoke(calls.list_hosts())

    async def register_host(
        self,
        host_id: str,
        role: str,
        model: str,
        *,
        fabric: str | None = None,
        address: str = "",
        slots: int | None = None,
    ) -> Host:
        rpc = calls.register_host(host_id, role, model, fabric, address, slots)
        return await self._http.invoke(rpc)

    async def set_host_enabled(self, host_id: str, enabled: bool) -> None:
        await self._http.invoke(calls.set_host_enabled(host_id, enabled))

    async def remove_host(self, host_id: str) -> None:
        await self._http.invoke(calls.remove_host(host_id))
