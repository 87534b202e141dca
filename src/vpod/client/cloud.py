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

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Self, Unpack

from . import cloud_calls as calls
from .api_methods import Pause, Procedure, api_call
from .cloud_config import API_PREFIX, CloudSettings, resolve_cloud
from .cloud_records import Phase, Task
from .errors import FailedPrecondition, TaskFailed, Timeout
from .http_api import AsyncHttpApi, BlockingHttpApi, HttpApi
from .http_transport import DEFAULT_TIMEOUT_S, HttpSite

if TYPE_CHECKING:  # websockets, and their modules, load when a shell or tunnel opens
    from .cloud_shell import ShellConnection, ShellRequest
    from .cloud_ssh import SshTunnel

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


def wait_task(
    task: Task | str,
    *,
    timeout: float = WAIT_TIMEOUT_S,
    poll: float = POLL_S,
    on_phase: PhaseCallback | None = None,
    on_update: TaskCallback | None = None,
) -> Procedure[Task]:
    """Poll until the task ends; ``on_phase`` sees each phase once, ``on_update`` each poll.

    Returns the finished task; `TaskFailed` if it ends in ERROR, `Timeout` after ``timeout`` s.
    """
    current = (yield calls.get_task(task)) if isinstance(task, str) else task
    follow = _Follow(current, timeout, on_phase, on_update)
    deadline = time.monotonic() + timeout
    while not follow.see(current):
        if time.monotonic() >= deadline:
            raise follow.gave_up()
        yield Pause(poll)
        current = yield calls.get_task(current.id)
    return current


class _CloudApi(HttpApi):
    """The cloud API's methods, the same for the blocking client and its asyncio twin."""

    def __init__(self, settings: CloudSettings, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.settings = settings
        super().__init__(cloud_site(settings, timeout_s))

    @classmethod
    def from_config(
        cls,
        config: Path | str | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Self:
        """Settings as ``vpod`` reads them: arguments, ``VPOD_URL``/``VPOD_TOKEN``, the toml."""
        return cls(resolve_cloud(url, token, config, env))

    # catalog, project, invoices
    flavors = api_call(calls.flavors)
    project = api_call(calls.project)
    check_limits = api_call(calls.check_limits)
    invoice = api_call(calls.invoice)
    invoice_days = api_call(calls.invoice_days)

    # reservations
    list_reservations = api_call(calls.list_reservations)
    create_reservation = api_call(calls.create_reservation)
    get_reservation = api_call(calls.get_reservation)
    cancel_reservation = api_call(calls.cancel_reservation)

    # clusters
    list_clusters = api_call(calls.list_clusters)
    create_cluster = api_call(calls.create_cluster)
    get_cluster = api_call(calls.get_cluster)
    delete_cluster = api_call(calls.delete_cluster)
    suspend_cluster = api_call(calls.cluster_action("suspend"))
    resume_cluster = api_call(calls.cluster_action("resume"))
    reboot_cluster = api_call(calls.cluster_action("reboot"))
    resize_cluster = api_call(calls.resize_cluster)
    rebuild_cluster = api_call(calls.rebuild_cluster)
    cluster_metadata = api_call(calls.cluster_metadata)
    set_cluster_metadata = api_call(calls.set_cluster_metadata)
    shell = api_call(calls.shell)

    # volumes
    list_volumes = api_call(calls.list_volumes)
    create_volume = api_call(calls.create_volume)
    get_volume = api_call(calls.get_volume)
    delete_volume = api_call(calls.delete_volume)
    attach_volume = api_call(calls.attach_volume)
    detach_volume = api_call(calls.detach_volume)

    # tasks
    list_tasks = api_call(calls.list_tasks)
    get_task = api_call(calls.get_task)
    wait_task = api_call(wait_task)

    # dataset storage: S3-compatible buckets a project registers and gives to its clusters
    # (no answer carries a key: the access key id comes back masked)
    storage_endpoints = api_call(calls.storage_endpoints)
    list_dataset_storage = api_call(calls.list_dataset_storage)
    register_dataset_storage = api_call(calls.register_dataset_storage)
    get_dataset_storage = api_call(calls.get_dataset_storage)
    delete_dataset_storage = api_call(calls.delete_dataset_storage)
    attach_dataset_storage = api_call(calls.attach_dataset_storage)
    detach_dataset_storage = api_call(calls.detach_dataset_storage)

    # ssh: keypairs, a cluster's keypairs, its servers' host keys (docs/ssh.md)
    list_keypairs = api_call(calls.list_keypairs)
    create_keypair = api_call(calls.create_keypair)
    get_keypair = api_call(calls.get_keypair)
    delete_keypair = api_call(calls.delete_keypair)
    cluster_keypairs = api_call(calls.cluster_keypairs)
    add_cluster_keypair = api_call(calls.add_cluster_keypair)
    remove_cluster_keypair = api_call(calls.remove_cluster_keypair)
    cluster_ssh = api_call(calls.cluster_ssh)
    cluster_console = api_call(calls.cluster_console)

    # administration (the cloud administrator's token)
    list_projects = api_call(calls.list_projects)
    create_project = api_call(calls.create_project)
    get_project = api_call(calls.get_project)
    remove_project = api_call(calls.remove_project)
    set_quotas = api_call(calls.set_quotas)
    list_tokens = api_call(calls.list_tokens)
    issue_token = api_call(calls.issue_token)
    revoke_token = api_call(calls.revoke_token)
    project_invoice = api_call(calls.project_invoice)
    list_hosts = api_call(calls.list_hosts)
    register_host = api_call(calls.register_host)
    set_host_enabled = api_call(calls.set_host_enabled)
    remove_host = api_call(calls.remove_host)


class CloudClient(_CloudApi, BlockingHttpApi):
    """The cloud API of one controller, over blocking HTTP (``httpx``)."""

    def open_shell(
        self, cluster: str, server: int = 1, **request: Unpack[ShellRequest]
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
        from .cloud_shell import open_relay

        return open_relay(self._site, access.connect, **request)

    def open_ssh_tunnel(self, cluster: str, server: str) -> SshTunnel:
        """An SSH connection to the server's sshd (``server``: its number or name)."""
        from .cloud_ssh import open_tunnel

        return open_tunnel(self._site, cluster, server)


class AsyncCloudClient(_CloudApi, AsyncHttpApi):
    """The cloud API over ``httpx.AsyncClient``; the same methods as :class:`CloudClient`."""
