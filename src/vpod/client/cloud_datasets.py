"""Dataset storage calls of the cloud clients (declared once for :class:`~.cloud.CloudClient` and
:class:`~.cloud.AsyncCloudClient`): S3-compatible buckets a project registers and gives
to its clusters. No answer carries a key: the access key id comes back masked."""

from __future__ import annotations

from . import cloud_calls as calls
from .api_methods import api_call


class DatasetStorageMethods:
    storage_endpoints = api_call(calls.storage_endpoints)
    list_dataset_storage = api_call(calls.list_dataset_storage)
    register_dataset_storage = api_call(calls.register_dataset_storage)
    get_dataset_storage = api_call(calls.get_dataset_storage)
    delete_dataset_storage = api_call(calls.delete_dataset_storage)
    attach_dataset_storage = api_call(calls.attach_dataset_storage)
    detach_dataset_storage = api_call(calls.detach_dataset_storage)
