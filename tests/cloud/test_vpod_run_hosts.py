"""A two-host `vpod-run` across the two Poplar servers of one tenant vPOD (issue 22).

A live cloud of 16 emulated Bow-2000s runs tenant A's vPOD-64 (two Poplar
servers, real sandboxes, a network namespace each on the vPOD's bridge) and
tenant B's GPU server. A reaches its first server with the real OpenSSH client
through the controller's tunnel (`vpod cluster ssh-config`), forwarding its
ssh-agent (`ssh -A`), and runs there

    vpod-run --host SERVER1,SERVER2 --num-instances 2 ... vpod-workload

so instance 0 starts locally and instance 1 over ssh to the second server on
the tenant network (port 22 of its address, the host key checked against
the `/etc/ssh/ssh_known_hosts` the cloud writes). Each instance attaches its
own IPUs of the partition. B's server has no way to that port.

Needs root, bubblewrap, iproute2, nftables and openssh (skipped with the
reason otherwise; `scripts/ensure-system-deps` installs them).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from vpod.cloud.drivers.sandbox import sandbox_problem
from vpod.cloud.drivers.tenant_network import network_problem

from .conftest import in_shell, ok, run_task
from .live import LiveCloud, start_cloud, stop_cloud

MISSING = [t for t in ("ssh", "ssh-agent", "ssh-add") if shutil.which(t) is None]
pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(
        (sandbox_problem() or network_problem()) is not None,
        reason=f"no sandboxed tenant networks here: {sandbox_problem() or network_problem()}",
    ),
    pytest.mark.skipif(
        not os.access("/usr/sbin/sshd", os.X_OK),
        reason="openssh-server is not installed (scripts/ensure-system-deps)",
    ),
    pytest.mark.skipif(bool(MISSING), reason=f"missing OpenSSH client tools: {MISSING}"),
]
VPOD = str(Path(sys.executable).with_name("vpod"))
TIMEOUT_S = 240
SHOW = (
    "import json, os, socket; print(json.dumps({'host': socket.gethostname(),"
    " 'env': {k: v for k, v in os.environ.items() if k.startswith(('POPDIST_', 'IPUOF_'))}}),"
    " flush=True)"
)
GPU_HOST = {"id": "h100-r1", "role": "baremetal", "model": "h100-80", "fabric": "ib-r"}
PROBE = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], 22), timeout=3).close(); print("OPEN")
except OSError as exc:
    print("CLOSED", exc.__class__.__name__)
"""


@dataclass
class Tenant:
    http: httpx.Client
    env: dict[str, str]
    home: Path
    servers: list[dict[str, str]]

    def ssh(self, *args: str, timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ssh", "-F", str(self.home / "ssh_config"), *args],
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCloud]:
    cloud = start_cloud(tmp_path_factory.mktemp("multihost"), machines=16)
    try:
        with cloud.admin() as admin:  # a GPU host for the other tenant's cluster
            ok(admin.post("/admin/hosts", json=GPU_HOST), 201)
        yield cloud
    finally:
        stop_cloud(cloud)


@pytest.fixture(scope="module")
def alice(live: LiveCloud, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenant]:
    """Project run-a: keypair `laptop` in its ssh-agent, vPOD-64 `train` with two Poplar
    servers, its OpenSSH configuration at HOME/ssh_config."""
    home = tmp_path_factory.mktemp("alice")
    token = live.project("run-a")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VPOD_", "SSH_"))}
    env.update(VPOD_URL=live.url, VPOD_TOKEN=token, HOME=str(home), VPOD_SSH_DIR=str(home / "v"))
    agent = subprocess.Popen(
        ["ssh-agent", "-D", "-a", str(home / "agent.sock")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    env["SSH_AUTH_SOCK"] = str(home / "agent.sock")
    http = live.client(token)
    tenant = Tenant(http, env, home, [])
    try:
        made = _run([VPOD, "keypair", "create", "laptop"], env)
        assert made.returncode == 0, made.stderr
        added = _run(["ssh-add", str(home / "v" / "keys" / "laptop")], env, retries=20)
        assert added.returncode == 0, added.stderr
        body = {"name": "train", "flavor": "g2a-ai-fast-v1pod-64", "keypairs": ["laptop"]}
        task = run_task(live, http, "POST", "/clusters", json=body)
        assert task["state"] == "FINISHED", task
        config = _run([VPOD, "cluster", "ssh-config", "train"], env)
        assert config.returncode == 0, config.stderr
        (home / "ssh_config").write_text(config.stdout)
        tenant.servers = list(ok(http.get("/clusters/train"))["servers"])
        yield tenant
        run_task(live, tenant.http, "DELETE", "/clusters/train")  # a restart gives a new one
    finally:
        tenant.http.close()
        agent.terminate()
        agent.wait(30)


def _run(
    argv: list[str], env: dict[str, str], retries: int = 1
) -> subprocess.CompletedProcess[str]:
    """``argv``; tried up to ``retries`` times while it fails (the agent's socket appearing)."""
    for attempt in range(retries):
        done = subprocess.run(
            argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=TIMEOUT_S, check=False,
        )  # fmt: skip
        if done.returncode == 0 or attempt == retries - 1:
            return done
        subprocess.run(["sleep", "0.2"], check=False)
    raise AssertionError("unreachable")


def test_the_servers_of_a_vpod_ssh_to_each_other(alice: Tenant) -> None:
    first, second = (s["name"] for s in alice.servers)
    assert len(alice.servers) == 2
    done = alice.ssh("-A", first, f"ssh -o BatchMode=yes {second} hostname; hostname")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [second, first]
    known = alice.ssh(first, "cat /etc/ssh/ssh_known_hosts")
    assert f"{second},{alice.servers[1]['address']} ssh-ed25519 " in known.stdout
    without_agent = alice.ssh(first, f"ssh -o BatchMode=yes {second} true")
    assert without_agent.returncode == 255  # no key on the server: the agent is the way
    assert "Permission denied" in without_agent.stderr


def test_vpod_run_starts_an_instance_on_each_poplar_server(alice: Tenant) -> None:
    """The issue's end-to-end: each instance attaches its own IPUs, on its own server."""
    first, second = (s["name"] for s in alice.servers)
    inner = f'python3 -c "{SHOW}" && vpod-workload --steps 2 --json'
    command = shlex.join(
        [
            "vpod-run", "--num-replicas", "4", "--ipus-per-replica", "2", "--num-instances", "2",
            "--host", f"{first},{second}", "--", "sh", "-c", inner,
        ]
    )  # fmt: skip
    done = alice.ssh("-A", first, command)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"instances 0 on this host, 1 on {second}" in done.stderr
    lines: dict[int, list[str]] = {}
    for line in done.stdout.splitlines():
        if line.startswith("["):
            number, _, text = line[1:].partition("] ")
            lines.setdefault(int(number), []).append(text)
    assert sorted(lines) == [0, 1]
    shown = {i: json.loads(out[0]) for i, out in lines.items()}
    assert [shown[0]["host"], shown[1]["host"]] == [first, second]
    for index, seen in shown.items():
        env = seen["env"]
        assert env["POPDIST_LOCAL_INSTANCE_INDEX"] == str(index)
        assert env["POPDIST_REPLICA_INDEX_OFFSET"] == str(2 * index)
        assert env["POPDIST_NUM_LOCAL_REPLICAS"] == "2"
    assert (
        shown[0]["env"]["IPUOF_VIPU_API_PARTITION_ID"]
        == (shown[1]["env"]["IPUOF_VIPU_API_PARTITION_ID"])
    )
    held = {i: json.loads(out[-1]) for i, out in lines.items()}
    ipus = {i: {ipu["routing_id"] for ipu in run["ipus"]} for i, run in held.items()}
    assert len(ipus[0]) == len(ipus[1]) == 4  # two replicas of two IPUs each
    assert not ipus[0] & ipus[1]  # each its own
    assert ipus[0] | ipus[1] == set(range(8))
    assert "removed partition" in done.stderr
    listed = alice.ssh(first, "vipu list partitions")
    assert "vpod-run-" not in listed.stdout


def test_another_tenant_cannot_reach_the_servers_ssh(live: LiveCloud, alice: Tenant) -> None:
    bob = live.client(live.project("run-b"))
    try:
        body = {"name": "other", "flavor": "bm3-ai-1xlarge-h100-80-8", "server_count": 1}
        task = run_task(live, bob, "POST", "/clusters", json=body)
        assert task["state"] == "FINISHED", task
        address = alice.servers[1]["address"]
        first = alice.servers[0]["name"]
        mine = alice.ssh(first, f"python3 -c {shlex.quote(PROBE)} {address}")
        assert mine.stdout.strip() == "OPEN", mine.stderr
        theirs = in_shell(bob, "other", f"python3 -c '{PROBE}' {address}")
        assert theirs.stdout.startswith("CLOSED"), theirs.stdout + theirs.stderr
        run_task(live, bob, "DELETE", "/clusters/other")
    finally:
        bob.close()


def test_a_restarted_controller_serves_the_port_again(live: LiveCloud, alice: Tenant) -> None:
    """Nothing runs in a server between connections; after a restart the health round opens
    the listeners again (setup does not run again on a running vPOD). Last: the controller
    comes back on other ports, so the tenant's configuration is written again."""
    first, second = (s["name"] for s in alice.servers)
    live.restart()
    alice.env["VPOD_URL"] = live.url
    alice.http.close()
    alice.http = live.client(live.project("run-a"))
    config = _run([VPOD, "cluster", "ssh-config", "train"], alice.env)
    assert config.returncode == 0, config.stderr
    (alice.home / "ssh_config").write_text(config.stdout)
    deadline = time.monotonic() + 120
    while True:
        done = alice.ssh(
            "-A", first, f"ssh -o BatchMode=yes -o ConnectTimeout=10 {second} hostname"
        )
        if done.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == second
