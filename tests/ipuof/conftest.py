"""A real `vpod up` (controller + 16 emulated Bow-2000) for the application tools, and helpers
that run the console scripts as a user would: a clean environment, a home of their own."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Pod, start_pod
from vpod.client import AdminClient, NotFound, UserClient

BIN = Path(sys.executable).parent
STRIPPED = ("IPUOF_", "POPDIST_", "POPLAR_", "VIPU_CLI_")


@dataclass
class Apps:
    """The pod, its clients, and a way to run the tools against it."""

    pod: Pod
    home: Path
    user: UserClient
    admin: AdminClient

    def env(self, partition: str | None = None, **extra: str) -> dict[str, str]:
        """A user's environment: vipu-cli.hcl, a home without IPUoF files, and the
        IPUOF_VIPU_API_* of ``partition`` when given."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(STRIPPED)}
        env["VIPU_CLI_CONFIG"] = str(self.pod.config)
        env["HOME"] = str(self.home)
        if partition is not None:
            env.update(
                IPUOF_VIPU_API_HOST="127.0.0.1",
                IPUOF_VIPU_API_PORT=str(self.pod.user_port),
                IPUOF_VIPU_API_PARTITION_ID=partition,
            )
        env.update(extra)
        return env

    def run(
        self, tool: str, *args: str, env: dict[str, str], timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / tool), *args], env=env, capture_output=True, text=True, timeout=timeout
        )

    def start(self, tool: str, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [str(BIN / tool), *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def metrics(self) -> str:
        url = f"http://127.0.0.1:{self.pod.http_port}/metrics"
        with urllib.request.urlopen(url, timeout=30) as answer:
            text: str = answer.read().decode()
        return text

    def telemetry(self, partition: str) -> list[dict[str, Any]]:
        url = f"http://127.0.0.1:{self.pod.http_port}/api/v1/admin/telemetry?partition={partition}"
        with urllib.request.urlopen(url, timeout=30) as answer:
            ipus: list[dict[str, Any]] = json.loads(answer.read())["ipus"]
        return ipus

    def fresh_partition(self, pid: str, size: int, **options: Any) -> str:
        self.remove(pid)
        self.user.create_partition(pid, size, **options)
        return pid

    def remove(self, pid: str) -> None:
        with contextlib.suppress(NotFound):
            self.user.remove_partition(pid, force=True)

    def partition_ids(self) -> set[str]:
        return {p.id for p in self.user.list_partitions()}


@pytest.fixture(scope="package")
def apps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Apps]:
    # Open mode: the tests also act as the pod's administrator (faults, the telemetry route)
    # with the same plain config, as they were written for.
    pod = start_pod(tmp_path_factory.mktemp("apps"), "--open", "--no-cloud")
    home = tmp_path_factory.mktemp("home")
    user = UserClient.from_config(str(pod.config), env={})
    admin = AdminClient.from_config(str(pod.config), env={})
    try:
        yield Apps(pod=pod, home=home, user=user, admin=admin)
    finally:
        user.close()
        admin.close()
        pod.stop()


SERIES = re.compile(r"^vpod_ipu_utilization_ratio\{(?P<labels>[^}]*)\} (?P<value>\S+)$", re.M)


def utilisation_series(text: str) -> dict[tuple[str, str], float]:
    """(machine, ipu) -> utilisation, from the /metrics text."""
    found: dict[tuple[str, str], float] = {}
    for match in SERIES.finditer(text):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match["labels"]))
        found[(labels["machine"], labels["ipu"])] = float(match["value"])
    return found


def eventually(check: Callable[[], bool], what: str, within_s: float) -> float:
    """Poll ``check`` until true; returns the seconds it took."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > within_s:
            raise AssertionError(f"{what}: not true within {within_s:g} s")
        time.sleep(0.1)
    return time.monotonic() - start
