"""What finding a partition needs from a controller (:class:`PartitionSource`), and the
signals it gives while the partition is not ready yet."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from .config import IpuofDevice

Gcds = Sequence[tuple[Sequence[IpuofDevice], Mapping[str, str]]]


class NotActiveYet(Exception):
    """The partition exists but is not ACTIVE; ``state`` says what it is."""

    def __init__(self, state: str) -> None:
        super().__init__(state)
        self.state = state


class StillUnreachable(NotActiveYet):
    """The controller did not answer; asked again until the timeout, then this is the error."""


class PartitionSource(Protocol):
    """A controller's user API, as far as finding a partition needs it."""

    @property
    def where(self) -> str:
        """``HOST:PORT`` of the controller, for messages."""
        ...

    def ipuof_gcds(self, partition_id: str, gcd_id: int | None) -> Gcds:
        """Each GCD's devices and attributes; :class:`NotActiveYet` while not ACTIVE, an
        :class:`~.errors.IpuofError` for anything waiting cannot fix."""
        ...

    def close(self) -> None: ...


SourceFactory = Callable[[str, int, Mapping[str, str]], PartitionSource]
