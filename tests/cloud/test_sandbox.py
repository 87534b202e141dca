"""A server's processes in bubblewrap: their own uid, host name, processes and files only.

Runs real ``bwrap`` as the server's uid (so it needs root and user
namespaces: skipped with the reason otherwise). From inside a server a
tenant cannot read the controller's data directory or another server's
files, sees no process but its own, has the server's host name and a uid
that is neither root nor the controller's, and cannot write the host's
system directories; its own root is writable, and ``vipu`` runs.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from vpod.cloud.drivers import Layout, LocalCompute, LocalVolumes, ServerSpec
from vpod.cloud.drivers.sandbox import (
    Sandbox,
    own_tree,
    reachable_by_all,
    sandbox_problem,
    server_uid,
)

pytestmark = pytest.mark.skipif(
    sandbox_problem() is not None, reason=f"no sandbox on this host: {sandbox_problem()}"
)


def _server(layout: Layout, server_id: str, name: str) -> Sandbox:
    volumes, compute = LocalVolumes(layout), LocalCompute(layout)
    boot = f"vol-{server_id}"
    asyncio.run(volumes.create(boot, 50, "standard", "img"))
    spec = ServerSpec(
        server_id=server_id,
        name=name,
        cluster_id="cl-1",
        cluster_name="c1",
        image="ubuntu-22.04-poplar-3.4",
        flavor="g2a-ai-fast-v1pod-4",
        bare_metal=False,
        address="10.0.0.11",
        boot_volume_id=boot,
    )
    asyncio.run(compute.create_server(spec))
    root = layout.server_root(server_id).resolve()
    uid = server_uid(server_id)
    own_tree(root, uid)
    return Sandbox(root=root, hostname=name, uid=uid)


@pytest.fixture
def servers(tmp_path: Path) -> tuple[Sandbox, Sandbox, Path]:
    data = tmp_path / "vpod-data"
    secret = data / "admin.vipu-cli.hcl"
    data.mkdir()
    secret.write_text('api-access-key = "admin-secret"\n')
    secret.chmod(0o644)  # readable by anyone on the host: only the sandbox keeps it away
    for directory in [tmp_path, *tmp_path.parents]:  # bwrap, as the server's uid, walks there
        directory.chmod(directory.stat().st_mode | 0o001)
    layout = Layout(data / "cloud")
    first = _server(layout, "sv-first", "c1-poplar-1")
    second = _server(layout, "sv-second", "c2-poplar-1")
    (second.root / "home" / "private.txt").write_text("second's data\n")
    os.lchown(second.root / "home" / "private.txt", second.uid, second.uid)
    return first, second, data


ENV = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": "/home"}


def shell(box: Sandbox, script: str) -> tuple[int, str]:
    done = box.run(["bash", "-c", script], env=ENV)
    return done.returncode, done.stdout + done.stderr


def test_the_server_has_its_own_uid_and_host_name(servers: tuple[Sandbox, Sandbox, Path]) -> None:
    first, _, _ = servers
    code, out = shell(first, "id -u; hostname")
    assert code == 0, out
    uid, hostname = out.split()
    assert int(uid) == first.uid
    assert int(uid) not in (0, os.geteuid())
    assert hostname == "c1-poplar-1"


def test_the_controllers_files_and_other_servers_are_out_of_sight(
    servers: tuple[Sandbox, Sandbox, Path],
) -> None:
    first, second, data = servers
    for path in (data / "admin.vipu-cli.hcl", data, second.root / "home" / "private.txt"):
        code, out = shell(first, f"cat {path} || ls {path}")
        assert code != 0, out
        assert "admin-secret" not in out
        assert "second's data" not in out
    code, out = shell(first, "ls /")
    assert code == 0, out
    assert "vpod-data" not in out


def test_only_the_servers_own_processes_are_visible(
    servers: tuple[Sandbox, Sandbox, Path],
) -> None:
    first, _, _ = servers
    code, out = shell(first, "ls /proc | grep -c '^[0-9]' ; cat /proc/1/cmdline | tr '\\0' ' '")
    assert code == 0, out
    count, *pid1 = out.splitlines()
    assert int(count) <= 4, out  # bwrap's init, bash, ls/grep: nothing of the host
    assert str(first.root) not in " ".join(pid1)  # arguments went through --args, not argv


def test_its_root_is_writable_the_hosts_system_directories_are_not(
    servers: tuple[Sandbox, Sandbox, Path],
) -> None:
    first, _, _ = servers
    code, out = shell(first, "echo hi > /home/note && cat /home/note")
    assert (code, out.strip()) == (0, "hi")
    code, out = shell(first, "touch /usr/planted")
    assert code != 0
    assert not Path("/usr/planted").exists()


@pytest.mark.skipif(
    not reachable_by_all(sys.base_prefix),
    reason=f"this Python ({sys.base_prefix}) is where other uids cannot walk to",
)
def test_vipu_runs_inside(servers: tuple[Sandbox, Sandbox, Path]) -> None:
    first, _, _ = servers
    code, out = shell(first, "vipu --help")
    assert code == 0, out
    assert "Usage" in out
