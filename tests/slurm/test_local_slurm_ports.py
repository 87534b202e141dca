"""A local Slurm whose chosen port another listener takes first still starts.

Ports are chosen before slurm.conf is written and bound only when the daemons
start; anything on the host may listen there meanwhile (CI saw slurmd exit with
"Address already in use"). The start chooses again instead of failing.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from vpod.integrations.slurm import local_cluster
from vpod.integrations.slurm.local_cluster import LocalSlurm, missing_requirements
from vpod.integrations.slurm.settings import SlurmSettings

pytestmark = [pytest.mark.e2e]


@pytest.fixture(name="held")
def held_fixture() -> Iterator[socket.socket]:
    listener = socket.create_server(("127.0.0.1", local_cluster.free_port()))
    yield listener
    listener.close()


def test_free_ports_are_below_the_ephemeral_range() -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = {local_cluster.free_port() for _ in range(20)}
    assert all(1024 <= port < low for port in ports), ports
    assert len(ports) > 1  # random, so parallel runs on one host rarely meet


def test_a_port_taken_before_slurmd_binds_is_chosen_again(
    tmp_path: Path, held: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    reason = missing_requirements()
    if reason:
        pytest.skip(f"cannot run Slurm here: {reason}")
    taken = held.getsockname()[1]
    choices = iter([local_cluster.free_port(), taken])  # slurmctld's, then slurmd's
    real = local_cluster.free_port
    monkeypatch.setattr(local_cluster, "free_port", lambda: next(choices, None) or real())
    cluster = LocalSlurm(
        tmp_path / "slurm",
        SlurmSettings(vipu_config=str(tmp_path / "absent.hcl")),
        ipus=4,
        with_bridge=False,
        with_integration=False,
    )
    try:
        cluster.start()
        assert cluster.node_idle()
        assert cluster.slurmd_port != taken
        assert "Address already in use" in (cluster.logs / "slurmd.out").read_text()
    finally:
        cluster.stop()
    assert not cluster.procs
