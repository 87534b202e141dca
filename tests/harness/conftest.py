"""Fixtures of the in-process harness: a migrated template store per session, a pod per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .pod import Pod, migrated_template, start_pod


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated SQLite database, copied for every pod of the session."""
    return migrated_template(tmp_path_factory.mktemp("harness-template"))


@pytest.fixture
async def pod(tmp_path: Path, template: Path) -> AsyncIterator[Pod]:
    """Four Bow-2000s (``ag1``..``ag4``, 16 IPUs) in cluster ``pod``, all in allocation
    ``alloc``; the controller's clock is fake and its agents scripted."""
    built = await start_pod(tmp_path, template)
    try:
        yield built
    finally:
        await built.gateway.close()
        built.close()


@pytest.fixture
async def split_pod(tmp_path: Path, template: Path) -> AsyncIterator[Pod]:
    """The same four machines in two allocations: ``left`` (ag1, ag2), ``right`` (ag3, ag4)."""
    built = await start_pod(
        tmp_path, template, allocations={"left": ["ag1", "ag2"], "right": ["ag3", "ag4"]}
    )
    try:
        yield built
    finally:
        await built.gateway.close()
        built.close()
