"""Agents failing under a live `vpod up`: nothing is left behind, the cause is named."""

from __future__ import annotations

import json
import time

from .conftest import Pod


def _partitions(pod: Pod) -> list[str]:
    listed = json.loads(pod.run("vipu", "list", "partitions", "--json").stdout)
    return [p["id"] for p in listed.get("partitions", [])]


def _retry_create(pod: Pod, *args: str, within_s: float = 20) -> None:
    deadline = time.monotonic() + within_s
    while True:
        done = pod.run("vipu", "create", "partition", *args, check=False)
        if done.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise AssertionError(done.stderr)
        time.sleep(0.5)


def test_agent_hanging_mid_create_leaves_nothing_behind(pod64: Pod) -> None:
    """A hung agent makes create fail with UNAVAILABLE naming it; its IPUs come back."""
    pod64.run("vipu-admin", "inject", "fault", "--agent", "ag7", "--kind", "hang")
    try:
        done = pod64.run("vipu", "create", "partition", "whole", "--size", "64", check=False)
        assert done.returncode != 0
        assert "ag7" in done.stderr
        assert "released" in done.stderr
        assert "whole" not in _partitions(pod64)
    finally:
        pod64.run("vipu-admin", "clear", "fault", "--agent", "ag7", "--all")
    # Once the agent answers heartbeats again, all 64 IPUs are free for one partition.
    _retry_create(pod64, "whole", "--size", "64")
    pod64.run("vipu", "remove", "partition", "whole")


def test_slow_agent_within_the_deadline_still_succeeds(pod64: Pod) -> None:
    """An agent that answers late, but before the deadline, does not fail the create."""
    pod64.run(
        "vipu-admin", "inject", "fault", "--agent", "ag1", "--kind", "slow", "--delay-ms", "300"
    )
    try:
        _retry_create(pod64, "slowpoke", "--size", "64")
        assert "slowpoke" in _partitions(pod64)
        pod64.run("vipu", "remove", "partition", "slowpoke")
    finally:
        pod64.run("vipu-admin", "clear", "fault", "--agent", "ag1", "--all")


def test_remove_force_ignores_a_dead_agent(pod64: Pod) -> None:
    """remove --force succeeds while an agent of the partition hangs; plain remove says why."""
    _retry_create(pod64, "stuck", "--size", "64")
    pod64.run("vipu-admin", "inject", "fault", "--agent", "ag3", "--kind", "hang")
    try:
        plain = pod64.run("vipu", "remove", "partition", "stuck", check=False)
        assert plain.returncode != 0
        assert "ag3" in plain.stderr
        pod64.run("vipu", "remove", "partition", "stuck", "--force")
        assert "stuck" not in _partitions(pod64)
    finally:
        pod64.run("vipu-admin", "clear", "fault", "--agent", "ag3", "--all")
