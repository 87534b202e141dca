"""Dataset storage: the operator's endpoints and a project's registered buckets.

One value type each, defined in :mod:`vpod.domain.cloud.datasets` (the store reads its rows
into them too); the cloud's model names them here."""

from __future__ import annotations

from vpod.domain.cloud.datasets import AWS_PROFILE as AWS_PROFILE
from vpod.domain.cloud.datasets import DatasetStorage as DatasetStorage
from vpod.domain.cloud.datasets import RegisteredBucket as RegisteredBucket
from vpod.domain.cloud.datasets import SealedStorage as SealedStorage
from vpod.domain.cloud.datasets import StorageAttachment as StorageAttachment
from vpod.domain.cloud.datasets import StorageEndpoint as StorageEndpoint
from vpod.domain.cloud.datasets import mask as mask
