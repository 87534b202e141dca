"""Every operation a task can run, by the ``operation`` its record names."""

from __future__ import annotations

from collections.abc import Mapping

from ..runner import Operation
from ..states import Operation as Op
from .create import CreateCluster
from .datasets import AttachDatasets, DetachDatasets
from .lifecycle import DeleteCluster, RebootCluster, RebuildCluster, ResizeCluster
from .suspend_resume import ResumeCluster, SuspendCluster
from .volumes import AttachVolume, CreateVolume, DeleteVolume, DetachVolume


def all_operations() -> Mapping[str, Operation]:
    return {
        Op.CREATE.value: CreateCluster(),
        Op.DELETE.value: DeleteCluster(),
        Op.SUSPEND.value: SuspendCluster(),
        Op.RESUME.value: ResumeCluster(),
        Op.RESIZE.value: ResizeCluster(),
        Op.REBUILD.value: RebuildCluster(),
        Op.REBOOT.value: RebootCluster(),
        Op.VOLUME_CREATE.value: CreateVolume(),
        Op.VOLUME_DELETE.value: DeleteVolume(),
        Op.VOLUME_ATTACH.value: AttachVolume(),
        Op.VOLUME_DETACH.value: DetachVolume(),
        Op.DATASET_ATTACH.value: AttachDatasets(),
        Op.DATASET_DETACH.value: DetachDatasets(),
    }
