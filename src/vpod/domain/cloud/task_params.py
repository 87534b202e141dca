"""What each kind of task is asked to do: one typed value per operation.

A task row keeps its parameters as a JSON object; :meth:`TaskParams.to_json`
writes exactly the keys earlier versions wrote (the API shows them as they
are), and the records read them back through :func:`params_kind` (validated
there, at the store's door). Old rows load: every key a version may have left
out has the default that version meant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .statuses import Operation


@dataclass(frozen=True)
class DatasetChange:
    """What a task does to a cluster's dataset storage before setting its servers up."""

    storage_id: str | None
    """The storage to attach; ``None``: detach the one the cluster holds."""
    mount: str | None = None


@dataclass(frozen=True)
class TaskParams:
    """A task with nothing to say beyond its operation (a volume's creation or deletion)."""

    def to_json(self) -> dict[str, Any]:
        return {}

    @property
    def dataset_change(self) -> DatasetChange | None:
        """The dataset storage change the task asks for, if any."""
        return None


@dataclass(frozen=True)
class ClusterParams(TaskParams):
    """A task on a cluster (suspend, resume, reboot, and the base of the others)."""

    vpod: bool = True
    """Whether the cluster is a vPOD (the phases a task shows depend on it)."""

    def to_json(self) -> dict[str, Any]:
        return {"vpod": self.vpod}


@dataclass(frozen=True)
class CreateParams(ClusterParams):
    data_volume_ids: tuple[str, ...] = ()
    """Data volumes the servers get (new ones and existing ones attached)."""
    new_volume_ids: tuple[str, ...] = ()
    """Volumes made for the cluster (boot and new data volumes): deleted if creation fails."""
    dataset_storage_id: str | None = None
    dataset_mount: str | None = None

    def to_json(self) -> dict[str, Any]:
        values = {
            **super().to_json(),
            "data_volume_ids": list(self.data_volume_ids),
            "new_volume_ids": list(self.new_volume_ids),
        }
        if self.dataset_storage_id:
            values.update(
                dataset_storage_id=self.dataset_storage_id, dataset_mount=self.dataset_mount
            )
        return values

    @property
    def dataset_change(self) -> DatasetChange | None:
        if not self.dataset_storage_id:
            return None
        return DatasetChange(self.dataset_storage_id, self.dataset_mount)


@dataclass(frozen=True)
class DeleteParams(ClusterParams):
    delete_volumes: bool = False
    """Delete the cluster's data volumes too (boot volumes always go)."""

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "delete_volumes": self.delete_volumes}


@dataclass(frozen=True)
class RebuildParams(ClusterParams):
    image: str = ""

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "image": self.image}


@dataclass(frozen=True)
class ResizeParams(ClusterParams):
    server_count: int = 0
    previous: int = 0
    """The server count before: what a failed growth goes back to."""
    new_server_ids: tuple[str, ...] = ()
    """Servers a growth adds."""
    remove_server_ids: tuple[str, ...] = ()
    """Servers a shrink removes."""

    @property
    def shrinking(self) -> bool:
        return self.server_count < self.previous

    def to_json(self) -> dict[str, Any]:
        values = {**super().to_json(), "server_count": self.server_count, "previous": self.previous}
        if self.shrinking:
            values["remove_server_ids"] = list(self.remove_server_ids)
        else:
            values["new_server_ids"] = list(self.new_server_ids)
        return values


@dataclass(frozen=True)
class SetMetadataParams(TaskParams):
    """Recorded finished: the metadata the cluster was given."""

    metadata: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"metadata": dict(self.metadata)}


@dataclass(frozen=True)
class DatasetAttachParams(ClusterParams):
    dataset_storage_id: str = ""
    dataset_mount: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            **super().to_json(),
            "dataset_storage_id": self.dataset_storage_id,
            "dataset_mount": self.dataset_mount,
        }

    @property
    def dataset_change(self) -> DatasetChange | None:
        return DatasetChange(self.dataset_storage_id, self.dataset_mount)


@dataclass(frozen=True)
class DatasetDetachParams(ClusterParams):
    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "dataset_detach": True}

    @property
    def dataset_change(self) -> DatasetChange | None:
        return DatasetChange(None)


@dataclass(frozen=True)
class VolumeDetachParams(TaskParams):
    cluster_id: str
    """The cluster the volume leaves (claimed with it)."""

    def to_json(self) -> dict[str, Any]:
        return {"cluster_id": self.cluster_id}


@dataclass(frozen=True)
class VolumeAttachParams(TaskParams):
    cluster_id: str
    """The cluster the volume joins (claimed with it)."""
    server: int = 1
    """The position of the server in the cluster."""

    def to_json(self) -> dict[str, Any]:
        return {"cluster_id": self.cluster_id, "server": self.server}


PARAMS_OF: dict[Operation, type[TaskParams]] = {
    Operation.CREATE: CreateParams,
    Operation.DELETE: DeleteParams,
    Operation.SUSPEND: ClusterParams,
    Operation.RESUME: ClusterParams,
    Operation.RESIZE: ResizeParams,
    Operation.REBUILD: RebuildParams,
    Operation.REBOOT: ClusterParams,
    Operation.SET_METADATA: SetMetadataParams,
    Operation.VOLUME_CREATE: TaskParams,
    Operation.VOLUME_DELETE: TaskParams,
    Operation.VOLUME_ATTACH: VolumeAttachParams,
    Operation.VOLUME_DETACH: VolumeDetachParams,
    Operation.DATASET_ATTACH: DatasetAttachParams,
    Operation.DATASET_DETACH: DatasetDetachParams,
}
"""The parameters' kind of each operation (every operation has one)."""


def params_kind(operation: Operation) -> type[TaskParams]:
    return PARAMS_OF[operation]


def is_vpod(params: TaskParams) -> bool:
    """Whether a cluster task's cluster is a vPOD (true when the task does not say)."""
    return params.vpod if isinstance(params, ClusterParams) else True
