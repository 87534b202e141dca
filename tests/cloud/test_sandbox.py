"""A tenant's server is a sandbox: tried from inside, through the real `vpod cluster ssh`.

A live cloud (a real controller on loopback, real bwrap) runs two tenants'
clusters; every check runs a command through the `vpod` CLI, which reaches
the server's shell through the controller's WebSocket relay. From inside a
server a tenant has its own uid (from the configured range) and host name,
cannot read the controller's data directory nor another server's files, sees
no process but its own, cannot write the host's system directories; its own
home is writable, `vipu` runs (whatever the Python's path: the interpreter is
bound in read-only), a command's exit status and standard error come back
apart, and the shell info names no host path. Where the host cannot
sandbox, creating servers is refused with the reason, unless the operator
chose the unsafe mode. Needs root and bubblewrap (skipped with the reason
otherwise; `scripts/ensure-system-deps` installs bubblewrap).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from vpod.client import CloudClient
from vpod.client.cloud_shell import ShellExit
from vpod.cloud.drivers import Layout, LocalCompute
from vpod.cloud.drivers.sandbox import UID_FIRST, sandbox_problem

from .conftest import error, in_shell, ok, run_task
from .live import LiveCloud, start_cloud, stop_cloud

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(
        sandbox_problem() is not None, reason=f"no sandbox on this host: {sandbox_problem()}"
    ),
]
VPOD = str(Path(sys.executable).with_name("vpod"))
FLAVOR = "g2a-ai-fast-v1pod-4"


@pytest.fixture(scope="module")
def two(live: LiveCloud) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """Tenants ``boxed-a`` and ``boxed-b``, each with a running cluster (``a1``, ``b1``)."""
    a = live.client(live.project("boxed-a"))
    b = live.client(live.project("boxed-b"))
    for http, name in ((a, "box-a"), (b, "box-b")):
        task = run_task(live, http, "POST", "/clusters", json={"name": name, "flavor": FLAVOR})
        assert task["state"] == "FINISHED", task
    done = in_shell(b, "box-b", "echo b-secret > /home/private.txt && chmod 600 /home/private.txt")
    assert done.returncode == 0, done.stderr
    yield a, b
    for http, name in ((a, "box-a"), (b, "box-b")):
        run_task(live, http, "DELETE", f"/clusters/{name}")
        http.close()


def _state(live: LiveCloud, server_name: str) -> dict[str, object]:
    for state_file in (live.data_dir / "cloud" / "servers").glob("*/state.json"):
        state = json.loads(state_file.read_text())
        if state["name"] == server_name:
            state["root"] = str(state_file.parent / "root")
            return dict(state)
    raise AssertionError(f"no server {server_name}")


def test_the_server_has_its_own_uid_user_and_host_name(
    live: LiveCloud, two: tuple[httpx.Client, httpx.Client]
) -> None:
    a, b = two
    out_a = in_shell(a, "box-a", "id -u; id -un; hostname").stdout.split()
    out_b = in_shell(b, "box-b", "id -u").stdout.split()
    uid = int(out_a[0])
    assert uid == _state(live, out_a[2])["uid"]
    assert uid >= UID_FIRST
    assert uid not in (0, os.geteuid(), int(out_b[0]))
    assert out_a[1] == "tenant"
    assert out_a[2].startswith("box-a-")
    root = Path(str(_state(live, out_a[2])["root"])).resolve()
    assert (root / "home").stat().st_uid == uid  # the server's root is its uid's


def test_the_controllers_files_and_other_servers_are_out_of_sight(
    live: LiveCloud, two: tuple[httpx.Client, httpx.Client]
) -> None:
    a, b = two
    other = _state(live, in_shell(b, "box-b", "hostname").stdout.strip())
    data = live.data_dir
    targets = [data, *data.iterdir(), Path(str(other["root"])) / "home" / "private.txt"]
    for path in targets:
        done = in_shell(a, "box-a", f"ls -la {path} || cat {path}")
        assert done.returncode != 0, (path, done.stdout)
        assert "b-secret" not in done.stdout
    listed = in_shell(a, "box-a", "ls / /home /mnt; cat /etc/hosts").stdout
    assert data.name not in listed
    assert "private.txt" not in listed
    assert in_shell(b, "box-b", "cat /home/private.txt").stdout.strip() == "b-secret"


def test_only_the_servers_own_processes_are_visible(
    two: tuple[httpx.Client, httpx.Client],
) -> None:
    a, _ = two
    done = in_shell(
        a, "box-a", "ls /proc | grep -c '^[0-9]'; cat /proc/[0-9]*/cmdline | tr '\\0' ' '"
    )
    assert done.returncode == 0, done.stderr
    count, *cmdlines = done.stdout.splitlines()
    assert int(count) <= 6, done.stdout  # bwrap's init, setpriv's bash, ls, grep, ...
    seen = " ".join(cmdlines)
    assert "pytest" not in seen
    assert "vipu-agent" not in seen
    assert "bash -c" in seen  # this very command is there


def test_the_hosts_system_is_read_only_the_home_writable_and_vipu_runs(
    two: tuple[httpx.Client, httpx.Client],
) -> None:
    a, _ = two
    done = in_shell(a, "box-a", "echo hi > /home/note && cat /home/note")
    assert (done.returncode, done.stdout.strip()) == (0, "hi")
    for path in ("/usr/planted", "/etc/planted", "/planted"):
        assert in_shell(a, "box-a", f"touch {path}").returncode != 0
        assert not Path(path).exists()
    done = in_shell(a, "box-a", "vipu list allocations")
    assert done.returncode == 0, done.stderr


def test_exit_status_stderr_and_stdin_pass_through(
    live: LiveCloud, two: tuple[httpx.Client, httpx.Client]
) -> None:
    a, _ = two
    done = in_shell(a, "box-a", "echo out; echo err >&2; exit 7")
    assert (done.returncode, done.stdout, done.stderr) == (7, "out\n", "err\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VPOD_")}
    env.update(VPOD_URL=live.url, VPOD_TOKEN=live.project("boxed-a"))
    piped = subprocess.run(
        [VPOD, "cluster", "ssh", "box-a", "--", "tr a-z A-Z"],
        input="through stdin\n", env=env, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert (piped.returncode, piped.stdout) == (0, "THROUGH STDIN\n"), piped.stderr


def test_an_interactive_shell_gets_a_terminal(
    live: LiveCloud, two: tuple[httpx.Client, httpx.Client]
) -> None:
    """The relay's terminal mode (what `vpod cluster ssh` uses on a terminal)."""
    with CloudClient.from_config(url=live.url, token=live.project("boxed-a")) as cloud:
        shell = cloud.open_shell("box-a", tty=True, rows=33, cols=101)
        with shell:
            shell.send_input(b"test -t 0 && echo is-a-tty; stty size; exit 3\n")
            output = b""
            while not isinstance(received := shell.receive(), ShellExit):
                output += received.data
        assert received.code == 3
        text = output.decode(errors="replace")
        assert "\ris-a-tty\r\n" in text
        assert "\n33 101\r\n" in text
        assert "[box-a] box-a-poplar-1:~$" in text  # the server's prompt (its .bashrc)


@pytest.mark.skipif(shutil.which("script") is None, reason="needs script(1) for a terminal")
def test_vpod_cluster_ssh_on_a_terminal_is_an_interactive_shell(
    live: LiveCloud, two: tuple[httpx.Client, httpx.Client]
) -> None:
    """`vpod cluster ssh CLUSTER` with a terminal (script(1) gives it one): the server's
    prompt, a terminal on the server too, the shell's exit status as vpod's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VPOD_")}
    env.update(VPOD_URL=live.url, VPOD_TOKEN=live.project("boxed-a"), TERM="xterm")
    done = subprocess.run(
        ["script", "-qec", f"{VPOD} cluster ssh box-a", "/dev/null"],
        input="test -t 0 && echo on-a-tty; hostname; exit 4\n",
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 4, done.stdout + done.stderr
    assert "[box-a] box-a-poplar-1:~$" in done.stdout
    assert "\non-a-tty" in done.stdout.replace("\r", "")
    assert "\nbox-a-poplar-1\n" in done.stdout.replace("\r", "")


def _sandbox_cmdlines(hostname: str) -> list[bytes]:
    found = []
    for path in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            line = path.read_bytes()
        except OSError:
            continue  # ended meanwhile
        if b"bwrap" in line and hostname.encode() in line:
            found.append(line)
    return found


def test_the_servers_environment_is_on_no_host_command_line(
    two: tuple[httpx.Client, httpx.Client],
) -> None:
    """bwrap's command line is readable by every user of the host: the server's environment
    (which may hold dataset keys) reaches the sandbox through the process environment."""
    a, _ = two
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(in_shell, a, "box-a", "sleep 4; echo ${VPOD_CLUSTER}")
        deadline = time.monotonic() + 60
        while not (lines := _sandbox_cmdlines("box-a-poplar-1")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert running.result().stdout == "box-a\n"
    assert lines, "the sandbox's bwrap was never seen running"
    names = (b"VPOD_CLUSTER", b"IPUOF_VIPU_API_HOST")  # as --setenv NAME VALUE, or NAME=VALUE
    assert not any(n + sep in line for line in lines for n in names for sep in (b"\0", b"="))


def test_the_shell_info_shows_no_host_path(
    live: LiveCloud, two: tuple[httpx.Client, httpx.Client]
) -> None:
    a, _ = two
    info = ok(a.get("/clusters/box-a/shell"))
    assert info["kind"] == "relay"
    assert info["user"] == "tenant"
    assert info["connect"].startswith("/api/cloud/v1/clusters/box-a/shell/connect")
    text = json.dumps(info)
    assert str(live.data_dir) not in text
    assert "/" not in info["host"] + info["user"]


def test_the_relay_refuses_a_wrong_token_and_another_tenants_cluster(
    live: LiveCloud, two: tuple[httpx.Client, httpx.Client]
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VPOD_")}
    env.update(VPOD_URL=live.url, VPOD_TOKEN=live.project("boxed-a"))
    other = subprocess.run(
        [VPOD, "cluster", "ssh", "box-b", "--", "true"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert other.returncode != 0
    assert "box-b" in other.stderr
    assert len(other.stderr.strip().splitlines()) == 1
    site = httpx.Client(base_url=live.url)
    with site:  # the WebSocket handshake itself is refused without the token
        reply = site.get(
            "/api/cloud/v1/clusters/box-a/shell/connect",
            headers={"Connection": "Upgrade", "Upgrade": "websocket",
                     "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                     "Sec-WebSocket-Version": "13"},
        )  # fmt: skip
        assert reply.status_code == 401


@pytest.mark.parametrize(
    "first",
    [
        "not json",
        "[1, 2]",
        '{"command": 5}',
        '{"tty": "yes"}',
        '{"rows": 0}',
        '{"cols": 100000}',
        '{"term": "x\\u0000y"}',
    ],
)
def test_a_malformed_request_gets_a_sentence_not_a_shell(
    live: LiveCloud, two: tuple[httpx.Client, httpx.Client], first: str
) -> None:
    url = live.url.replace("http://", "ws://") + "/api/cloud/v1/clusters/box-a/shell/connect"
    headers = {"Authorization": f"Bearer {live.project('boxed-a')}"}
    with connect(url, additional_headers=headers, open_timeout=30) as ws:
        ws.send(first)
        answer = json.loads(ws.recv(timeout=30))
    assert answer["error"]["code"] == "INVALID_ARGUMENT", answer
    assert answer["error"]["message"]


# -- where the host cannot sandbox


@pytest.fixture
def unsandboxable(tmp_path: Path) -> Iterator[LiveCloud]:
    """A cloud whose bubblewrap is missing (as on a host without it)."""
    cloud_dir = tmp_path / "data" / "cloud"
    compute = LocalCompute(Layout(cloud_dir), bwrap=str(tmp_path / "no" / "bwrap"))
    live = start_cloud(tmp_path / "data", compute=compute)
    try:
        yield live
    finally:
        stop_cloud(live)


def test_without_a_sandbox_servers_are_refused_with_the_reason(
    unsandboxable: LiveCloud,
) -> None:
    token = unsandboxable.project("nobox")
    with unsandboxable.client(token) as http:
        message = error(
            http.post("/clusters", json={"name": "c", "flavor": FLAVOR}), 409, "FAILED_PRECONDITION"
        )
    assert "cannot sandbox" in message
    assert "bwrap" in message
    assert "--unsafe-shared-host" in message
    env = {k: v for k, v in os.environ.items() if not k.startswith("VPOD_")}
    env.update(VPOD_URL=unsandboxable.url, VPOD_TOKEN=token)
    done = subprocess.run(
        [VPOD, "cluster", "create", "c", "--flavor", FLAVOR],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert len(done.stderr.strip().splitlines()) == 1
    assert "cannot sandbox" in done.stderr


def test_the_unsafe_mode_runs_servers_on_the_host_as_documented(tmp_path: Path) -> None:
    """With unsafe_shared_host the same host serves the cluster, its shell running as the
    controller's own user (no isolation: what docs/cloud.md warns of)."""
    cloud_dir = tmp_path / "data" / "cloud"
    compute = LocalCompute(
        Layout(cloud_dir), bwrap=str(tmp_path / "no" / "bwrap"), unsafe_shared_host=True
    )
    live = start_cloud(tmp_path / "data", compute=compute)
    try:
        with live.client(live.project("unboxed")) as http:
            task = run_task(live, http, "POST", "/clusters", json={"name": "uns", "flavor": FLAVOR})
            assert task["state"] == "FINISHED", task
            done = in_shell(http, "uns", "id -u; echo $VPOD_CLUSTER")
            assert done.stdout.split() == [str(os.geteuid()), "uns"], done.stderr
            with CloudClient.from_config(url=live.url, token=live.project("unboxed")) as cloud:
                assert cloud.shell("uns").kind == "relay"
    finally:
        stop_cloud(live)
