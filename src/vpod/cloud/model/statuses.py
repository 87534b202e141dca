"""The statuses of the cloud's resources and the operations that change them.

One value type each, defined in :mod:`vpod.domain.cloud.statuses` (the store reads its rows
into them too); the cloud's model names them here."""

from __future__ import annotations

from vpod.domain.cloud.statuses import ClusterStatus as ClusterStatus
from vpod.domain.cloud.statuses import Operation as Operation
from vpod.domain.cloud.statuses import Phase as Phase
from vpod.domain.cloud.statuses import ServerStatus as ServerStatus
from vpod.domain.cloud.statuses import TaskState as TaskState
from vpod.domain.cloud.statuses import VolumeStatus as VolumeStatus
