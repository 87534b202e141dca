"""How the controller runs store calls: on its event loop for SQLite, in threads otherwise."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tests.store.factories import add_cluster
from vpod.controller import errors
from vpod.controller.db import Db
from vpod.store import Store


def _thread_of_call(db: Db) -> int:
    async def run() -> int:
        return await db(threading.get_ident)

    return asyncio.run(run())


def test_sqlite_calls_run_on_the_loop_postgresql_calls_in_threads(store: Store) -> None:
    db = Db(store)
    try:
        on_loop = _thread_of_call(db) == threading.get_ident()
        assert on_loop is (store.dialect == "sqlite")
        assert db.inline is on_loop
    finally:
        db.close()


@pytest.mark.parametrize("inline", [True, False])
def test_store_errors_become_service_errors_either_way(store: Store, inline: bool) -> None:
    db = Db(store, inline=inline)
    add_cluster(store, "c1", machines=1)

    async def run() -> None:
        assert await db(store.find_partition, "nope") is None
        with pytest.raises(errors.NotFound, match="cluster c2"):
            await db(store.remove_cluster, "c2")
        with pytest.raises(errors.AlreadyExists):
            await db(store.add_cluster, store.get_cluster("c1"))

    try:
        asyncio.run(run())
        assert [c.id for c in store.list_clusters()] == ["c1"]
    finally:
        db.close()
