"""Direct SSH ports without a live cloud: the setting, and the store that hands ports out.

The store runs on real SQLite with the real migrations: a port is held by
one server at most, a server holds one port, deleting the server (or its
cluster) frees it, a range that runs out assigns what it can and says so by
leaving the rest out, a range the operator moved gives servers new ports,
and two threads assigning at once never hand out one port twice.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from vpod.cloud.direct_ports import PortRange, exhausted, parse_port_range
from vpod.cloud.model import errors
from vpod.cloud.settings import CloudSettings, parse_settings
from vpod.store import Store
from vpod.store.cloud_records import ClusterRecord, ProjectRecord, ServerRecord, TaskRecord
from vpod.store.cloud_store import CloudStore
from vpod.store.errors import Conflict

NOW = datetime(2026, 5, 1, tzinfo=UTC)


# -- the setting --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", None),
        ("  ", None),
        ("20000-20999", PortRange(20000, 20999)),
        ("2222", PortRange(2222, 2222)),
        (" 1024-65535 ", PortRange(1024, 65535)),
    ],
)
def test_a_port_range_reads_first_dash_last_and_empty_is_off(
    text: str, expected: PortRange | None
) -> None:
    assert parse_port_range(text) == expected


@pytest.mark.parametrize("text", ["20999-20000", "22-80", "20000-70000", "a-b", "20000-", "-5"])
def test_a_bad_port_range_is_refused_saying_what_to_give(text: str) -> None:
    with pytest.raises(errors.InvalidArgument, match="such as 20000-20999"):
        parse_port_range(text)


def test_the_settings_keep_the_option_off_by_default_and_check_what_is_given(
    tmp_path: Path,
) -> None:
    default = CloudSettings(data_dir=tmp_path)
    assert default.direct_ports is None
    assert default.ssh_direct_bind == "127.0.0.1"
    read = parse_settings(
        {"ssh_direct_ports": "21000-21009", "ssh_direct_bind": "0.0.0.0"},
        data_dir=tmp_path,
        source="cloud.toml",
    )
    assert read.direct_ports == PortRange(21000, 21009)
    assert read.direct_ports.size == 10
    assert 21009 in read.direct_ports
    assert 21010 not in read.direct_ports
    with pytest.raises(errors.InvalidArgument, match=r"cloud\.toml: ssh_direct_ports"):
        parse_settings({"ssh_direct_ports": "21009-21000"}, data_dir=tmp_path, source="cloud.toml")
    with pytest.raises(errors.InvalidArgument, match="IP address to listen on"):
        parse_settings({"ssh_direct_bind": "localhost:22"}, data_dir=tmp_path, source="x")
    with pytest.raises(errors.InvalidArgument, match="host name or address clients dial"):
        parse_settings({"ssh_direct_host": "a b\nProxyCommand x"}, data_dir=tmp_path, source="x")
    named = parse_settings({"ssh_direct_host": "ssh.example.net"}, data_dir=tmp_path, source="x")
    assert named.ssh_direct_host == "ssh.example.net"
    with pytest.raises(errors.InvalidArgument, match="must be a str"):
        parse_settings({"ssh_direct_ports": 20000}, data_dir=tmp_path, source="x")
    with pytest.raises(errors.InvalidArgument, match="leave ssh_direct_ports out"):
        parse_settings(
            {"ssh_direct_ports": "21000-21009", "compute_driver": "openstack"},
            data_dir=tmp_path,
            source="x",
        )


def test_running_out_names_the_range_what_is_free_and_what_to_do() -> None:
    refusal = exhausted(PortRange(20000, 20001), 0, 1, "cluster c1")
    assert isinstance(refusal, errors.NoCapacity)
    assert "cluster c1 needs 1 direct SSH port(s)" in str(refusal)
    assert "20000-20001 has 0 free" in str(refusal)
    assert "ssh_direct_ports" in str(refusal)


# -- the store ----------------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CloudStore]:
    with Store.open(f"sqlite:///{tmp_path / 'vpod.db'}") as base:
        base.migrate()
        cloud = CloudStore.of(base)
        cloud.add_project(ProjectRecord("acme", "Acme", {}, NOW))
        yield cloud


def _cluster(store: CloudStore, cid: str, servers: int) -> list[str]:
    record = ClusterRecord(
        id=cid,
        project_id="acme",
        name=cid,
        flavor="g3-ai-16-116-600-a100-80-1",
        kind="gpu_vm",
        status="NEW",
        image="img",
        server_count=servers,
        ipus=0,
        gpu_family="a100-80",
        gpus=servers,
        created_at=NOW,
        updated_at=NOW,
    )
    made = [
        ServerRecord(f"{cid}-sv{n}", cid, n, f"{cid}-{n}", "BUILD", "img", NOW, NOW)
        for n in range(1, servers + 1)
    ]
    task = TaskRecord(f"t-{cid}", "acme", "create", "cluster", cid, cid, "NEW", NOW, NOW)
    store.create_cluster(record, made, task)
    return [s.id for s in made]


def test_servers_get_the_lowest_free_ports_and_keep_them(store: CloudStore) -> None:
    ports = store.ssh_ports
    a = _cluster(store, "a", 2)
    assert ports.assign(a, 20000, 20009, NOW) == {a[0]: 20000, a[1]: 20001}
    assert ports.assign(a, 20000, 20009, NOW) == {a[0]: 20000, a[1]: 20001}  # idempotent
    b = _cluster(store, "b", 1)
    assert ports.assign(b, 20000, 20009, NOW) == {b[0]: 20002}
    assert ports.held() == {20000: a[0], 20001: a[1], 20002: b[0]}
    assert ports.holder(20002) == (b[0], "b")
    assert ports.holder(20003) is None
    assert ports.of_servers([a[1], b[0], "nobody"]) == {a[1]: 20001, b[0]: 20002}
    assert ports.free_count(20000, 20009) == 7
    assert ports.assign(["nobody"], 20000, 20009, NOW) == {}  # no such server: nothing held


def test_deleting_a_server_or_its_cluster_frees_its_port_for_the_next(store: CloudStore) -> None:
    ports = store.ssh_ports
    a = _cluster(store, "a", 2)
    ports.assign(a, 20000, 20001, NOW)
    store.delete_server(a[0])
    assert ports.held() == {20001: a[1]}
    b = _cluster(store, "b", 1)
    assert ports.assign(b, 20000, 20001, NOW) == {b[0]: 20000}  # the freed port, again
    store.delete_cluster("a")
    assert ports.held() == {20000: b[0]}
    assert ports.free_count(20000, 20001) == 1


def test_an_exhausted_range_assigns_what_it_can_and_leaves_the_rest_out(
    store: CloudStore,
) -> None:
    ports = store.ssh_ports
    a = _cluster(store, "a", 3)
    got = ports.assign(a, 20000, 20001, NOW)
    assert got == {a[0]: 20000, a[1]: 20001}
    assert ports.free_count(20000, 20001) == 0
    assert ports.servers_needing(20000, 20001) == [a[2]]


def test_a_moved_range_gives_servers_ports_of_the_new_one(store: CloudStore) -> None:
    ports = store.ssh_ports
    a = _cluster(store, "a", 2)
    ports.assign(a, 20000, 20009, NOW)
    assert sorted(ports.servers_needing(30000, 30009)) == sorted(a)
    assert ports.assign(a, 30000, 30009, NOW) == {a[0]: 30000, a[1]: 30001}
    assert ports.held() == {30000: a[0], 30001: a[1]}
    assert ports.servers_needing(30000, 30009) == []


def test_two_controllers_assigning_at_once_never_share_a_port(store: CloudStore) -> None:
    a, b = _cluster(store, "a", 1), _cluster(store, "b", 1)
    barrier, results, lost = threading.Barrier(2), [], []

    def assign(servers: list[str]) -> None:
        barrier.wait()
        for _ in range(5):
            try:
                results.append(store.ssh_ports.assign(servers, 20000, 20001, NOW))
                return
            except Conflict:
                lost.append(servers)

    threads = [threading.Thread(target=assign, args=(s,)) for s in (a, b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    held = store.ssh_ports.held()
    assert sorted(held) == [20000, 20001]
    assert sorted(held.values()) == sorted(a + b)
    assert len(results) == 2


# -- the command lines ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "flag", "value", "said"),
    [
        ("vipu-server", "--ssh-direct-ports", "20999-20000", "such as 20000-20999"),
        ("vipu-server", "--ssh-direct-bind", "every", "IP address to listen on"),
        ("vpod", "--ssh-direct-ports", "80", "such as 20000-20999"),
        ("vpod", "--ssh-direct-bind", "localhost", "IP address to listen on"),
    ],
)
def test_a_bad_range_or_address_on_the_command_line_is_exit_2_before_anything_starts(
    tmp_path: Path, tool: str, flag: str, value: str, said: str
) -> None:
    data_dir = tmp_path / "data"
    argv = [str(Path(sys.executable).with_name(tool))]
    argv += ["up"] if tool == "vpod" else []
    argv += ["--data-dir", str(data_dir), flag, value]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ")
    assert flag in line
    assert said in line
    assert not data_dir.exists()  # nothing was set up
