"""The operator's direct SSH ports, with the real OpenSSH client.

A live cloud whose operator set ``ssh_direct_ports`` to a one-port range on
loopback: alice's cluster gets that port (`vpod cluster show`, the REST
answers), `vpod cluster ssh-config --direct` writes `Port` where the tunnel
writes `ProxyCommand`, and plain `ssh` with `StrictHostKeyChecking yes`
logs in at it (the host key it checked is the listed one); a wrong key and
another project's key are refused there; `scp` works both ways; the port
is kept by suspend/resume and a controller restart; with the range full,
another project's cluster is refused at creation with what to do; deleting
alice's cluster closes the port and frees it, and the next cluster gets it.
Needs root, bubblewrap and openssh-server (skipped with the reason
otherwise; `scripts/ensure-system-deps` installs them).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from tests.ports import free_port

from .conftest import error, ok, run_task
from .live import LiveCloud, start_cloud, stop_cloud
from .openssh_tenants import (
    FLAVOR,
    NEEDS_OPENSSH,
    Tenant,
    accepts,
    ssh,
    ssh_with,
    tenant,
    wait_port,
)

pytestmark = [pytest.mark.system, *NEEDS_OPENSSH]
CLOSE_DEADLINE_S = 60.0
"""A safety net for the listener to close after a delete (it looks every task_poll_s)."""


@pytest.fixture(scope="module")
def port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, port: int) -> Iterator[LiveCloud]:
    """A live cloud giving servers direct SSH ports of the one-port range PORT-PORT."""
    cloud = start_cloud(
        tmp_path_factory.mktemp("cloud"), settings={"ssh_direct_ports": f"{port}-{port}"}
    )
    try:
        yield cloud
    finally:
        stop_cloud(cloud)


@pytest.fixture(scope="module")
def alice(live: LiveCloud, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenant]:
    """Project direct-alice: keypair `laptop`, cluster `dsc` holding it, and the direct
    OpenSSH configuration at HOME/ssh_config."""
    alice = tenant(live, "direct-alice", tmp_path_factory.mktemp("alice"))
    assert alice.vpod("keypair", "create", "laptop").returncode == 0
    task = run_task(
        live,
        alice.http,
        "POST",
        "/clusters",
        json={"name": "dsc", "flavor": FLAVOR, "keypairs": ["laptop"]},
    )
    assert task["state"] == "FINISHED", task
    config = alice.vpod("cluster", "ssh-config", "--direct", "dsc")
    assert config.returncode == 0, config.stderr
    (alice.home / "ssh_config").write_text(config.stdout)
    yield alice
    if alice.http.get("/clusters/dsc").status_code == 200:
        run_task(live, alice.http, "DELETE", "/clusters/dsc")
    alice.http.close()


@pytest.fixture(scope="module")
def bob(live: LiveCloud, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenant]:
    bob = tenant(live, "direct-bob", tmp_path_factory.mktemp("bob"))
    assert bob.vpod("keypair", "create", "bobkey").returncode == 0
    yield bob
    bob.http.close()


def test_the_cluster_shows_its_port_and_ssh_config_direct_writes_port_not_a_proxy(
    alice: Tenant, port: int
) -> None:
    [server] = ok(alice.http.get("/clusters/dsc"))["servers"]
    assert server["ssh_port"] == port
    [info] = ok(alice.http.get("/clusters/dsc/ssh"))["servers"]
    assert (info["direct_host"], info["direct_port"]) == ("127.0.0.1", port)
    shown = alice.vpod("cluster", "show", "dsc").stdout
    assert "SSH port" in shown
    assert str(port) in shown
    config = (alice.home / "ssh_config").read_text()
    assert f"Port {port}" in config
    assert "HostName 127.0.0.1" in config
    assert "ProxyCommand" not in config
    assert "StrictHostKeyChecking yes" in config
    wait_port(port)


def test_strict_host_key_checking_passes_at_the_direct_port(alice: Tenant, port: int) -> None:
    shown = ok(alice.http.get("/clusters/dsc"))
    [server] = shown["servers"]
    fingerprints = [k["fingerprint"] for k in server["ssh_host_keys"]]
    assert fingerprints
    for host in ("dsc", server["name"]):
        done = ssh(alice, host, "id -un; hostname; echo $VPOD_CLUSTER")
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["tenant", server["name"], "dsc"]
    checked = ssh(alice, "-v", "dsc", "true")
    assert f"Connecting to 127.0.0.1 [127.0.0.1] port {port}" in checked.stderr
    assert any(f in checked.stderr for f in fingerprints)  # the key ssh checked is the listed one
    opened = alice.vpod("cluster", "ssh", "--direct", "dsc", "--", "echo via-vpod; exit 4")
    assert opened.returncode == 4, opened.stderr
    assert opened.stdout == "via-vpod\n"


def test_a_wrong_key_and_another_projects_key_are_refused_at_the_direct_port(
    alice: Tenant, bob: Tenant
) -> None:
    made = alice.run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", "stranger")
    assert made.returncode == 0
    wrong = ssh_with(alice, alice.home / "stranger", "dsc", "true")
    assert wrong.returncode == 255
    assert "Permission denied" in wrong.stderr
    other = ssh_with(alice, bob.home / "v" / "keys" / "bobkey", "dsc", "true")
    assert other.returncode == 255
    assert "Permission denied" in other.stderr
    assert ok(bob.http.get("/clusters")) == []  # and bob sees nothing of alice's


def test_scp_both_ways_at_the_direct_port(alice: Tenant) -> None:
    payload = os.urandom(2 * 1024 * 1024)
    (alice.home / "up.bin").write_bytes(payload)
    cfg = str(alice.home / "ssh_config")
    pushed = alice.run("scp", "-F", cfg, "up.bin", "dsc:/home/up.bin")
    assert pushed.returncode == 0, pushed.stderr
    pulled = alice.run("scp", "-F", cfg, "dsc:/home/up.bin", "down.bin")
    assert pulled.returncode == 0, pulled.stderr
    assert (alice.home / "down.bin").read_bytes() == payload


def test_a_full_range_refuses_another_cluster_at_creation_saying_what_to_do(
    live: LiveCloud, alice: Tenant, bob: Tenant, port: int
) -> None:
    refused = bob.http.post(
        "/clusters", json={"name": "bobc", "flavor": FLAVOR, "keypairs": ["bobkey"]}
    )
    message = error(refused, 409, "RESOURCE_EXHAUSTED")
    assert f"{port}-{port} has 0 free" in message
    assert "ssh_direct_ports" in message
    error(bob.http.get("/clusters/bobc"), 404, "NOT_FOUND")  # nothing was recorded
    by_cli = bob.vpod("cluster", "create", "bobc", "--flavor", FLAVOR)
    assert by_cli.returncode != 0
    assert "direct SSH port" in by_cli.stderr
    assert "Traceback" not in by_cli.stderr


def test_suspend_resume_and_a_restart_keep_the_port(
    live: LiveCloud, alice: Tenant, port: int
) -> None:
    assert run_task(live, alice.http, "POST", "/clusters/dsc/suspend")["state"] == "FINISHED"
    assert ok(alice.http.get("/clusters/dsc"))["servers"][0]["ssh_port"] == port
    asleep = ssh(alice, "-o", "BatchMode=yes", "-o", "ConnectTimeout=30", "dsc", "true")
    assert asleep.returncode == 255  # no sshd while suspended: the connection is closed
    assert run_task(live, alice.http, "POST", "/clusters/dsc/resume")["state"] == "FINISHED"
    live.restart()
    _reconnect(live, alice, "direct-alice")  # the API listens on a new port (port 0)
    assert ok(alice.http.get("/clusters/dsc"))["servers"][0]["ssh_port"] == port
    wait_port(port)
    done = ssh(alice, "dsc", "echo back")  # the same port, the same pinned host key
    assert done.returncode == 0, done.stderr
    assert done.stdout == "back\n"


def _reconnect(live: LiveCloud, who: Tenant, project: str) -> None:
    who.http.close()
    who.http = live.client(live.project(project))
    who.env["VPOD_URL"] = live.url


def test_deleting_the_cluster_closes_and_frees_its_port_for_the_next(
    live: LiveCloud, alice: Tenant, bob: Tenant, port: int
) -> None:
    _reconnect(live, bob, "direct-bob")  # after the restart above
    assert run_task(live, alice.http, "DELETE", "/clusters/dsc")["state"] == "FINISHED"
    end = time.monotonic() + CLOSE_DEADLINE_S
    while accepts(port) and time.monotonic() < end:
        time.sleep(0.2)
    assert not accepts(port)  # nothing listens for a deleted server
    made = run_task(
        live,
        bob.http,
        "POST",
        "/clusters",
        json={"name": "bobc", "flavor": FLAVOR, "keypairs": ["bobkey"]},
    )
    assert made["state"] == "FINISHED", made
    assert ok(bob.http.get("/clusters/bobc"))["servers"][0]["ssh_port"] == port
    config = bob.vpod("cluster", "ssh-config", "--direct", "bobc")
    assert config.returncode == 0, config.stderr
    (bob.home / "ssh_config").write_text(config.stdout)
    wait_port(port)
    done = ssh(bob, "bobc", "hostname")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ok(bob.http.get("/clusters/bobc"))["servers"][0]["name"]
    stale = ssh_with(alice, alice.home / "v" / "keys" / "laptop", "dsc", "true")
    assert stale.returncode == 255  # alice's key (and pinned host key) do not open bob's server
    assert run_task(live, bob.http, "DELETE", "/clusters/bobc")["state"] == "FINISHED"
