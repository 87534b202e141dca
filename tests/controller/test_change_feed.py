"""The change feed's subscriptions and its wire form, without a server.

A subscriber that falls behind gets one ``resync`` instead of the backlog;
ending a subscription wakes its reader; what the stream writes is what the
client reads back.
"""

from __future__ import annotations

import asyncio

from vpod.client.fabric import read_events
from vpod.controller.change_feed import QUEUE_LIMIT, Change, Subscription
from vpod.controller.transports.rest_console import sse_frame


def test_changes_come_out_in_order() -> None:
    async def scenario() -> list[Change | None]:
        subscription = Subscription()
        for seq in (1, 2, 3):
            subscription.offer(Change(seq, "partition", {"id": f"p{seq}"}))
        first = await subscription.next(1)
        return [first, subscription.pending(), subscription.pending(), subscription.pending()]

    got = asyncio.run(scenario())
    assert [c.seq if c else None for c in got] == [1, 2, 3, None]


def test_a_subscriber_that_falls_behind_gets_one_resync() -> None:
    async def scenario() -> tuple[Change | None, Change | None]:
        subscription = Subscription()
        for seq in range(QUEUE_LIMIT + 5):
            subscription.offer(Change(seq, "partition", {"id": "p"}))
        resync = await subscription.next(1)
        after = await subscription.next(0.01)
        return resync, after

    resync, after = asyncio.run(scenario())
    assert resync is not None
    assert resync.kind == "resync"
    assert after is None  # the backlog was dropped: read the picture again instead


def test_ending_a_subscription_wakes_its_reader() -> None:
    async def scenario() -> tuple[Change | None, bool]:
        subscription = Subscription()
        reader = asyncio.create_task(subscription.next(60))
        await asyncio.sleep(0)
        subscription.end()
        return await asyncio.wait_for(reader, 5), subscription.ended

    change, ended = asyncio.run(scenario())
    assert change is None
    assert ended


def test_quiet_streams_time_out_without_a_change() -> None:
    assert asyncio.run(Subscription().next(0.01)) is None


def test_what_the_stream_writes_the_client_reads() -> None:
    changes = [
        Change(7, "partition", {"change": "created", "id": "p1", "slots": [0, 1]}),
        Change(8, "audit", {"id": 42, "detail": "a: b\nc"}),
    ]
    wire = b"retry: 1000\nevent: hello\ndata: {}\n\n: keepalive\n\n"
    wire += b"".join(sse_frame(c) for c in changes)
    read = list(read_events(wire.decode().split("\n")))
    assert [(c.kind, c.seq) for c in read] == [("hello", 0), ("partition", 7), ("audit", 8)]
    assert read[1].data == changes[0].data
    assert read[2].data == changes[1].data
