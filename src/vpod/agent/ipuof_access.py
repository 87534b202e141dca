"""Which hosts may use each configured partition over IPUoF.

The controller declares, with every configure (and ``SetPartitionHosts``
when an allocation's hosts change), the hosts whose applications may attach
to a partition's IPUs. The IPUoF endpoints ask :meth:`IpuofAccess.allows`
with the peer address of each connection; a partition with no hosts, or none
recorded, admits nobody.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from vpod.domain.errors import InvalidSpec
from vpod.domain.host_networks import Network, host_allowed, parse_hosts

from .errors import InvalidRequest


class IpuofAccess:
    """Partition id -> the networks allowed to attach to its IPUs on this machine."""

    def __init__(self) -> None:
        self._hosts: dict[str, tuple[Network, ...]] = {}

    @staticmethod
    def parse(hosts: Iterable[str]) -> tuple[Network, ...]:
        """The networks, or InvalidRequest naming the entry that is not an address or CIDR."""
        try:
            return _parsed(tuple(hosts))
        except InvalidSpec as exc:
            raise InvalidRequest(str(exc)) from None

    def set(self, partition_id: str, networks: tuple[Network, ...]) -> None:
        self._hosts[partition_id] = networks

    def forget(self, partition_id: str) -> None:
        self._hosts.pop(partition_id, None)

    def keep_only(self, partition_ids: Iterable[str]) -> None:
        """Drop the entries of partitions no longer configured."""
        keep = set(partition_ids)
        for partition_id in [p for p in self._hosts if p not in keep]:
            del self._hosts[partition_id]

    def hosts(self, partition_id: str) -> tuple[str, ...]:
        return tuple(str(n) for n in self._hosts.get(partition_id, ()))

    def allows(self, partition_id: str, peer: str) -> bool:
        """Whether an application at ``peer`` (an IP address) may use ``partition_id``."""
        return bool(partition_id) and host_allowed(peer, self._hosts.get(partition_id, ()))


@functools.lru_cache(maxsize=256)
def _parsed(hosts: tuple[str, ...]) -> tuple[Network, ...]:
    """Each configure names its partition's hosts, and the machines of one partition (and
    the partitions of one allocation) name the same few: parsed once each."""
    return parse_hosts(hosts)
