"""The ``vpod`` cloud commands, run as real processes against a live cloud.

The CLI finds the API and token in a config file (``VPOD_CONFIG``), the
environment, or options; ``--wait`` follows tasks, printing phases on stderr;
``--json`` prints the API's JSON; failures are one line and an exit status.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from vpod.cli.cloud_client import write_config

from .conftest import partition_ids
from .live import LiveCloud

VPOD = str(Path(sys.executable).with_name("vpod"))
TIMEOUT_S = 120


class Cli:
    def __init__(self, live: LiveCloud, config: Path) -> None:
        self.live = live
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("VPOD_")}
        self.env["VPOD_CONFIG"] = str(config)

    def __call__(
        self, *args: str, code: int = 0, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [VPOD, *args],
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
        assert done.returncode == code, f"vpod {' '.join(args)} -> {done.returncode}: {done.stderr}"
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "--json").stdout)


@pytest.fixture(scope="module")
def cli(live: LiveCloud, tmp_path_factory: pytest.TempPathFactory) -> Cli:
    config = tmp_path_factory.mktemp("cli") / "vpod-cli.toml"
    write_config(config, live.url, live.project("clients"), "clients")
    return Cli(live, config)


def _seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def assert_wait_times(stderr: str, task: dict[str, Any]) -> None:
    """--wait printed each phase with the time it took by the controller's timestamps (the
    next phase's start less its own), and the total from creation to the end."""
    printed = re.findall(r"^  ([A-Z_]+) +(\d+\.\d) s$", stderr, re.MULTILINE)
    phases = task["phases"]
    expected = [
        (p["phase"], _seconds(p["at"], after["at"]))
        for p, after in itertools.pairwise(phases)
        if p["phase"] not in ("FINISHED", "ERROR")
    ]
    assert [name for name, _ in printed] == [name for name, _ in expected]
    for (name, shown), (_, seconds) in zip(printed, expected, strict=True):
        assert abs(float(shown) - seconds) <= 0.051, f"{name}: printed {shown}, took {seconds}"
    total = re.search(r": done in (\d+\.\d) s$", stderr, re.MULTILINE)
    assert total is not None, stderr
    assert abs(float(total.group(1)) - _seconds(task["created_at"], phases[-1]["at"])) <= 0.06


def test_the_story_through_the_cli(cli: Cli) -> None:
    """Create with --wait, a volume, partitions over `cluster ssh`, suspend, resume, delete."""
    created = cli("cluster", "create", "cli-vpod", "--flavor", "g2a-ai-fast-v1pod-8", "--wait")
    for phase in (
        "NETWORK",
        "VIPU_CONTROLLER",
        "IPU_SERVERS",
        "POPLAR_SERVERS",
        "POST_DEPLOY_SETUP",
    ):
        assert phase in created.stderr
    assert "State:     FINISHED" in created.stdout

    cli("volume", "create", "cli-data", "--size", "10", "--wait")
    cli("volume", "attach", "cli-data", "cli-vpod", "--wait")
    assert "in-use" in cli("volume", "show", "cli-data").stdout

    made = cli(
        "cluster", "ssh", "cli-vpod", "--", "vipu", "create", "partition", "p1", "--size", "4"
    )
    assert "create partition (p1): success" in made.stdout
    cli(
        "cluster",
        "ssh",
        "cli-vpod",
        "--",
        "vipu create partition p2 --size 4 && vipu remove partition p2",
    )
    listed = cli("cluster", "ssh", "cli-vpod", "--", "vipu", "list", "partitions")
    assert partition_ids(listed.stdout) == ["p1"]
    mounted = cli("cluster", "ssh", "cli-vpod", "--", "ls $HOME/../mnt && echo $VIPU_CLI_CONFIG")
    assert mounted.stdout.split()[0] == "cli-data"
    assert mounted.stdout.split()[1].endswith("etc/vipu/vipu-cli.hcl")

    cli("cluster", "suspend", "cli-vpod", "--wait")
    shown = cli.json("cluster", "show", "cli-vpod")
    assert (shown["status"], shown["saved_partitions"]) == ("SUSPENDED", ["p1"])
    refused = cli("cluster", "ssh", "cli-vpod", "--", "true", code=1)
    assert "is SUSPENDED: resume it first" in refused.stderr

    cli("cluster", "resume", "cli-vpod", "--wait")
    listed = cli("cluster", "ssh", "cli-vpod", "--", "vipu", "list", "partitions")
    assert partition_ids(listed.stdout) == ["p1"]

    tasks = cli.json("task", "list")
    assert [t["operation"] for t in tasks[:3]] == ["resume", "suspend", "volume_attach"]
    create = next(t for t in tasks if t["operation"] == "create")
    assert_wait_times(created.stderr, cli.json("task", "show", create["id"]))
    invoice = cli.json("invoice", "--from", "2026-01-01", "--to", "2026-02-01")
    assert invoice["project_id"] == "clients"
    daily = cli.json("invoice", "--from", "2026-01-01", "--to", "2026-02-01", "--per-day")
    assert len(daily["days"]) == 31
    assert daily["days"][1]["start"].startswith("2026-01-02T00:00")
    assert Decimal(daily["total"]) == Decimal(invoice["total"])
    assert Decimal(daily["total"]) == sum(Decimal(d["total"]) for d in daily["days"])
    shown = cli("invoice", "--from", "2026-01-30", "--to", "2026-02-01", "--per-day").stdout
    assert "2026-01-31 00:00:00" in shown
    assert "Total:" in shown
    table = cli("cluster", "list").stdout
    assert [c.strip() for c in table.splitlines()[0].split("|")][:4] == [
        "Cluster",
        "Id",
        "Flavor",
        "Status",
    ]
    assert "cli-vpod" in table

    cli("cluster", "delete", "cli-vpod", "--with-volumes", "--wait")
    assert cli.json("cluster", "list") == []
    assert cli.json("volume", "list") == []


def test_failures_are_one_line_with_an_exit_status(cli: Cli) -> None:
    """Bad input exits 2; missing capacity, unknown clusters and failed tasks exit 1."""
    bad = cli("cluster", "create", "oops", "--flavor", "g2a-ai-fast-v1pod-61", code=2)
    assert bad.stderr.startswith("error: there is no flavor 'g2a-ai-fast-v1pod-61'")
    full = cli("cluster", "create", "huge", "--flavor", "g2a-ai-fast-v1pod-64", code=1)
    assert "no capacity for g2a-ai-fast-v1pod-64" in full.stderr
    missing = cli("cluster", "show", "nowhere", code=1)
    assert "cluster nowhere does not exist in project clients" in missing.stderr
    usage = cli("volume", "create", "vol-x", code=2)
    assert "Missing option '--size'" in usage.stderr
    long = cli("invoice", "--from", "2024-01-01", "--to", "2026-01-01", "--per-day", code=2)
    assert "at most 366 days" in long.stderr
    assert len(long.stderr.strip().splitlines()) == 1


def test_settings_come_from_options_then_environment_then_config(cli: Cli, tmp_path: Path) -> None:
    """--token beats VPOD_TOKEN, which beats the file; without any, the CLI says what to set."""
    wrong = cli("flavors", code=1, env={"VPOD_TOKEN": "vpod_nope.nope"})
    assert "unknown or revoked token" in wrong.stderr
    good = cli.live._tokens["clients"]
    assert cli("flavors", "--token", good, env={"VPOD_TOKEN": "vpod_nope.nope"}).stdout.startswith(
        "Flavor"
    )
    nothing = cli(
        "cluster", "list", code=1, env={"VPOD_CONFIG": "", "VPOD_DATA_DIR": str(tmp_path)}
    )
    assert "give --url and --token, set VPOD_URL and VPOD_TOKEN" in nothing.stderr
    down = cli("cluster", "list", "--url", "http://127.0.0.1:9", code=1)
    assert "cannot reach the cloud API at http://127.0.0.1:9" in down.stderr
