"""What each kind of task is asked to do, one typed value per operation.

One value type each, defined in :mod:`vpod.domain.cloud.task_params` (the store reads its rows
into them too); the cloud's model names them here."""

from __future__ import annotations

from vpod.domain.cloud.task_params import PARAMS_OF as PARAMS_OF
from vpod.domain.cloud.task_params import ClusterParams as ClusterParams
from vpod.domain.cloud.task_params import CreateParams as CreateParams
from vpod.domain.cloud.task_params import DatasetAttachParams as DatasetAttachParams
from vpod.domain.cloud.task_params import DatasetChange as DatasetChange
from vpod.domain.cloud.task_params import DatasetDetachParams as DatasetDetachParams
from vpod.domain.cloud.task_params import DeleteParams as DeleteParams
from vpod.domain.cloud.task_params import RebuildParams as RebuildParams
from vpod.domain.cloud.task_params import ResizeParams as ResizeParams
from vpod.domain.cloud.task_params import SetMetadataParams as SetMetadataParams
from vpod.domain.cloud.task_params import TaskParams as TaskParams
from vpod.domain.cloud.task_params import VolumeAttachParams as VolumeAttachParams
from vpod.domain.cloud.task_params import VolumeDetachParams as VolumeDetachParams
from vpod.domain.cloud.task_params import is_vpod as is_vpod
from vpod.domain.cloud.task_params import params_kind as params_kind
