"""A vPOD's servers have a network of their own: tried from inside real sandboxes.

A live cloud of four emulated Bow-2000s and two bare-metal H100 hosts runs
tenant A's two-server GPU cluster and tenants B and C's vPOD-4s. Every check
runs in a server, through the real `vpod cluster ssh` (real network
namespaces, a real bridge per vPOD, real nftables), as an adversarial tenant
would:

- the servers of one vPOD reach each other (TCP, abstract Unix sockets stay
  inside a server), another tenant's servers reach neither;
- from inside, the V-IPU user API and the vPOD's own IPUoF endpoints answer
  (`vipu` creates a partition, `vpod-workload` attaches its IPUs); another
  vPOD's IPUoF endpoints, the admin API, the agents' management ports and
  the other bridges' gateways do not, and refusing them changes nothing;
- after a suspension and a resume onto other IPU-Machines, the server
  reaches its new machines' IPUoF endpoints and no longer its old ones (now
  another tenant's).

Needs root, bubblewrap, iproute2 and nftables (skipped with the reason
otherwise; `scripts/ensure-system-deps` installs them).
"""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from vpod.cloud.drivers.sandbox import sandbox_problem
from vpod.cloud.drivers.tenant_network import network_problem

from .conftest import VPOD, in_shell, ok, run_task
from .live import LiveCloud, start_cloud, stop_cloud

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(
        (sandbox_problem() or network_problem()) is not None,
        reason=f"no sandboxed tenant networks here: {sandbox_problem() or network_problem()}",
    ),
]
SMALL = "g2a-ai-fast-v1pod-4"
GPU = "bm3-ai-1xlarge-h100-80-8"
HOSTS = [
    {"id": f"h100-n{i}", "role": "baremetal", "model": "h100-80", "fabric": "ib-n"} for i in (1, 2)
]
PROBE = """
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
try:
    socket.create_connection((host, port), timeout=3).close()
    print("OPEN")
except OSError as exc:
    print("CLOSED", exc.__class__.__name__)
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCloud]:
    cloud = start_cloud(tmp_path_factory.mktemp("tenant-net"))
    try:
        with cloud.admin() as admin:
            for host in HOSTS:
                ok(admin.post("/admin/hosts", json=host), 201)
        yield cloud
    finally:
        stop_cloud(cloud)


@pytest.fixture(scope="module")
def tenants(live: LiveCloud) -> Iterator[dict[str, httpx.Client]]:
    clients = {name: live.client(live.project(f"net-{name}")) for name in ("a", "b", "c", "d")}
    for name, flavor, count in (("a", GPU, 2), ("b", SMALL, 1), ("c", SMALL, 1)):
        body = {"name": f"net-{name}", "flavor": flavor, "server_count": count}
        task = run_task(live, clients[name], "POST", "/clusters", json=body)
        assert task["state"] == "FINISHED", task
    yield clients
    for client in clients.values():
        client.close()


def _servers(http: httpx.Client, cluster: str) -> list[dict[str, str]]:
    return list(ok(http.get(f"/clusters/{cluster}"))["servers"])


def _probe(http: httpx.Client, cluster: str, host: str, port: int, server: int = 1) -> str:
    done = in_shell(http, cluster, f"python3 -c '{PROBE}' {host} {port}", server=server)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _listen(http: httpx.Client, cluster: str, server: int, script: str) -> subprocess.Popen[str]:
    """A listener in the server for as long as the returned process runs (its shell)."""
    base = str(http.base_url).rstrip("/").removesuffix("/api/cloud/v1")
    token = http.headers["Authorization"].removeprefix("Bearer ")
    proc = subprocess.Popen(
        [VPOD, "cluster", "ssh", cluster, "--server", str(server), "--", f"python3 -c '{script}'"],
        env={"PATH": "/usr/bin:/bin", "VPOD_URL": base, "VPOD_TOKEN": token},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
    return proc


LISTENER = """
import socket, time
tcp = socket.socket(); tcp.bind(("0.0.0.0", 7000)); tcp.listen()
unix = socket.socket(socket.AF_UNIX); unix.bind("\\0vpod-net-test"); unix.listen()
print("ready", flush=True)
time.sleep(90)
"""
UNIX_PROBE = """
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\\0vpod-net-test"); print("OPEN")
except OSError as exc:
    print("CLOSED", exc.__class__.__name__)
"""


def _ipuof_hosts(http: httpx.Client, cluster: str, partition: str) -> set[str]:
    """The IPUoF addresses of ``partition``, as the server reads them from the user API."""
    done = in_shell(
        http, cluster, f"vipu create partition {partition} --size 4 >/dev/null 2>&1;"
        f" vipu get partition {partition} --ipuof-configs",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    config = json.loads(done.stdout[done.stdout.index("{") :])
    hosts = set()
    for ipu in _walk(config):
        hosts.add(ipu)
    assert hosts, config
    return hosts


def _walk(node: object) -> Iterator[str]:
    """Every device address (``ip``) in an IPUoF configuration."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "ip" and isinstance(value, str):
                yield value.split(":")[0]
            else:
                yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


def test_servers_of_one_vpod_meet_and_another_tenants_cannot(
    tenants: dict[str, httpx.Client],
) -> None:
    a, b = tenants["a"], tenants["b"]
    servers = _servers(a, "net-a")
    assert len(servers) == 2
    second = servers[1]["address"]
    listener = _listen(a, "net-a", 2, LISTENER)
    try:
        assert _probe(a, "net-a", second, 7000, server=1) == "OPEN"
        assert _probe(a, "net-a", servers[1]["name"], 7000, server=1) == "OPEN"  # /etc/hosts
        assert _probe(b, "net-b", second, 7000).startswith("CLOSED")
        # abstract Unix sockets belong to the server's network namespace
        assert in_shell(a, "net-a", f"python3 -c '{UNIX_PROBE}'", server=1).stdout.startswith(
            "CLOSED"
        )
        assert in_shell(b, "net-b", f"python3 -c '{UNIX_PROBE}'").stdout.startswith("CLOSED")
        assert in_shell(a, "net-a", f"python3 -c '{UNIX_PROBE}'", server=2).stdout.startswith(
            "OPEN"
        )
    finally:
        listener.kill()
        listener.wait()


def test_a_server_has_its_own_address_and_loopback(tenants: dict[str, httpx.Client]) -> None:
    a = tenants["a"]
    done = in_shell(a, "net-a", "ip -4 -o addr show 2>/dev/null || cat /proc/net/fib_trie")
    first = _servers(a, "net-a")[0]["address"]
    assert first in done.stdout
    assert "169.254." in first


def test_the_user_api_and_the_vpods_own_ipus_answer_from_inside(
    tenants: dict[str, httpx.Client],
) -> None:
    b = tenants["b"]
    hosts = _ipuof_hosts(b, "net-b", "netb1")
    assert all(h.startswith("169.254.") for h in hosts), hosts
    done = in_shell(
        b, "net-b", "IPUOF_VIPU_API_PARTITION_ID=netb1 vpod-workload --steps 1 --step-time 0 --json"
    )
    assert done.returncode == 0, done.stderr
    assert in_shell(b, "net-b", "vipu remove partition netb1").returncode == 0


def test_nothing_else_of_the_host_answers(
    live: LiveCloud, tenants: dict[str, httpx.Client]
) -> None:
    b, c = tenants["b"], tenants["c"]
    gateway = _gateway(b, "net-b")
    running = live.running
    assert running is not None
    # the user API answers at the gateway, the admin API on the same address does not
    assert _probe(b, "net-b", gateway, running.user_port) == "OPEN"
    assert _probe(b, "net-b", gateway, running.admin_port).startswith("CLOSED")
    # the controller's and the agents' loopback ports are the server's own loopback
    assert _probe(b, "net-b", "127.0.0.1", running.admin_port).startswith("CLOSED")
    for host in live.fleet.hosts[:3]:
        assert _probe(b, "net-b", host.host, host.port).startswith("CLOSED")
    # another vPOD's gateway and IPUoF endpoints
    assert _probe(b, "net-b", _gateway(c, "net-c"), running.user_port).startswith("CLOSED")
    others = _ipuof_hosts(c, "net-c", "netc1")
    mine = _ipuof_hosts(b, "net-b", "netb2")
    assert not others & mine
    port = _any_ipuof_port(live, others)
    for host in others:
        assert _probe(b, "net-b", host, port).startswith("CLOSED")
    for host in mine:
        assert _probe(b, "net-b", host, _any_ipuof_port(live, {host})) == "OPEN"
    # refusals changed nothing: C's partition is still there and ACTIVE
    listed = in_shell(c, "net-c", "vipu list partitions").stdout
    assert "netc1" in listed
    for client, cluster, partition in ((b, "net-b", "netb2"), (c, "net-c", "netc1")):
        assert in_shell(client, cluster, f"vipu remove partition {partition}").returncode == 0


def test_a_v_ipu_users_host_cannot_attach_a_tenants_ipus(
    live: LiveCloud, tenants: dict[str, httpx.Client]
) -> None:
    """The host (where V-IPU users' applications run) reaches the fabric, but the machines
    serve a vPOD's partition to its own servers only, and say nothing about it."""
    b = tenants["b"]
    done = in_shell(
        b, "net-b", "vipu create partition netb3 --size 4 >/dev/null && "
        "vipu get partition netb3 --ipuof-configs",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    config = json.loads(done.stdout[done.stdout.index("{") :])
    device = config["devices"][0]
    with socket.create_connection((device["ip"], device["server_port"]), timeout=10) as conn:
        conn.sendall(b"ATTACH netb3 pid=1 host=intruder cmd=steal\n")
        answer = conn.makefile().readline()
    assert answer.startswith("ERR"), answer
    assert "netb3" not in answer
    # the owner still attaches from its server
    owned = in_shell(
        b, "net-b", "IPUOF_VIPU_API_PARTITION_ID=netb3 vpod-workload --steps 1 --step-time 0"
    )
    assert owned.returncode == 0, owned.stderr
    assert in_shell(b, "net-b", "vipu remove partition netb3").returncode == 0


def test_resume_onto_other_machines_moves_what_a_server_reaches(
    live: LiveCloud, tenants: dict[str, httpx.Client]
) -> None:
    c, d = tenants["c"], tenants["d"]
    before = _ipuof_hosts(c, "net-c", "netc2")
    done = run_task(live, c, "POST", "/clusters/net-c/suspend")
    assert done["state"] == "FINISHED", done
    # D takes every machine left, C's old one among them, then gives back one of the others
    names = ["net-d1", "net-d2", "net-d3"]
    for name in names:
        task = run_task(live, d, "POST", "/clusters", json={"name": name, "flavor": SMALL})
        assert task["state"] == "FINISHED", task
    holding = {name: _machines_of(live, "net-d", name) for name in names}
    freed = next(name for name in names if not holding[name] & before)
    assert run_task(live, d, "DELETE", f"/clusters/{freed}")["state"] == "FINISHED"
    done = run_task(live, c, "POST", "/clusters/net-c/resume")
    assert done["state"] == "FINISHED", done
    after = _ipuof_hosts(c, "net-c", "netc2")
    assert after == holding[freed]
    assert not after & before
    for host in after:
        assert _probe(c, "net-c", host, _any_ipuof_port(live, {host})) == "OPEN"
    for host in before:  # now D's
        assert _probe(c, "net-c", host, _any_ipuof_port(live, {host})).startswith("CLOSED")
    in_shell(c, "net-c", "vipu remove partition netc2")


def _machines_of(live: LiveCloud, project: str, name: str) -> set[str]:
    """The IPUoF addresses of the machines in a cluster's allocation (asked of the cloud)."""
    ctx = live.cloud.ctx
    cluster = live.run(ctx.records.find_cluster(project, name))
    assert cluster is not None
    assert cluster.allocation_id is not None
    return set(live.run(ctx.vipu.ipuof_addresses(cluster.allocation_id)))


def _gateway(http: httpx.Client, cluster: str) -> str:
    done = in_shell(http, cluster, "cat /proc/net/route")
    for line in done.stdout.splitlines()[1:]:
        fields = line.split()
        if fields[1] == "00000000":  # the default route
            raw = bytes.fromhex(fields[2])
            return ".".join(str(b) for b in reversed(raw))
    raise AssertionError(f"no default route in {done.stdout}")


def _any_ipuof_port(live: LiveCloud, hosts: set[str]) -> int:
    """An IPUoF server port of a machine at one of ``hosts`` (tests pick ports at random)."""
    for host in live.fleet.hosts:
        machine = host.plan
        if machine.ipuof_host in hosts:
            ports = host.ipuof_ports
            if ports:
                return ports[0]
    raise AssertionError(f"no machine listens for IPUoF at {hosts}")


def test_the_vpods_nftables_table_names_only_its_own_reach(
    live: LiveCloud, tenants: dict[str, httpx.Client]
) -> None:
    listing = subprocess.run(
        ["nft", "-j", "list", "tables"], capture_output=True, text=True, check=True
    ).stdout
    tables = [t["table"]["name"] for t in json.loads(listing)["nftables"] if "table" in t]
    mine = [Path(live.data_dir).resolve()]
    assert any(name.startswith("vpodnet_vpb") for name in tables), (tables, mine)
