"""Fixtures of the cloud tests: a live cloud per module, and helpers to drive it.

``live`` is a secure controller serving the cloud over four emulated Bow-2000
machines (one 16-IPU V-IPU cluster, ``pod``), shared by the tests of a
module; tests use their own project ids so they do not see each other.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from vpod.cloud.model.metering import MeterEntry

from .live import LiveCloud, start_cloud, stop_cloud

SHELL_TIMEOUT_S = 120
VPOD = str(Path(sys.executable).with_name("vpod"))


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCloud]:
    cloud = start_cloud(tmp_path_factory.mktemp("cloud"))
    try:
        yield cloud
    finally:
        stop_cloud(cloud)


def ok(reply: httpx.Response, status: int = 200) -> Any:
    """The JSON of a reply that must have ``status``."""
    assert reply.status_code == status, f"{reply.status_code}: {reply.text}"
    return reply.json() if reply.content else None


def error(reply: httpx.Response, status: int, code: str) -> str:
    """The message of an error reply that must have ``status`` and ``code``."""
    assert reply.status_code == status, f"{reply.status_code}: {reply.text}"
    body = reply.json()["error"]
    assert body["code"] == code, body
    return str(body["message"])


def run_task(live: LiveCloud, http: httpx.Client, method: str, path: str, **kwargs: Any) -> Any:
    """Start a task (202) and return its JSON once it has ended."""
    task = ok(http.request(method, path, **kwargs), 202)
    return live.wait(task["id"])


def in_shell(
    http: httpx.Client, cluster: str, command: str, *, server: int = 1
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in the cluster's server, through the real ``vpod cluster ssh`` (the
    controller's relay into the server's sandbox), as the project ``http`` authenticates."""
    base = str(http.base_url).rstrip("/").removesuffix("/api/cloud/v1")
    token = http.headers["Authorization"].removeprefix("Bearer ")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VPOD_")}
    env.update(VPOD_URL=base, VPOD_TOKEN=token)
    return subprocess.run(
        [VPOD, "cluster", "ssh", cluster, "--server", str(server), "--", command],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SHELL_TIMEOUT_S,
        check=False,
    )


def meter_of(live: LiveCloud, resource_id: str) -> list[MeterEntry]:
    """Every metering entry of a cluster or volume, oldest first."""
    return live.run(live.cloud.ctx.records.list_meter(resource_id=resource_id))


def partition_ids(listing: str) -> list[str]:
    """Partition ids from the ``vipu list partitions`` table in ``listing``."""
    lines = listing.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("Partition |"))
    rows = [line.split("|")[0].strip() for line in lines[header + 2 :] if "|" in line]
    return sorted(r for r in rows if r)
