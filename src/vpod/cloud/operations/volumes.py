"""Volume tasks: create, delete, attach and detach (no phases: NEW, RUNNING, then the end).

Attach and detach claim the cluster too, so nothing else changes it
meanwhile. Only VMs take external volumes: the API refuses bare-metal
clusters before a task exists. A data volume appears on the cluster's first
server (or the one named) as ``/mnt/<volume name>``.
"""

from __future__ import annotations

from ..metering import volume_entry
from ..model import errors
from ..model.results import Attachment, VolumeChange
from ..model.task_params import VolumeAttachParams
from ..runner import Job, Outcome
from ..states import VolumeStatus
from .common import delete_volume, servers_of


class CreateVolume:
    async def run(self, job: Job) -> Outcome:
        volume = await job.ctx.records.get_volume(job.task.resource_id)
        await job.ctx.volumes.create(volume.id, volume.size_gib, volume.volume_type, volume.image)
        entry = volume_entry(volume, VolumeStatus.AVAILABLE, job.now)
        return Outcome(
            volumes={volume.id: VolumeChange(VolumeStatus.AVAILABLE)},
            meter=[entry],
        )

    async def fail(self, job: Job, _error: str) -> Outcome:
        volume = await job.ctx.records.get_volume(job.task.resource_id)
        return Outcome(
            volumes={volume.id: VolumeChange(VolumeStatus.ERROR)},
            meter=[volume_entry(volume, VolumeStatus.ERROR, job.now)],
        )


class DeleteVolume:
    async def run(self, job: Job) -> Outcome:
        try:
            volume = await job.ctx.records.get_volume(job.task.resource_id)
        except errors.NotFound:
            return Outcome()
        await delete_volume(job, volume)
        return Outcome()

    async def fail(self, job: Job, _error: str) -> Outcome:
        return Outcome(volumes={job.task.resource_id: VolumeChange(VolumeStatus.ERROR)})


class AttachVolume:
    async def run(self, job: Job) -> Outcome:
        volume = await job.ctx.records.get_volume(job.task.resource_id)
        params = job.params_as(VolumeAttachParams)
        cluster_id = params.cluster_id
        servers = await servers_of(job, cluster_id)
        position = params.server
        server = next((s for s in servers if s.position == position), None)
        if server is None:
            raise errors.NotFound(f"the cluster has no server {position}")
        await job.ctx.volumes.attach(volume.id, server.id, volume.name)
        entry = volume_entry(volume, VolumeStatus.IN_USE, job.now)
        return Outcome(
            volumes={
                volume.id: VolumeChange(VolumeStatus.IN_USE, Attachment(cluster_id, server.id))
            },
            meter=[entry],
        )

    async def fail(self, job: Job, _error: str) -> Outcome:
        volume = await job.ctx.records.get_volume(job.task.resource_id)
        return Outcome(
            volumes={volume.id: VolumeChange(VolumeStatus.AVAILABLE, detached=True)},
            meter=[volume_entry(volume, VolumeStatus.AVAILABLE, job.now)],
        )


class DetachVolume:
    async def run(self, job: Job) -> Outcome:
        volume = await job.ctx.records.get_volume(job.task.resource_id)
        if volume.server_id is not None:
            await job.ctx.volumes.detach(volume.id, volume.server_id)
        entry = volume_entry(volume, VolumeStatus.AVAILABLE, job.now)
        return Outcome(
            volumes={volume.id: VolumeChange(VolumeStatus.AVAILABLE, detached=True)},
            meter=[entry],
        )

    async def fail(self, job: Job, _error: str) -> Outcome:
        volume = await job.ctx.records.get_volume(job.task.resource_id)
        return Outcome(volumes={volume.id: VolumeChange(VolumeStatus.IN_USE)})
