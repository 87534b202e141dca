"""What every group of records methods shares: the store and the runner of its calls."""

from __future__ import annotations

from vpod.store.cloud_store import CloudStore

from .calls import CloudDb


class RecordsBase:
    def __init__(self, store: CloudStore, calls: CloudDb) -> None:
        self._store = store
        self._db = calls
