"""vpod-run over several hosts: two real sshd on loopback addresses of their own stand for
two Poplar servers; the instances start over the real OpenSSH client.

Each sshd (root's, on a free port of a random 127.x address, a test key
authorised) is reached through an ssh configuration given with
``--ssh-command 'ssh -F FILE'``, the key with ``--ssh-option``. An instance
tells which host it runs on by the server address in ``SSH_CONNECTION``.
Needs root and openssh-server (skipped with the reason otherwise).
"""

from __future__ import annotations

import functools
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ports import free_port

from .conftest import BIN, Apps, eventually
from .test_launcher import instance_lines, workloads

SSHD = "/usr/sbin/sshd"
pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(os.geteuid() != 0, reason="root's sshd logs in root only as root"),
    pytest.mark.skipif(
        not os.access(SSHD, os.X_OK) or shutil.which("ssh") is None,
        reason="openssh-server and openssh-client are needed (scripts/ensure-system-deps)",
    ),
]
SHOW = (
    "import json, os; print(json.dumps({k: v for k, v in os.environ.items()"
    " if k.startswith(('POPDIST_', 'IPUOF_', 'POPLAR_', 'SSH_CONNECTION', 'RUN_'))}), flush=True)"
)


@dataclass
class Nodes:
    """Two sshd: ``node-a`` and ``node-b`` in ``config``; ``down`` names a closed port."""

    config: Path
    key: Path
    addresses: dict[str, str]

    def ssh_args(self) -> list[str]:
        return [
            "--ssh-command", f"ssh -F {self.config}", "--ssh-option", f"IdentityFile={self.key}",
        ]  # fmt: skip


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nodes]:
    work = tmp_path_factory.mktemp("nodes")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation (root's sshd)
    key = work / "client"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    (work / "authorized_keys").write_text((work / "client.pub").read_text())
    base = random.randrange(2, 250)
    daemons: list[subprocess.Popen[bytes]] = []
    blocks, known, addresses = [], [], {}
    try:
        for offset, name in enumerate(("node-a", "node-b")):
            address = f"127.{random.randrange(1, 250)}.{base}.{offset + 2}"
            port = free_port(address)
            host_key = work / f"host-{name}"
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host_key)], check=True
            )
            config = work / f"sshd-{name}"
            config.write_text(
                f"Port {port}\nListenAddress {address}\nHostKey {host_key}\n"
                f"AuthorizedKeysFile {work / 'authorized_keys'}\nPasswordAuthentication no\n"
                "UsePAM no\nPermitRootLogin prohibit-password\nPidFile none\nStrictModes no\n"
            )
            daemons.append(subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)]))
            eventually(functools.partial(_open, address, port), f"sshd of {name} listens", 30)
            public = " ".join((work / f"host-{name}.pub").read_text().split()[:2])
            known.append(f"[{address}]:{port} {public}\n")
            blocks.append(f"Host {name}\n    HostName {address}\n    Port {port}\n    User root\n")
            addresses[name] = address
        down = free_port("127.0.0.1")  # nothing listens there
        blocks.append(f"Host down-node\n    HostName 127.0.0.1\n    Port {down}\n")
        (work / "known_hosts").write_text("".join(known))
        common = (
            f"Host *\n    UserKnownHostsFile {work / 'known_hosts'}\n"
            "    StrictHostKeyChecking yes\n    IdentitiesOnly yes\n    ConnectTimeout 20\n"
        )
        (work / "ssh_config").write_text("".join(blocks) + common)
        yield Nodes(work / "ssh_config", key, addresses)
    finally:
        for daemon in daemons:
            daemon.terminate()
            daemon.wait(30)


def _open(address: str, port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex((address, port)) == 0


def launcher_env(apps: Apps, **extra: str) -> dict[str, str]:
    return {k: v for k, v in apps.env(**extra).items() if not k.startswith("SSH_")}


def run_launcher(
    apps: Apps, *args: str, timeout: float = 240, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "vpod-run"), *args],
        env=launcher_env(apps, **extra),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=apps.home,
    )


def server_address(env: dict[str, str]) -> str:
    """The address ssh reached (the third word of SSH_CONNECTION); 'local' without ssh."""
    connection = env.get("SSH_CONNECTION")
    return connection.split()[2] if connection else "local"


def test_instances_on_two_hosts_from_a_hostfile(apps: Apps, nodes: Nodes) -> None:
    """Two instances on each sshd host; each has its own POPDIST_*/IPUOF_* and attaches its
    own IPUs; arguments that look like shell arrive unchanged; the partition is removed."""
    before = apps.partition_ids()
    hostfile = apps.home / "hostfile"
    hostfile.write_text("# two Poplar servers\nnode-a slots=2\n\nnode-b slots=2  # the second\n")
    odd = "it's $(touch /tmp/vpod-run-pwned); `id`"
    command = (
        f'{sys.executable} -c "{SHOW}" && printf "%s\\n" "$1" && '
        f"{BIN / 'vpod-workload'} --steps 2 --json"
    )
    done = run_launcher(
        apps, "--num-replicas", "4", "--ipus-per-replica", "2", "--num-instances", "4",
        "--hostfile", str(hostfile), *nodes.ssh_args(), "-x", "VIPU_CLI_CONFIG",
        "-x", "RUN_TAG=multi host", "--", "sh", "-c", command, "sh", odd,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "instances 0-1 on node-a, 2-3 on node-b" in done.stderr
    lines = instance_lines(done.stdout)
    assert sorted(lines) == [0, 1, 2, 3]
    envs = {i: json.loads(out[0]) for i, out in lines.items()}
    assert [server_address(envs[i]) for i in range(4)] == [
        nodes.addresses["node-a"], nodes.addresses["node-a"],
        nodes.addresses["node-b"], nodes.addresses["node-b"],
    ]  # fmt: skip
    assert {e["IPUOF_VIPU_API_PARTITION_ID"] for e in envs.values()} == {
        envs[0]["IPUOF_VIPU_API_PARTITION_ID"]
    }
    offsets = []
    for index, env in envs.items():
        assert env["POPDIST_LOCAL_INSTANCE_INDEX"] == str(index)
        assert env["POPDIST_NUM_TOTAL_REPLICAS"] == "4"
        assert env["POPDIST_NUM_LOCAL_REPLICAS"] == "1"
        assert env["POPDIST_NUM_INSTANCES"] == "4"
        assert env["IPUOF_VIPU_API_PORT"] == str(apps.pod.user_port)
        assert env["RUN_TAG"] == "multi host"
        offsets.append(int(env["POPDIST_REPLICA_INDEX_OFFSET"]))
        assert lines[index][1] == odd
    assert sorted(offsets) == [0, 1, 2, 3]
    assert not Path("/tmp/vpod-run-pwned").exists()
    held = [json.loads(lines[i][-1]) for i in range(4)]
    routing = sorted(ipu["routing_id"] for run in held for ipu in run["ipus"])
    assert routing == list(range(8))  # every instance its own pair, together the partition
    assert apps.partition_ids() == before


def test_this_host_starts_without_ssh(apps: Apps, nodes: Nodes) -> None:
    done = run_launcher(
        apps, "--num-replicas", "2", "--ipus-per-replica", "1", "--num-instances", "2",
        "--host", "localhost,node-b", *nodes.ssh_args(),
        "--", sys.executable, "-c", SHOW,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    envs = {i: json.loads(out[0]) for i, out in instance_lines(done.stdout).items()}
    assert server_address(envs[0]) == "local"
    assert server_address(envs[1]) == nodes.addresses["node-b"]


def test_an_unreachable_host_is_named_before_anything_starts(apps: Apps, nodes: Nodes) -> None:
    before = apps.partition_ids()
    done = run_launcher(
        apps, "--num-replicas", "2", "--ipus-per-replica", "1", "--num-instances", "2",
        "--host", "node-a,down-node", *nodes.ssh_args(), "--", "true",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "cannot reach host down-node with ssh" in done.stderr
    assert "Connection refused" in done.stderr
    assert apps.partition_ids() == before  # nothing was created
    bad = run_launcher(
        apps, "--num-replicas", "2", "--ipus-per-replica", "1", "--num-instances", "2",
        "--host", "node-a,-oProxyCommand=touch /tmp/vpod-run-pwned", "--", "true",
    )  # fmt: skip
    assert bad.returncode == 2
    assert "is not a host name" in bad.stderr
    assert not Path("/tmp/vpod-run-pwned").exists()


def test_a_failing_remote_instance_stops_the_others_and_gives_its_status(
    apps: Apps, nodes: Nodes
) -> None:
    marker = "4343.5"
    script = (
        f'if [ "$POPDIST_LOCAL_INSTANCE_INDEX" = 1 ]; then sleep 1; exit 3; fi;'
        f" exec {BIN / 'vpod-workload'} --seconds {marker}"
    )
    before = apps.partition_ids()
    done = run_launcher(
        apps, "--num-replicas", "2", "--ipus-per-replica", "1", "--num-instances", "2",
        "--host", "node-a,node-b", *nodes.ssh_args(), "--", "sh", "-c", script,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    eventually(lambda: not workloads(marker), "the instance on node-a was stopped", 30)
    assert apps.partition_ids() == before


def test_ctrl_c_stops_the_remote_instances(apps: Apps, nodes: Nodes) -> None:
    marker = "4444.5"
    before = apps.partition_ids()
    launcher = subprocess.Popen(
        [
            str(BIN / "vpod-run"), "--num-replicas", "4", "--ipus-per-replica", "1",
            "--num-instances", "4", "--host", "node-a,node-b", *nodes.ssh_args(),
            "--", str(BIN / "vpod-workload"), "--seconds", marker,
        ],
        env=launcher_env(apps),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert launcher.stdout is not None
    attached = 0
    while attached < 4:
        line = launcher.stdout.readline()
        assert line, "the launcher ended before every instance attached"
        attached += " attached device " in line
    assert len(workloads(marker)) == 4
    started = time.monotonic()
    launcher.send_signal(signal.SIGINT)
    out, err = launcher.communicate(timeout=120)
    assert launcher.returncode == 130, err
    assert out.count("interrupted after") == 4  # each instance saw the Ctrl-C and said so
    assert "removed partition" in err
    eventually(lambda: not workloads(marker), "no remote instance is left running", 30)
    assert time.monotonic() - started < 120
    assert apps.partition_ids() == before
