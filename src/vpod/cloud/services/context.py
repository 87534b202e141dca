"""What every cloud use-case shares: settings, clock, ids, records, drivers, the V-IPU port.

Built once by :func:`vpod.cloud.app.build_cloud`; no globals. The records
(:class:`~.records.CloudRecords`) are the one door to the store: typed
calls, cloud model values, every store error as a cloud error; the V-IPU
controller is reached only through :class:`~vpod.cloud.vipu.VipuPort`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from vpod.controller.clock import Clock

from ..drivers import ComputeDriver, VolumeDriver
from ..ids import IdGenerator
from ..metering import MeteringSink, NoSink
from ..model.metering import MeterEntry
from ..sealing import Sealer
from ..settings import CloudSettings
from ..vipu import VipuPort
from .records import CloudRecords


class TaskInbox:
    """The meeting point of the use-cases that record tasks and the runner that runs them.

    Built with the context, so neither side is wired into the other after construction.
    """

    def __init__(self) -> None:
        self.wake = asyncio.Event()
        self._finished: dict[str, asyncio.Event] = {}

    def submit(self, task_id: str) -> None:
        self.finished(task_id)
        self.wake.set()

    def finished(self, task_id: str) -> asyncio.Event:
        """The event set when ``task_id`` ends."""
        return self._finished.setdefault(task_id, asyncio.Event())


@dataclass
class CloudContext:
    settings: CloudSettings
    records: CloudRecords
    """The one door to the cloud's records in the store: typed calls, model values."""
    clock: Clock
    ids: IdGenerator
    compute: ComputeDriver
    volumes: VolumeDriver
    vipu: VipuPort
    sealer: Sealer
    """Seals and unseals dataset storage credentials (keys beside the database)."""
    sink: MeteringSink = field(default_factory=NoSink)
    inbox: TaskInbox = field(default_factory=TaskInbox)
    """Where use-cases post new tasks and the runner waits for them."""
    endpoint_refresh: asyncio.Lock = field(default_factory=asyncio.Lock)
    """One endpoint refresh at a time: two would each issue a V-IPU key and could leave
    the servers holding the one revoked by the other."""

    def submit(self, task_id: str) -> None:
        """A task was recorded: have the runner look for it now rather than at its next poll."""
        self.inbox.submit(task_id)

    def published(self, entries: Sequence[MeterEntry]) -> None:
        """Copy committed metering entries to the sink."""
        self.sink.publish(entries)
