"""Tenants reach their servers with the real OpenSSH client, through the controller.

A live cloud (real controller on loopback, real bwrap sandboxes, Debian's
sshd started per connection inside the server) serves two projects. The
tenant makes a keypair with `vpod keypair create`, gives it to a cluster,
writes its OpenSSH configuration with `vpod cluster ssh-config` (host keys
pinned: `StrictHostKeyChecking yes`) and then uses plain `ssh`, `scp`,
`sftp`, `rsync -e ssh`, `ssh -L`, `ssh -R` (a listener inside the server
forwarding back to the test host) and `ssh -D` (a SOCKS5 proxy reaching a
page served inside); a wrong key, or another project's, is refused; keys
added to or removed from a running cluster take effect at once; suspend
and resume keep the keys and the host keys. Needs root, bubblewrap and
openssh-server (skipped with the reason otherwise; `scripts/ensure-system-deps`
installs them).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.ports import free_port

from .conftest import error, ok, run_task
from .live import LiveCloud
from .openssh_tenants import (
    FLAVOR,
    NEEDS_OPENSSH,
    VPOD,
    Tenant,
    ssh,
    ssh_with,
    tenant,
    wait_port,
)

pytestmark = [pytest.mark.system, *NEEDS_OPENSSH]


@pytest.fixture(scope="module")
def alice(live: LiveCloud, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenant]:
    """Project ssh-alice: keypair `laptop` made by vpod, cluster `sshc` holding it, and its
    OpenSSH configuration at HOME/ssh_config."""
    alice = tenant(live, "ssh-alice", tmp_path_factory.mktemp("alice"))
    made = alice.vpod("keypair", "create", "laptop")
    assert made.returncode == 0, made.stderr
    task = run_task(
        live,
        alice.http,
        "POST",
        "/clusters",
        json={"name": "sshc", "flavor": FLAVOR, "keypairs": ["laptop"]},
    )
    assert task["state"] == "FINISHED", task
    config = alice.vpod("cluster", "ssh-config", "sshc")
    assert config.returncode == 0, config.stderr
    (alice.home / "ssh_config").write_text(config.stdout)
    yield alice
    run_task(live, alice.http, "DELETE", "/clusters/sshc")
    alice.http.close()


@pytest.fixture(scope="module")
def bob(live: LiveCloud, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenant]:
    """Project ssh-bob with a keypair `bobkey` of its own."""
    bob = tenant(live, "ssh-bob", tmp_path_factory.mktemp("bob"))
    made = bob.vpod("keypair", "create", "bobkey")
    assert made.returncode == 0, made.stderr
    yield bob
    bob.http.close()


def test_keypair_create_writes_the_private_key_once_and_lists_openssh_fingerprints(
    alice: Tenant,
) -> None:
    key = alice.home / "v" / "keys" / "laptop"
    assert key.stat().st_mode & 0o777 == 0o600
    printed = alice.run("ssh-keygen", "-l", "-f", str(key))
    assert printed.returncode == 0, printed.stderr
    listed = json.loads(alice.vpod("keypair", "list", "--json").stdout)
    laptop = next(k for k in listed if k["name"] == "laptop")
    assert laptop["type"] == "ssh-ed25519"
    assert laptop["fingerprint"] == printed.stdout.split()[1]  # SHA256:..., as OpenSSH shows
    assert laptop["clusters"] == ["sshc"]
    assert "private_key" not in json.dumps(listed)
    again = alice.vpod("keypair", "create", "laptop")
    assert again.returncode == 2, again.stderr  # the key file is never overwritten
    assert "exists" in again.stderr


def test_import_takes_a_public_key_and_refuses_anything_else(alice: Tenant) -> None:
    made = alice.run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", "imported")
    assert made.returncode == 0, made.stderr
    done = alice.vpod("keypair", "import", "imp1", "--public-key", "imported.pub", "--json")
    assert done.returncode == 0, done.stderr
    printed = alice.run("ssh-keygen", "-l", "-f", "imported.pub").stdout.split()[1]
    assert json.loads(done.stdout)["fingerprint"] == printed
    private = alice.vpod("keypair", "import", "imp2", "--public-key", "imported")
    assert private.returncode == 2
    assert "private key" in private.stderr
    garbage = alice.vpod("keypair", "import", "imp3", "--public-key", "-", stdin="ssh-rsa AAAA\n")
    assert garbage.returncode == 2, garbage.stderr
    message = error(
        alice.http.post("/keypairs", json={"name": "dsa-key", "public_key": "ssh-dss A"}),
        400,
        "INVALID_ARGUMENT",
    )
    assert "ssh-ed25519" in message
    assert alice.vpod("keypair", "delete", "imp1").returncode == 0


def test_the_right_key_logs_in_with_strict_host_key_checking(alice: Tenant) -> None:
    config = (alice.home / "ssh_config").read_text()
    assert "StrictHostKeyChecking yes" in config
    known = (alice.home / "v" / "known_hosts").read_text()
    shown = ok(alice.http.get("/clusters/sshc"))
    fingerprints = [k["fingerprint"] for s in shown["servers"] for k in s["ssh_host_keys"]]
    assert fingerprints
    assert all(f.startswith("SHA256:") for f in fingerprints)
    server = shown["servers"][0]["name"]
    assert server in known
    for host in ("sshc", server):  # the cluster's name is its first server's alias
        done = ssh(alice, host, "id -un; hostname; echo $VPOD_CLUSTER")
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["tenant", server, "sshc"]
    scanned = ssh(alice, "-v", "sshc", "true")
    assert any(f in scanned.stderr for f in fingerprints)  # the key ssh checked is the listed one


def test_a_wrong_key_and_another_projects_key_are_refused(alice: Tenant, bob: Tenant) -> None:
    made = alice.run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", "stranger")
    assert made.returncode == 0
    wrong = ssh_with(alice, alice.home / "stranger", "sshc", "true")
    assert wrong.returncode == 255
    assert "Permission denied" in wrong.stderr
    bobs = bob.home / "v" / "keys" / "bobkey"
    other = ssh_with(alice, bobs, "sshc", "true")
    assert other.returncode == 255
    assert "Permission denied" in other.stderr
    # and bob can neither see alice's keypair nor give it to anything, nor tunnel to her server
    error(bob.http.get("/keypairs/laptop"), 404, "NOT_FOUND")
    error(bob.http.put("/clusters/sshc/keypairs/bobkey"), 404, "NOT_FOUND")
    assert "laptop" not in bob.vpod("keypair", "list").stdout
    proxy = bob.vpod("cluster", "ssh-proxy", "sshc", "1")
    assert proxy.returncode != 0
    assert "does not exist" in proxy.stderr
    refused = bob.http.post(
        "/clusters", json={"name": "bobc", "flavor": FLAVOR, "keypairs": ["laptop"]}
    )
    error(refused, 404, "NOT_FOUND")


def test_scp_sftp_and_rsync_both_ways(alice: Tenant) -> None:
    payload = os.urandom(3 * 1024 * 1024)
    (alice.home / "up.bin").write_bytes(payload)
    cfg = str(alice.home / "ssh_config")
    assert alice.run("scp", "-F", cfg, "up.bin", "sshc:/home/up.bin").returncode == 0
    assert alice.run("scp", "-F", cfg, "sshc:/home/up.bin", "down.bin").returncode == 0
    assert (alice.home / "down.bin").read_bytes() == payload
    tree = alice.home / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "a.txt").write_text("alpha\n")
    rsh = f"ssh -F {cfg}"
    pushed = alice.run("rsync", "-a", "-e", rsh, "tree/", "sshc:/home/tree/")
    assert pushed.returncode == 0, pushed.stderr
    assert ssh(alice, "sshc", "cat /home/tree/sub/a.txt").stdout == "alpha\n"
    pulled = alice.run("rsync", "-a", "-e", rsh, "sshc:/home/tree/", "back/")
    assert pulled.returncode == 0, pulled.stderr
    assert (alice.home / "back" / "sub" / "a.txt").read_text() == "alpha\n"
    listed = alice.run("sftp", "-F", cfg, "-b", "-", "sshc", stdin="ls /home/tree/sub\n")
    assert listed.returncode == 0, listed.stderr
    assert "a.txt" in listed.stdout


def test_vpod_cluster_ssh_is_openssh_keeping_streams_and_exit_status(alice: Tenant) -> None:
    done = alice.vpod("cluster", "ssh", "sshc", "--", "echo out; echo err >&2; exit 7")
    assert done.returncode == 7, done.stderr
    assert done.stdout == "out\n"
    assert "err" in done.stderr
    fed = alice.vpod("cluster", "ssh", "sshc", "--", "wc", "-c", stdin="12345")
    assert fed.stdout.strip() == "5"
    on_terminal = alice.run(
        "script", "-qec", f"stty rows 33 cols 101; {VPOD} cluster ssh sshc", "/dev/null",
        stdin="stty size; exit 3\n",
    )  # fmt: skip
    assert on_terminal.returncode == 3, on_terminal.stdout
    assert "33 101" in on_terminal.stdout  # a terminal of its own, our window's size


def test_ssh_L_reaches_a_web_server_inside_and_a_forwarded_connection_lives_a_minute(
    alice: Tenant,
) -> None:
    inside, local = free_port(), free_port()
    # Both local ends below the ephemeral range: a port next to a free one may be any
    # outgoing connection's by the time ssh binds it (ssh then listens on ::1 only).
    echoed = next(p for p in iter(free_port, None) if p != local)
    echo = (
        "import socket,sys\n"
        "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        f"s.bind(('127.0.0.1', {inside + 1})); s.listen()\n"
        "c,_=s.accept()\n"
        "while (d:=c.recv(100)): c.sendall(d.upper())\n"
    )
    command = (
        f'cd /home && (python3 -c "{echo}" &) && python3 -m http.server {inside}'
        " --bind 127.0.0.1 >/dev/null 2>&1"
    )
    cfg = str(alice.home / "ssh_config")
    tunnel = subprocess.Popen(
        [
            "ssh", "-F", cfg, "-o", "ExitOnForwardFailure=yes",
            "-L", f"{local}:127.0.0.1:{inside}", "-L", f"{echoed}:127.0.0.1:{inside + 1}",
            "sshc", command,
        ],
        env=alice.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_port(local)
        page = ""
        for _ in range(50):
            try:
                page = httpx.get(f"http://127.0.0.1:{local}/", timeout=10).text
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        assert "Directory listing" in page
        with socket.create_connection(("127.0.0.1", echoed), timeout=30) as conn:
            conn.sendall(b"hello")
            assert conn.recv(100) == b"HELLO"
            time.sleep(61)  # idle for a minute: nothing on the way may drop it
            conn.sendall(b"still")
            assert conn.recv(100) == b"STILL"
    finally:
        tunnel.terminate()
        tunnel.wait(30)


def _upper_echo_server() -> tuple[socket.socket, threading.Thread]:
    """A server on the test host answering each connection's bytes in upper case."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                with conn:
                    while data := conn.recv(100):
                        conn.sendall(data.upper())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener, thread


def test_ssh_R_forwards_a_listener_inside_the_server_back_to_the_test_host(
    alice: Tenant,
) -> None:
    listener, _ = _upper_echo_server()
    inside = free_port()
    dial = (
        "import socket,time\n"
        "for _ in range(100):\n"
        "    try:\n"
        f"        c=socket.create_connection(('127.0.0.1', {inside}), timeout=30); break\n"
        "    except OSError: time.sleep(0.1)\n"
        "c.sendall(b'hello from inside'); print(c.recv(100).decode())\n"
    )
    try:
        done = ssh(
            alice,
            "-o", "ExitOnForwardFailure=yes",
            "-R", f"{inside}:127.0.0.1:{listener.getsockname()[1]}",
            "sshc", f'python3 -c "{dial}"',
        )  # fmt: skip
    finally:
        listener.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "HELLO FROM INSIDE"  # inside -> sshd -> ssh -> the test host


def _socks5_get(proxy_port: int, host: str, port: int, path: str) -> bytes:
    """GET http://HOST:PORT/PATH through a SOCKS5 proxy, the name resolved by the proxy
    (as curl --socks5-hostname does); ConnectionError when the proxy cannot connect."""

    def exactly(conn: socket.socket, count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = conn.recv(count - len(data))
            if not chunk:
                raise ConnectionError("the SOCKS proxy hung up")
            data += chunk
        return data

    with socket.create_connection(("127.0.0.1", proxy_port), timeout=30) as conn:
        conn.sendall(b"\x05\x01\x00")  # version 5, one method: no authentication
        assert exactly(conn, 2) == b"\x05\x00"
        name = host.encode()
        conn.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + port.to_bytes(2, "big"))
        reply = exactly(conn, 4)
        if reply[1] != 0:
            raise ConnectionError(f"the SOCKS proxy could not connect (reply {reply[1]})")
        bound = {1: 4, 4: 16}.get(reply[3]) or exactly(conn, 1)[0]
        exactly(conn, bound + 2)
        conn.sendall(f"GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


def test_ssh_D_is_a_socks_proxy_reaching_a_page_served_inside_the_server(
    alice: Tenant,
) -> None:
    inside, proxy = free_port(), free_port()
    token = os.urandom(8).hex()
    command = (
        f"mkdir -p /home/socks && echo {token} > /home/socks/page.txt && cd /home/socks &&"
        f" python3 -m http.server {inside} --bind 127.0.0.1 >/dev/null 2>&1"
    )
    cfg = str(alice.home / "ssh_config")
    session = subprocess.Popen(
        ["ssh", "-F", cfg, "-o", "ExitOnForwardFailure=yes", "-D", f"127.0.0.1:{proxy}", "sshc",
         command],
        env=alice.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_port(proxy)
        answer = b""
        for _ in range(100):  # until the page's server inside has started
            try:
                answer = _socks5_get(proxy, "localhost", inside, "/page.txt")
                break
            except ConnectionError:
                time.sleep(0.2)
        assert answer.startswith(b"HTTP/1.0 200"), answer[:200]
        assert answer.rstrip().endswith(token.encode())
    finally:
        session.terminate()
        session.wait(30)


def test_without_the_operators_range_there_is_no_direct_port(alice: Tenant) -> None:
    shown = ok(alice.http.get("/clusters/sshc"))
    assert all(s["ssh_port"] is None for s in shown["servers"])
    info = ok(alice.http.get("/clusters/sshc/ssh"))
    assert all(s["direct_port"] is None and s["direct_host"] is None for s in info["servers"])
    assert "SSH port" not in alice.vpod("cluster", "show", "sshc").stdout
    refused = alice.vpod("cluster", "ssh-config", "--direct", "sshc")
    assert refused.returncode == 2
    assert "ssh_direct_ports" in refused.stderr
    assert "leave out --direct" in refused.stderr
    both = alice.vpod("cluster", "ssh", "--direct", "--relay", "sshc", "--", "true")
    assert both.returncode == 2, both.stderr


def test_keys_added_and_removed_on_a_running_cluster_take_effect_at_once(
    alice: Tenant, bob: Tenant
) -> None:
    made = alice.run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", "second")
    assert made.returncode == 0
    assert alice.vpod("keypair", "import", "second", "--public-key", "second.pub").returncode == 0
    second = alice.home / "second"
    assert ssh_with(alice, second, "sshc", "true").returncode == 255
    added = alice.vpod("cluster", "keypair", "add", "sshc", "second", "--json")
    assert added.returncode == 0, added.stderr
    assert sorted(k["name"] for k in json.loads(added.stdout)) == ["laptop", "second"]
    assert ssh_with(alice, second, "sshc", "true").returncode == 0
    held = alice.vpod("keypair", "delete", "second")
    assert held.returncode != 0
    assert "remove it there first" in held.stderr
    assert alice.vpod("cluster", "keypair", "remove", "sshc", "second").returncode == 0
    assert ssh_with(alice, second, "sshc", "true").returncode == 255
    assert alice.vpod("keypair", "delete", "second").returncode == 0


def _scratch_image(live: LiveCloud, http: httpx.Client) -> Path:
    server_id = ok(http.get("/clusters/sshc"))["servers"][0]["id"]
    return live.data_dir / "cloud" / "scratch" / f"{server_id}.img"


def test_the_vms_local_disk_is_scratch_space_of_the_flavors_size(
    live: LiveCloud, alice: Tenant
) -> None:
    disk = next(f for f in ok(alice.http.get("/flavors")) if f["name"] == FLAVOR)["disk_gib"]
    assert disk > 0
    done = ssh(
        alice, "sshc", "df -B1G --output=size /scratch | tail -1; touch /scratch/w && echo ok"
    )
    assert done.returncode == 0, done.stderr
    size, written = done.stdout.split()
    assert disk * 0.9 <= int(size) <= disk  # the file system's own overhead aside
    assert written == "ok"
    assert _scratch_image(live, alice.http).exists()  # outside the server's root


def test_suspend_and_resume_keep_the_keys_and_the_host_keys_not_the_scratch_space(
    live: LiveCloud, alice: Tenant
) -> None:
    before = ok(alice.http.get("/clusters/sshc/ssh"))
    kept = ssh(alice, "sshc", "echo data > /scratch/lost; echo data > /home/kept")
    assert kept.returncode == 0, kept.stderr
    assert run_task(live, alice.http, "POST", "/clusters/sshc/suspend")["state"] == "FINISHED"
    assert not _scratch_image(live, alice.http).exists()  # the VM's local disk is released
    refused = ssh(alice, "-o", "BatchMode=yes", "sshc", "true")
    assert refused.returncode == 255
    assert "SUSPENDED" in refused.stderr
    assert run_task(live, alice.http, "POST", "/clusters/sshc/resume")["state"] == "FINISHED"
    after = ok(alice.http.get("/clusters/sshc/ssh"))
    assert after["servers"] == before["servers"]
    assert after["keypairs"] == ["laptop"]
    done = ssh(alice, "sshc", "cat /home/kept; ls -A /scratch")  # the pinned host key matches
    assert done.returncode == 0, done.stderr
    assert done.stdout == "data\n"  # home (the boot volume) kept, scratch empty again
