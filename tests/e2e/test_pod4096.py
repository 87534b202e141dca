"""The whole fabric on one machine: `vpod up --pod pod4096` and its 4,096-IPU partition.

It takes about a minute (1,024 emulated machines register, one agent process
hosts them all), hence ``slow``. The time budgets (ready in 60 s, the
partition in 5 s) are measured by ``benchmarks/scale.py`` with idle CPU,
memory and dead-agent detection for every shape, not asserted here: on a
machine shared with other test runs they move by half, and this test is
about the whole fabric working (start_pod still gives up after 90 s).
"""

from __future__ import annotations

import pytest

from vpod.client import AdminClient, UserClient

from .conftest import start_pod

pytestmark = pytest.mark.slow


def test_pod4096_is_ready_in_a_minute_and_takes_its_largest_partition(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pod = start_pod(tmp_path / "data", "--pod", "pod4096", "--no-cloud")
    try:
        assert "Bow-2000 pod4096 (1024 machines, 4096 IPUs)" in pod.ready_line
        admin_config = pod.data_dir / "admin.vipu-cli.hcl"  # absent in --open mode
        with AdminClient.from_config(
            str(admin_config if admin_config.exists() else pod.config)
        ) as admin:
            agents = admin.list_agents()
        assert len(agents) == 1024
        assert {a.cluster_id for a in agents} == {"cluster"}
        with UserClient.from_config(str(pod.config)) as user:
            user.create_partition("whole", 4096, num_gcds=64)
            partition = user.get_partition("whole")
            assert partition.size == 4096
    finally:
        pod.stop()
