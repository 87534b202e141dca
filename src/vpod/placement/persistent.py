"""A copy-on-write map from ids to values whose copies cost little at any size.

Snapshots hold thousands of partitions at 65,536 IPUs. Copying one flat dict
per change would cost time proportional to the pod; instead the entries live
in a fixed number of shards chosen by a stable checksum of the key (CRC-32, not
Python's salted ``hash``), and a change copies the tuple of shards plus the
one shard it touches. Iteration is always in key order, so nothing downstream
depends on insertion or hash order.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

V = TypeVar("V")

_SHARDS = 64


def _shard_of(key: str) -> int:
    return zlib.crc32(key.encode()) % _SHARDS


class ShardedMap(Generic[V]):
    """An immutable ``str -> V`` map; ``set`` and ``remove`` return new maps sharing the rest."""

    __slots__ = ("_shards", "_size")

    def __init__(self, shards: tuple[dict[str, V], ...] | None = None, size: int = 0) -> None:
        self._shards: tuple[dict[str, V], ...] = shards or tuple({} for _ in range(_SHARDS))
        self._size = size

    @classmethod
    def from_items(cls, items: Iterable[tuple[str, V]]) -> ShardedMap[V]:
        shards: tuple[dict[str, V], ...] = tuple({} for _ in range(_SHARDS))
        for key, value in items:
            shards[_shard_of(key)][key] = value
        return cls(shards, sum(len(shard) for shard in shards))

    def get(self, key: str) -> V | None:
        return self._shards[_shard_of(key)].get(key)

    def __getitem__(self, key: str) -> V:
        return self._shards[_shard_of(key)][key]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._shards[_shard_of(key)]

    def __len__(self) -> int:
        return self._size

    def set(self, key: str, value: V) -> ShardedMap[V]:
        """A map with ``key`` bound to ``value``."""
        index = _shard_of(key)
        shard = dict(self._shards[index])
        grew = key not in shard
        shard[key] = value
        return self._replace(index, shard, self._size + grew)

    def remove(self, key: str) -> ShardedMap[V]:
        """A map without ``key``; raises ``KeyError`` when it is absent."""
        index = _shard_of(key)
        shard = dict(self._shards[index])
        del shard[key]
        return self._replace(index, shard, self._size - 1)

    def _replace(self, index: int, shard: dict[str, V], size: int) -> ShardedMap[V]:
        shards = (*self._shards[:index], shard, *self._shards[index + 1 :])
        return ShardedMap(shards, size)

    def keys(self) -> list[str]:
        """All keys, sorted."""
        return sorted(key for shard in self._shards for key in shard)

    def items(self) -> Iterator[tuple[str, V]]:
        """All entries in key order."""
        for key in self.keys():
            yield key, self[key]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ShardedMap):
            return NotImplemented
        return self._size == other._size and self._shards == other._shards

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ShardedMap({dict(self.items())!r})"
