"""scrypt never runs on the event loop: each check or new hash takes about 50 ms, and on
the loop it would hold every other request of the controller that long.

Every use-case that hashes or checks a secret is run once in a real controller and
cloud (in this process, SQLite, no agents); ``hashlib.scrypt`` records the thread it ran
on, and the event loop's thread must never be one of them.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vpod.cloud.app import build_cloud
from vpod.cloud.model import errors as cloud_errors
from vpod.cloud.settings import CloudSettings
from vpod.controller import errors
from vpod.controller.agent_grpc import GrpcAgentGateway
from vpod.controller.app import build_controller
from vpod.controller.caller import SYSTEM
from vpod.controller.settings import Settings


def test_no_secret_is_hashed_or_checked_on_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real: Callable[..., bytes] = hashlib.scrypt
    on_loop: list[str] = []
    hashed: list[str] = []
    loop_thread: list[threading.Thread] = []

    def recording(*args: Any, **kwargs: Any) -> bytes:
        hashed.append(threading.current_thread().name)
        if loop_thread and threading.current_thread() is loop_thread[0]:
            on_loop.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(hashlib, "scrypt", recording)
    controller = build_controller(Settings(data_dir=tmp_path, secure=True), GrpcAgentGateway())
    cloud = build_cloud(controller, CloudSettings(data_dir=tmp_path))

    async def scenario() -> None:
        loop_thread.append(threading.current_thread())
        created = await controller.inventory.create_user(SYSTEM, "bob", [])
        await controller.auth.caller("bob", created.access_key, source="test", admin=False)
        with pytest.raises(errors.Unauthenticated):
            await controller.auth.caller("nobody", "x" * 43, source="test", admin=False)
        await controller.tenancy.rotate_key(SYSTEM, "bob")
        issued = await controller.agent_tokens.issue(SYSTEM, "rack 1")
        assert await controller.agent_tokens.token_of(issued.token) == issued.record.id
        _, token = await cloud.projects.create("acme")
        await cloud.projects.issue_token("acme", "second")
        await cloud.projects.authenticate(token.token)
        with pytest.raises(cloud_errors.Unauthenticated):
            await cloud.projects.authenticate("vpod_0123456789abcdef.nothing")

    try:
        asyncio.run(scenario())
    finally:
        controller.close()
    assert len(hashed) >= 9, hashed  # every step above hashed or checked at least once
    assert on_loop == [], f"scrypt ran on the event loop {len(on_loop)} times"
