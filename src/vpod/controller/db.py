"""The controller's store runner: store calls in the controller's error vocabulary
(:mod:`vpod.store.runner` says where they run and why)."""

from __future__ import annotations

from vpod.store.runner import StoreFaults, StoreRunner
from vpod.store.store import Store

from . import errors

FAULTS = StoreFaults(
    not_found=errors.NotFound,
    already_exists=errors.AlreadyExists,
    unavailable=errors.Unavailable,
)


class Db(StoreRunner[Store]):
    """Runs :class:`Store` methods; a Conflict stays a Conflict for use-cases to retry."""

    def __init__(self, store: Store, *, workers: int = 4, inline: bool | None = None) -> None:
        super().__init__(store, FAULTS, workers=workers, inline=inline)
