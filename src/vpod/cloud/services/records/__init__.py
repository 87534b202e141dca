"""The cloud's one door to its records: typed calls on the store, cloud model values in and
out.

:class:`CloudRecords` is the only way the cloud's use-cases, operations and
runner reach their records: each method runs one store call through
:class:`~.calls.CloudDb` (on the event loop for SQLite, in threads for
PostgreSQL, store errors as cloud errors). The store reads and writes the
cloud's own values (:mod:`vpod.domain.cloud`), so a method is the store's
own, declared once in the table below (:mod:`.base`); a task read back has
its parameters typed (:mod:`.convert`), so no store type passes the door. An
import-linter contract keeps the rest of ``vpod.cloud`` off ``vpod.store``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from vpod.store.cloud_store import CloudStore
from vpod.store.dataset_store import DatasetStore
from vpod.store.errors import Conflict
from vpod.store.gpu_hosts import GpuHostStore
from vpod.store.keypair_store import KeypairStore
from vpod.store.reservation_store import ReservationStore
from vpod.store.ssh_port_store import SshPortStore

from .base import RecordsBase, runs, runs_into, runs_on
from .calls import CloudDb
from .convert import task_of, tasks_of

if TYPE_CHECKING:
    from vpod.store import Store


def _keypairs(store: CloudStore) -> KeypairStore:
    return store.keypairs


def _datasets(store: CloudStore) -> DatasetStore:
    return store.datasets


def _gpu_hosts(store: CloudStore) -> GpuHostStore:
    return store.gpu_hosts


def _reservations(store: CloudStore) -> ReservationStore:
    return store.reservations


def _ssh_ports(store: CloudStore) -> SshPortStore:
    return store.ssh_ports


class CloudRecords(RecordsBase):
    """Every typed call the cloud makes on its records."""

    @classmethod
    def of(cls, store: Store) -> CloudRecords:
        """The records of the cloud's tables in ``store``'s database (same engine and pool)."""
        tables = CloudStore.of(store)
        return cls(tables, CloudDb(tables))

    def close(self) -> None:
        """Stop the threads store calls run in (PostgreSQL)."""
        self._db.close()

    # -- projects, their quotas and usage, and API tokens ---------------------------------------

    add_project = runs(CloudStore.add_project)
    get_project = runs(CloudStore.get_project)
    list_projects = runs(CloudStore.list_projects)
    set_quotas = runs(CloudStore.set_quotas)
    remove_project = runs(CloudStore.remove_project)
    project_usage = runs(CloudStore.project_usage)
    add_token = runs(CloudStore.add_token)
    find_token = runs(CloudStore.find_token)
    list_tokens = runs(CloudStore.list_tokens)
    remove_token = runs(CloudStore.remove_token)

    # -- clusters and their servers, with the claims a task makes on them -----------------------

    create_cluster = runs(CloudStore.create_cluster)
    get_cluster = runs(CloudStore.get_cluster)
    find_cluster = runs(CloudStore.find_cluster)
    list_clusters = runs(CloudStore.list_clusters)
    update_cluster = runs(CloudStore.update_cluster)
    update_idle_cluster = runs(CloudStore.update_idle_cluster)
    start_cluster_task = runs(CloudStore.start_cluster_task)
    delete_cluster = runs(CloudStore.delete_cluster)
    list_servers = runs(CloudStore.list_servers)
    add_servers = runs(CloudStore.add_servers)
    update_server = runs(CloudStore.update_server)
    delete_server = runs(CloudStore.delete_server)

    # -- volumes, boot and data ---------------------------------------------------------------

    create_volume = runs(CloudStore.create_volume)
    get_volume = runs(CloudStore.get_volume)
    find_volume = runs(CloudStore.find_volume)
    list_volumes = runs(CloudStore.list_volumes)
    update_volume = runs(CloudStore.update_volume)
    add_volumes = runs(CloudStore.add_volumes)
    start_volume_task = runs(CloudStore.start_volume_task)
    delete_volume = runs(CloudStore.delete_volume)

    # -- tasks (parameters typed when read) and the runner's lease ------------------------------

    add_task = runs(CloudStore.add_task)
    get_task = runs_into(CloudStore.get_task, task_of)
    list_tasks = runs_into(CloudStore.list_tasks, tasks_of)
    update_task = runs_into(CloudStore.update_task, task_of)
    enter_phase = runs_into(CloudStore.enter_phase, task_of)
    finish_task = runs_into(CloudStore.finish_task, task_of)
    unfinished_tasks = runs_into(CloudStore.unfinished_tasks, tasks_of)
    try_acquire_lease = runs(CloudStore.try_acquire_lease)
    release_lease = runs(CloudStore.release_lease)

    # -- metering entries, as invoices read them (written with the changes they record) --------

    list_meter = runs(CloudStore.list_meter)

    # -- registered hosts, the slots servers hold, GPU hosts' agents and GPUs -------------------

    add_host = runs(CloudStore.add_host)
    list_host_usage = runs(CloudStore.list_host_usage)
    set_host_enabled = runs(CloudStore.set_host_enabled)
    remove_host = runs(CloudStore.remove_host)
    release_slots = runs(CloudStore.release_slots)
    register_gpu_host = runs_on(_gpu_hosts, GpuHostStore.register)
    gpu_agent = runs_on(_gpu_hosts, GpuHostStore.agent)
    list_gpu_agents = runs_on(_gpu_hosts, GpuHostStore.list_agents)
    list_host_gpus = runs_on(_gpu_hosts, GpuHostStore.list_gpus)
    record_gpu_health = runs_on(_gpu_hosts, GpuHostStore.record_health)
    server_slots = runs_on(_gpu_hosts, GpuHostStore.server_slots)

    async def take_slots(self, server_id: str, host_id: str, slots: Sequence[int]) -> bool:
        """Give host slots to a server; False if another request took one of them meanwhile
        (place again on a fresh view)."""
        try:
            await self._db.racing(self._store.take_slots, server_id, host_id, slots)
        except Conflict:
            return False
        return True

    # -- SSH keypairs and the clusters they may log in to ---------------------------------------

    add_keypair = runs_on(_keypairs, KeypairStore.add)
    find_keypair = runs_on(_keypairs, KeypairStore.find)
    list_keypairs = runs_on(_keypairs, KeypairStore.list_keypairs)
    delete_keypair = runs_on(_keypairs, KeypairStore.delete)
    keypair_holders = runs_on(_keypairs, KeypairStore.holders)
    give_keypairs = runs_on(_keypairs, KeypairStore.give)
    take_keypair = runs_on(_keypairs, KeypairStore.take)
    keypairs_of = runs_on(_keypairs, KeypairStore.of_clusters)

    # -- dataset storage (keys sealed) and the clusters holding it ------------------------------

    add_storage = runs_on(_datasets, DatasetStore.add)
    get_storage = runs_on(_datasets, DatasetStore.get)
    find_storage = runs_on(_datasets, DatasetStore.find)
    list_storages = runs_on(_datasets, DatasetStore.list_storages)
    reseal_storage = runs_on(_datasets, DatasetStore.reseal)
    delete_storage = runs_on(_datasets, DatasetStore.delete)
    attach_storage = runs_on(_datasets, DatasetStore.attach)
    detach_storage = runs_on(_datasets, DatasetStore.detach)
    storage_attachment = runs_on(_datasets, DatasetStore.attachment)
    storage_attachments = runs_on(_datasets, DatasetStore.attachments)
    storages_held_by = runs_on(_datasets, DatasetStore.held_by)

    # -- reservation plans and the pool units they hold -----------------------------------------

    buy_reservation = runs_on(_reservations, ReservationStore.buy)
    get_reservation = runs_on(_reservations, ReservationStore.get)
    list_reservations = runs_on(_reservations, ReservationStore.list_reservations)
    cancel_reservation = runs_on(_reservations, ReservationStore.cancel)

    # -- direct SSH ports held by servers (the operator option ``ssh_direct_ports``) ------------

    assign_ssh_ports = runs_on(_ssh_ports, SshPortStore.assign)
    free_ssh_ports = runs_on(_ssh_ports, SshPortStore.free_count)
    ssh_ports_of = runs_on(_ssh_ports, SshPortStore.of_servers)
    ssh_port_holder = runs_on(_ssh_ports, SshPortStore.holder)
    held_ssh_ports = runs_on(_ssh_ports, SshPortStore.held)
    servers_needing_ssh_ports = runs_on(_ssh_ports, SshPortStore.servers_needing)


__all__ = ["CloudRecords"]
