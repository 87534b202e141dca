"""The cloud's task runner stops even when a wake-up and the stop arrive together.

Python 3.11's ``asyncio.wait_for`` returns normally when the awaited event is set in the
same turn the waiting task is cancelled, which swallowed stop()'s cancellation: the loop
went on polling and stop() waited for it forever (a test cloud's stop ran out of time).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from vpod.cloud.app import build_cloud
from vpod.cloud.settings import CloudSettings
from vpod.controller.agent_grpc import GrpcAgentGateway
from vpod.controller.app import build_controller
from vpod.controller.settings import Settings

STOP_GUARD_S = 30.0
"""Only a guard against hanging the suite: a working stop takes milliseconds."""


def test_a_wake_up_as_the_runner_stops_does_not_keep_it_running(tmp_path: Path) -> None:
    async def scenario() -> bool:
        controller = build_controller(Settings(data_dir=tmp_path), GrpcAgentGateway())
        cloud = build_cloud(controller, CloudSettings(data_dir=tmp_path))
        waiting = asyncio.Event()

        async def round_done() -> None:
            waiting.set()  # the loop goes on to wait for a wake-up without yielding

        cloud.runner.on_health_check(round_done)
        await cloud.runner.start()
        await waiting.wait()
        cloud.runner.submit("task-recorded-just-now")
        stopping = asyncio.create_task(cloud.runner.stop())
        try:
            await asyncio.wait({stopping}, timeout=STOP_GUARD_S)
            polling = [t for t in asyncio.all_tasks() if t.get_name() == "cloud-tasks"]
            return stopping.done() and all(t.done() for t in polling)
        finally:
            await controller.ctx.gateway.close()
            controller.close()

    assert asyncio.run(scenario()), "the runner's loop outlived stop()"
