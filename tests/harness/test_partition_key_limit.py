"""A partition has at most MAX_KEYS_PER_PARTITION keys at once: a user minting keys without
end would only fill the store every user shares. Minting again under a key's id replaces it
(a retried Slurm prolog); revoking one makes room."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from vpod.controller import errors
from vpod.controller.caller import SYSTEM, Caller
from vpod.controller.partition_keys import MAX_KEYS_PER_PARTITION
from vpod.controller.settings import Settings

from .pod import ALLOCATION, Pod, start_pod

pytestmark = pytest.mark.anyio


async def _alice(pod: Pod) -> Caller:
    """A user of the pod's allocation: keys belong to a stored user."""
    await pod.controller.inventory.create_user(SYSTEM, "alice", [ALLOCATION])
    return Caller(user_id="alice", allocation_ids=frozenset({ALLOCATION}))


async def test_a_partition_takes_keys_up_to_its_limit(tmp_path: Path, template: Path) -> None:
    pod = await start_pod(tmp_path, template, settings=Settings(secure=True))
    try:
        keys = pod.controller.partition_keys
        alice = await _alice(pod)
        await pod.create("p1", 1, caller=alice)
        for n in range(MAX_KEYS_PER_PARTITION):
            await keys.mint(alice, "p1", f"k{n}")
        with pytest.raises(errors.NoCapacity, match="revoke one first"):
            await keys.mint(alice, "p1", "one-more")
        await keys.mint(alice, "p1", "k7")  # the same id again replaces the key: allowed
        await keys.revoke(alice, "k0")
        await keys.mint(alice, "p1", "one-more")
        assert len(await keys.list(alice)) == MAX_KEYS_PER_PARTITION
    finally:
        await pod.gateway.close()
        pod.close()


async def test_concurrent_mints_cannot_pass_the_limit(
    tmp_path: Path, template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("vpod.controller.partition_keys.MAX_KEYS_PER_PARTITION", 4)
    pod = await start_pod(tmp_path, template, settings=Settings(secure=True))
    try:
        keys = pod.controller.partition_keys
        alice = await _alice(pod)
        await pod.create("p1", 1, caller=alice)
        results = await asyncio.gather(
            *(keys.mint(alice, "p1", f"k{n}") for n in range(10)), return_exceptions=True
        )
        refused = [r for r in results if isinstance(r, errors.NoCapacity)]
        assert len(refused) == 6
        assert all(
            isinstance(r, errors.NoCapacity) or not isinstance(r, Exception) for r in results
        )
        assert len(await keys.list(alice)) == 4
    finally:
        await pod.gateway.close()
        pod.close()
