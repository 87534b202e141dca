"""Every ``vipu`` and ``vipu-admin`` command of vipu-system.md §6, run for real against a pod.

Tables are read the way docs/cli.md tells scripts to (header, rule, rows
split on ``|``) and their columns are checked by name and order; ``--json``
must parse; failures exit 2 for bad arguments and INVALID_ARGUMENT, 1 for
the rest, always with one line on stderr. A second cluster is built from
agents started here, to create and remove agents, clusters and allocations
without touching the pod's own.
"""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.live import agent_holdings
from tests.ports import closed_port

from .conftest import Pod
from .fixtures_cli import (
    EXTRA_PREFIX,
    ExtraAgents,
    assert_one_line_error,
    parse_table,
    run_cli,
    sh,
)

# fixture, used by its name extra_agents
from .fixtures_cli import extra_agents_fixture as extra_agents_fixture
from .fixtures_pods import AdminView, wait_until

PARTITION_COLUMNS = "Partition | Cluster | ILDs | GW Routing | ILD Routing | Size | GCDs | State"
POD_AGENTS = ",".join(f"ag{i}" for i in range(1, 17))
USAGE, REFUSED = 2, 1


def columns(text: str) -> str:
    """A table's column names joined as the spec writes them (``A | B | C``)."""
    return " | ".join(parse_table(text)[0])


def rows(text: str) -> list[dict[str, str]]:
    return parse_table(text)[1]


def partitions_of(pod: Pod) -> list[str]:
    return [
        p["id"] for p in json.loads(sh(pod, "vipu list partitions --json").stdout)["partitions"]
    ]


def field(text: str, name: str) -> str:
    """The value of ``Name: value`` in ``vipu get partition`` output."""
    match = re.search(rf"^{re.escape(name)}: +(.*)$", text, re.MULTILINE)
    assert match, f"no {name!r} line in:\n{text}"
    return match[1]


@pytest.fixture
def clean(pod64: Pod) -> Iterator[Pod]:
    """The module's pod, with every partition the test leaves behind force-removed afterwards."""
    yield pod64
    for pid in partitions_of(pod64):
        sh(pod64, f"vipu remove partition {pid} --force")


# --------------------------------------------------------------- vipu


def test_server_version_prints_version_then_host(pod64: Pod) -> None:
    """``--server-version``: ``version: X.Y.Z`` then ``host: HOST:PORT`` of the endpoint reached."""
    lines = sh(pod64, "vipu --server-version").stdout.splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"version: \d+\.\d+\.\d+", lines[0])
    assert lines[1] == f"host: 127.0.0.1:{pod64.user_port}"
    admin = sh(pod64, "vipu-admin --server-version").stdout.splitlines()
    assert admin == [lines[0], f"host: 127.0.0.1:{pod64.admin_port}"]


def test_partition_commands_with_their_options(clean: Pod) -> None:
    """create (every option), list, get, get --ipuof-configs [--gcd], status, reset, remove."""
    pod = clean
    created = sh(
        pod,
        "vipu create partition p --size 8 --allocation default --num-gcds 2 --num-replicas 4"
        " --sync-type pod-native-default --routing btnc --disable-auto-reset --relocatable",
    )
    assert created.stdout == "create partition (p): success.\n"

    listing = sh(pod, "vipu list partitions").stdout
    assert columns(listing) == PARTITION_COLUMNS
    assert [list(r.values()) for r in rows(listing)] == [
        ["p", "cluster", "1", "-", "BTNC", "8", "2", "ACTIVE"]
    ]
    spec = json.loads(sh(pod, "vipu list partitions --json").stdout)["partitions"][0]
    assert spec["spec"]["num_replicas"] == 4
    assert spec["spec"]["sync_type"] == "ST_POD_NATIVE_DEFAULT"
    assert spec["ready_state"] == "PS_ACTIVE"

    details = sh(pod, "vipu get partition p").stdout
    assert field(details, "Replicas") == "4"
    assert field(details, "Sync Type") == "pod-native-default"
    got = json.loads(sh(pod, "vipu get partition p --json").stdout)
    assert got["status"]["operation_state"] == "POS_IDLE"

    files = json.loads(sh(pod, "vipu get partition p --ipuof-configs").stdout)
    assert [f["attributes"]["GCD Id"] for f in files] == ["0", "1"]
    assert {f["attributes"]["Num Replicas"] for f in files} == {"2"}
    assert " ".join(files[0]["devices"][0]) == (
        "ip server_port rdma_port device_id ipulink_segment_id routing_id ipu_arch_id ipu_id"
        " chip_id gwsw_version"
    )
    one = json.loads(sh(pod, "vipu get partition p --ipuof-configs --gcd 1").stdout)
    assert one["attributes"]["GCD Id"] == "1"
    assert [d["routing_id"] for d in one["devices"]] == [4, 5, 6, 7]
    wire = json.loads(sh(pod, "vipu get partition p --ipuof-configs --json").stdout)
    assert wire["ipulink_routing_type"] == "IRT_BTNC"
    assert len(wire["gcd_configs"]) == 2

    assert field(sh(pod, "vipu get partition-status p").stdout, "State") == "ACTIVE"
    assert sh(pod, "vipu reset partition p").stdout == "reset partition (p): success.\n"
    assert sh(pod, "vipu remove partition p").stdout == "remove partition (p): success.\n"
    empty = sh(pod, "vipu list partitions").stdout
    assert columns(empty) == PARTITION_COLUMNS
    assert rows(empty) == []

    sh(pod, "vipu create partition r --size 4 --reconfigurable")
    listed = json.loads(sh(pod, "vipu list partitions --json").stdout)
    assert listed["partitions"][0]["spec"]["reconfigurable"] is True
    assert sh(pod, "vipu remove partition r --force").stdout == "remove partition (r): success.\n"


def test_global_options_work_after_the_command(pod64: Pod) -> None:
    """``vipu list partitions --api-port P`` is ``vipu --api-port P list partitions``."""
    bad = closed_port()
    for line in (
        f"vipu --api-port {bad} list partitions",
        f"vipu list partitions --api-port {bad}",
    ):
        done = sh(pod64, line, check=False)
        assert_one_line_error(
            done, REFUSED, f"cannot reach the V-IPU controller at 127.0.0.1:{bad}"
        )


def test_list_allocations_tables(pod64: Pod) -> None:
    """``Allocation ID | Agents`` for users; vipu-admin adds cluster, size, users, partitions."""
    listing = sh(pod64, "vipu list allocations").stdout
    assert columns(listing) == "Allocation ID | Agents"
    assert {"Allocation ID": "default", "Agents": POD_AGENTS} in rows(listing)
    admin = sh(pod64, "vipu-admin list allocations").stdout
    assert columns(admin) == (
        "Allocation ID | Agents | Cluster | Size | Users | Partitions | IPUoF Hosts"
    )
    default = next(r for r in rows(admin) if r["Allocation ID"] == "default")
    assert list(default.values())[1:5] == [POD_AGENTS, "cluster", "64", "default"]


@pytest.mark.parametrize("tool", ["vipu", "vipu-admin"])
def test_list_ipu_attrs_one_row_per_attribute(pod64: Pod, tool: str) -> None:
    """``Agent | IPU | Attribute | Value`` with board type, serial, clock, firmware, driver."""
    listing = sh(pod64, f"{tool} list ipu-attrs --agents ag2").stdout
    assert columns(listing) == "Agent | IPU | Attribute | Value"
    found = rows(listing)
    assert {r["Agent"] for r in found} == {"ag2"}
    assert {r["IPU"] for r in found} == {"0", "1", "2", "3"}
    names = {r["Attribute"] for r in found}
    wanted = {"board type", "board serial number", "clock", "firmware version", "driver version"}
    assert wanted <= names
    assert {r["Value"] for r in found if r["Attribute"] == "board type"} == {"Bow-2000"}
    everyone = json.loads(sh(pod64, f"{tool} list ipu-attrs --json").stdout)
    assert sorted(e["agent"] for e in everyone["entries"]) == sorted(POD_AGENTS.split(","))


# ------------------------------------------------------------- vipu-admin


def test_admin_list_partitions_starts_with_the_user_columns(clean: Pod) -> None:
    """vipu-admin's partition table is vipu's eight columns, then Allocation, Operation, Agents."""
    sh(clean, "vipu create partition a --size 8")
    listing = sh(clean, "vipu-admin list partitions").stdout
    assert columns(listing) == f"{PARTITION_COLUMNS} | Allocation | Operation | Agents"
    [row] = rows(listing)
    assert (row["Allocation"], row["Operation"]) == ("default", "IDLE")
    assert len(row["Agents"].split(",")) == 2


def test_list_agents_shows_machines_and_active_faults(pod64: Pod) -> None:
    """One row per agent with where it listens; an injected fault shows in Faults until cleared."""
    listing = sh(pod64, "vipu-admin list agents").stdout
    assert columns(listing) == (
        "Agent | Host | Port | Type | Serial | Cluster | Allocation | State | Faults"
    )
    ag9 = next(r for r in rows(listing) if r["Agent"] == "ag9")
    assert [ag9[c] for c in ("Port", "Type", "Cluster", "Allocation", "State", "Faults")] == [
        "8092", "Bow-2000", "cluster", "default", "ONLINE", "-",
    ]  # fmt: skip

    def faults() -> str:
        listed = rows(sh(pod64, "vipu-admin list agents").stdout)
        return next(r["Faults"] for r in listed if r["Agent"] == "ag9")

    sh(pod64, "vipu-admin inject fault --agent ag9 --kind ipu --device 2 --reason drill")
    try:
        wait_until(lambda: faults() == "ipu(2)", "ag9 lists its IPU fault")
    finally:
        sh(pod64, "vipu-admin clear fault --agent ag9 --all")
    wait_until(lambda: faults() == "-", "ag9 lists no fault once cleared")


def test_list_agents_names_the_ipuof_address(clean: Pod) -> None:
    """``list agents --json`` gives each machine's IPUoF address, the ip its devices carry."""
    sh(clean, "vipu create partition x --size 4")
    config = json.loads(sh(clean, "vipu get partition x --ipuof-configs").stdout)
    holder = AdminView(clean).locations("x")[0]["agent_id"]
    assert AdminView(clean).agents()[holder]["ipuof_address"] == config["devices"][0]["ip"]


def test_list_clusters_and_test_cluster(pod64: Pod) -> None:
    """The pod's cluster is listed; ``test cluster`` prints one passing row per test."""
    listing = sh(pod64, "vipu-admin list clusters").stdout
    assert columns(listing) == "Cluster | Agents | ILDs | Topology | Cluster Topology | IPUs | Type"
    cluster = next(r for r in rows(listing) if r["Cluster"] == "cluster")
    assert list(cluster.values())[1:] == [POD_AGENTS, "1", "torus", "looped", "64", "Bow-2000"]
    tested = sh(pod64, "vipu-admin test cluster cluster").stdout
    assert columns(tested) == "Test | Result | Agents Tested | Agents Failed | Summary"
    results = rows(tested)
    assert [r["Test"] for r in results] == [
        "cabling",
        "IPU-Link",
        "GW-Link",
        "Sync-Link",
        "traffic",
    ]
    assert {(r["Result"], r["Agents Tested"], r["Agents Failed"]) for r in results} == {
        ("passed", "16", "0")
    }


def test_test_cluster_runs_only_the_tests_asked_for(pod64: Pod) -> None:
    """``--tests cabling,sync-link`` prints those two rows only."""
    done = sh(pod64, "vipu-admin test cluster cluster --tests cabling,sync-link")
    assert [r["Test"] for r in rows(done.stdout)] == ["cabling", "Sync-Link"]


def test_test_cluster_names_a_broken_link_and_exits_1(pod64: Pod) -> None:
    """A GW-Link that is down fails its test: the table, lines naming agent and link, exit 1."""
    sh(pod64, "vipu-admin inject fault --agent ag5 --kind link --link gwlink1")
    try:
        done = sh(pod64, "vipu-admin test cluster cluster", check=False)
    finally:
        sh(pod64, "vipu-admin clear fault --agent ag5 --all")
    error = assert_one_line_error(done, REFUSED, "cluster cluster failed", after_table=True)
    assert "GW-Link" in error
    gw = next(r for r in rows(done.stdout) if r["Test"] == "GW-Link")
    assert (gw["Result"], gw["Agents Failed"]) == ("FAILED", "1")
    assert re.search(r"^GW-Link: ag5: .*gwlink1", done.stdout, re.MULTILINE), done.stdout
    assert sh(pod64, "vipu-admin test cluster cluster").returncode == 0


def test_create_user_writes_a_config_file_that_works(pod64: Pod, tmp_path: Path) -> None:
    """The key is printed once and written to ID.vipu-cli.hcl (owner-only) that vipu can use."""
    done = sh(pod64, f"vipu-admin create user alice --allocations default --output {tmp_path}")
    try:
        lines = done.stdout.splitlines()
        assert lines[0] == "create user (alice): success."
        key = lines[1].removeprefix("access key: ")
        assert len(key) >= 16
        assert done.stdout.count(key) == 1
        path = tmp_path / "alice.vipu-cli.hcl"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        text = path.read_text()
        assert 'api-user-id="alice"' in text
        assert f'api-access-key="{key}"' in text
        assert f"api-port={pod64.user_port}" in text

        def as_alice(line: str) -> str:
            done = run_cli("vipu", "--config", str(path), *line.split(), cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            return done.stdout

        assert as_alice("create partition mine --size 1") == "create partition (mine): success.\n"
        assert [r["Partition"] for r in rows(as_alice("list partitions"))] == ["mine"]
        assert "default" in as_alice("list allocations")
        as_alice("remove partition mine")
        users = sh(pod64, "vipu-admin list users").stdout
        assert columns(users) == "User | Admin | Allocations | Created"
        alice = next(u for u in rows(users) if u["User"] == "alice")
        assert (alice["Admin"], alice["Allocations"]) == ("no", "default")
    finally:
        removed = sh(pod64, "vipu-admin remove user alice")
    assert removed.stdout == "remove user (alice): success.\n"
    assert "alice" not in sh(pod64, "vipu-admin list users").stdout


def test_list_users_says_when_each_user_was_created(pod64: Pod) -> None:
    """The Created column holds an RFC 3339 time for every user."""
    users = rows(sh(pod64, "vipu-admin list users").stdout)
    assert users
    for user in users:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", user["Created"]), user


# ----------------------------------------------------- a second cluster


def test_self_registered_agents_are_listed_and_discoverable(
    pod64: Pod, extra_agents: ExtraAgents
) -> None:
    """Agents that registered appear in ``list agents``; ``discover agent`` probes their address."""
    listed = rows(sh(pod64, "vipu-admin list agents").stdout)
    mine = {r["Agent"]: r for r in listed if r["Agent"].startswith(EXTRA_PREFIX)}
    assert sorted(mine) == extra_agents.ids
    for agent_id, (host, port) in extra_agents.addresses.items():
        assert (mine[agent_id]["Host"], mine[agent_id]["Port"]) == (host, str(port))
        assert mine[agent_id]["Cluster"] == "-"
    probe = sh(pod64, f"vipu-admin discover agent --address {extra_agents.address('xa1')}").stdout
    assert columns(probe) == "Agent | Host | Port | Type | Serial | Known | Added | Error"
    [found] = rows(probe)
    assert (found["Agent"], found["Known"], found["Added"]) == ("xa1", "yes", "no")
    nobody = f"127.0.0.1:{closed_port()}"
    failed = sh(pod64, f"vipu-admin discover agent --address {nobody}", check=False)
    assert_one_line_error(failed, REFUSED, f"could not be probed: {nobody}", after_table=True)


def test_remove_and_create_agent(pod64: Pod, extra_agents: ExtraAgents) -> None:
    """``remove agent`` forgets it; ``create agent`` or ``discover agent --add`` brings it back."""
    address = extra_agents.address("xa4")
    host, port = extra_agents.addresses["xa4"]
    assert sh(pod64, "vipu-admin remove agent xa4").stdout == "remove agent (xa4): success.\n"
    assert "xa4" not in AdminView(pod64).agents()
    [probe] = rows(sh(pod64, f"vipu-admin discover agent --address {address}").stdout)
    assert probe["Known"] == "no"
    created = sh(pod64, f"vipu-admin create agent xa4 --host {host} --port {port}")
    assert created.stdout == "create agent (xa4): success.\n"
    agent = AdminView(pod64).agents()["xa4"]
    assert (agent["host"], agent["port"]) == (host, port)
    sh(pod64, "vipu-admin remove agent xa4")
    added = json.loads(
        sh(pod64, f"vipu-admin discover agent --address {address} --add --json").stdout
    )
    assert added["agents"][0]["added"] is True
    assert "xa4" in AdminView(pod64).agents()


def test_cluster_and_allocation_life_cycle(pod64: Pod, extra_agents: ExtraAgents) -> None:
    """create cluster, test it, allocate, partition in it, then remove in reverse order."""
    agents = ",".join(extra_agents.ids)
    sh(
        pod64,
        f"vipu-admin create cluster c2 --agents {agents} --num-ipulinkdomains 1 --topology mesh"
        " --cluster-topology looped",
    )
    try:
        c2 = next(
            r for r in rows(sh(pod64, "vipu-admin list clusters").stdout) if r["Cluster"] == "c2"
        )
        assert list(c2.values())[1:] == [agents, "1", "mesh", "looped", "16", "Bow-2000"]
        tested = rows(sh(pod64, "vipu-admin test cluster c2").stdout)
        assert {(r["Result"], r["Agents Tested"]) for r in tested} == {("passed", "4")}

        bad = sh(pod64, "vipu-admin create allocation a2 --cluster c2 --size 12", check=False)
        assert_one_line_error(bad, USAGE, "allocation size 12 is not supported")
        made = sh(pod64, "vipu-admin create allocation a2 --cluster c2 --size 8").stdout
        assert made.splitlines()[0] == "create allocation (a2): success."
        listed = rows(sh(pod64, "vipu-admin list allocations").stdout)
        a2 = next(r for r in listed if r["Allocation ID"] == "a2")
        assert (a2["Cluster"], a2["Size"], len(a2["Agents"].split(","))) == ("c2", "8", 2)

        sh(pod64, "vipu create partition on-c2 --size 8 --allocation a2")
        partition = next(
            r for r in rows(sh(pod64, "vipu list partitions").stdout) if r["Partition"] == "on-c2"
        )
        assert (partition["Cluster"], partition["ILD Routing"]) == ("c2", "SWNC")
        held = {loc["agent_id"] for loc in AdminView(pod64).locations("on-c2")}
        assert held == set(a2["Agents"].split(","))
        busy = sh(pod64, "vipu-admin remove allocation a2", check=False)
        assert_one_line_error(busy, REFUSED, "remove its partitions first")
        sh(pod64, "vipu remove partition on-c2")
        gone = sh(pod64, "vipu-admin remove allocation a2").stdout
        assert gone == "remove allocation (a2): success.\n"
    finally:
        sh(pod64, "vipu remove partition on-c2 --force", check=False)
        sh(pod64, "vipu-admin remove allocation a2", check=False)
        removed = sh(pod64, "vipu-admin remove cluster c2", check=False)
    assert removed.stdout == "remove cluster (c2): success.\n", removed.stderr
    clusters = json.loads(sh(pod64, "vipu-admin list clusters --json").stdout)["clusters"]
    assert "c2" not in [c["id"] for c in clusters]


def test_remove_agent_with_force_takes_its_cluster_along(
    pod64: Pod, extra_agents: ExtraAgents
) -> None:
    """An agent in a cluster is refused without ``--force``; with it the cluster goes first
    (its allocation and partition with it) and the cluster's other agents stay registered."""
    agents = ",".join(extra_agents.ids)
    victim = extra_agents.ids[0]
    host, port = extra_agents.addresses[victim]
    sh(pod64, f"vipu-admin create cluster c3 --agents {agents} --num-ipulinkdomains 1")
    try:
        sh(pod64, "vipu-admin create allocation a3 --cluster c3 --size 8")
        sh(pod64, "vipu create partition on-c3 --size 8 --allocation a3")
        holders = {loc["agent_id"] for loc in AdminView(pod64).locations("on-c3")}
        refused = sh(pod64, f"vipu-admin remove agent {victim}", check=False)
        assert_one_line_error(refused, REFUSED, victim)
        done = sh(pod64, f"vipu-admin remove agent {victim} --force").stdout
        assert done == f"remove agent ({victim}): success.\n"
        registered = AdminView(pod64).agents()
        assert victim not in registered
        assert set(extra_agents.ids[1:]) <= set(registered)
        clusters = json.loads(sh(pod64, "vipu-admin list clusters --json").stdout)["clusters"]
        assert "c3" not in [c["id"] for c in clusters]
        partitions = rows(sh(pod64, "vipu list partitions").stdout)
        assert "on-c3" not in [r["Partition"] for r in partitions]
        for holder in holders:  # released on its agent, not just forgotten
            _, held = agent_holdings(extra_agents.address(holder))
            assert [h.partition_id for h in held] == []
    finally:
        sh(pod64, "vipu remove partition on-c3 --force", check=False)
        sh(pod64, "vipu-admin remove allocation a3", check=False)
        sh(pod64, "vipu-admin remove cluster c3", check=False)
        if victim not in AdminView(pod64).agents():
            sh(pod64, f"vipu-admin create agent {victim} --host {host} --port {port}")


# ------------------------------------------------------------ JSON and errors


@pytest.mark.parametrize(
    "command",
    [
        "vipu list partitions",
        "vipu list allocations",
        "vipu list ipu-attrs",
        "vipu-admin list agents",
        "vipu-admin list clusters",
        "vipu-admin list allocations",
        "vipu-admin list users",
        "vipu-admin list partitions",
        "vipu-admin list ipu-attrs",
        "vipu-admin test cluster cluster",
        "vipu-admin discover agent",
    ],
)
def test_every_listing_has_json(pod64: Pod, command: str) -> None:
    """``--json`` prints one JSON object (the wire reply) and nothing else."""
    data = json.loads(sh(pod64, f"{command} --json").stdout)
    assert isinstance(data, dict)
    assert data


def json_of(pod: Pod, line: str) -> dict[str, object]:
    """What ``line --json`` printed: exactly one JSON object."""
    data = json.loads(sh(pod, f"{line} --json").stdout)
    assert isinstance(data, dict)
    return data


def test_every_change_prints_json_for_scripts(
    clean: Pod, extra_agents: ExtraAgents, tmp_path: Path
) -> None:
    """With ``--json`` a create or reset prints what it made, as ``get``/``list --json`` show
    it; a removal names what went. Each change really happened."""
    pod = clean
    made = json_of(pod, "vipu create partition j1 --size 2")
    assert made == json_of(pod, "vipu get partition j1")
    partition = made["partition"]
    assert isinstance(partition, dict)
    assert (partition["id"], partition["ready_state"]) == ("j1", "PS_ACTIVE")
    assert len(partition["spec"]["ipus"]) == 2
    after_reset = json_of(pod, "vipu reset partition j1")
    assert after_reset["partition"] == partition
    assert json_of(pod, "vipu remove partition j1") == {"partition_id": "j1", "removed": True}
    assert "j1" not in partitions_of(pod)

    agents = extra_agents.ids
    cluster = json_of(pod, f"vipu-admin create cluster cj --agents {','.join(agents)}")
    try:
        assert (cluster["id"], cluster["agent_ids"], cluster["num_ipus"]) == ("cj", agents, 16)
        allocation = json_of(pod, "vipu-admin create allocation aj --cluster cj --size 8")
        assert (allocation["size"], len(allocation["allocation"]["spec"]["agent_ids"])) == (8, 2)
        listed = json_of(pod, "vipu-admin list allocations")["allocations"]
        assert allocation in listed
        gone = json_of(pod, "vipu-admin remove allocation aj")
        assert gone == {"allocation_id": "aj", "removed": True}
    finally:
        sh(pod, "vipu-admin remove allocation aj", check=False)
        removed = json_of(pod, "vipu-admin remove cluster cj")
    assert removed == {"cluster_id": "cj", "removed": True}

    host, port = extra_agents.addresses[agents[-1]]
    assert json_of(pod, f"vipu-admin remove agent {agents[-1]}") == {
        "agent_id": agents[-1],
        "removed": True,
    }
    agent = json_of(pod, f"vipu-admin create agent {agents[-1]} --host {host} --port {port}")
    assert (agent["id"], agent["host"], agent["port"]) == (agents[-1], host, port)

    user = json_of(pod, f"vipu-admin create user uj --output {tmp_path}")
    assert user["user"]["id"] == "uj"
    assert json_of(pod, "vipu-admin remove user uj") == {"user_id": "uj", "removed": True}
    token = json_of(pod, "vipu-admin create agent-token --label j")["agent_token"]
    assert json_of(pod, f"vipu-admin remove agent-token {token['id']}") == {
        "agent_token_id": token["id"],
        "removed": True,
    }
    listed_tokens = json_of(pod, "vipu-admin list agent-tokens").get("agent_tokens", [])
    assert token["id"] not in [t["id"] for t in listed_tokens]


ERRORS: list[tuple[str, int, str]] = [
    ("vipu create partition p --size abc", USAGE, "'abc' is not a whole number"),
    ("vipu create partition p", USAGE, "Missing option '--size'"),
    ("vipu create partition p --size 3", USAGE, "partition size 3 is not supported"),
    ("vipu create partition p --size 4 --sync-type bogus", USAGE, "unknown sync type 'bogus'"),
    ("vipu create partition p --size 4 --routing zz", USAGE, "unknown IPU-Link routing 'zz'"),
    ("vipu create partition p --size 16 --num-ilds 2 --num-gcds 2", USAGE, "single domain"),
    ("vipu create partition p --size 16 --gw-routing ring", USAGE, "several IPU-Link segments"),
    ("vipu frobnicate", USAGE, "No such command 'frobnicate'"),
    ("vipu get partition p --gcd 1", USAGE, "add --ipuof-configs"),
    ("vipu --config /nonexistent.hcl list partitions", USAGE, "/nonexistent.hcl does not exist"),
    ("vipu remove partition ghost", REFUSED, "partition ghost does not exist"),
    ("vipu reset partition ghost", REFUSED, "partition ghost does not exist"),
    ("vipu get partition ghost --ipuof-configs", REFUSED, "partition ghost does not exist"),
    ("vipu create partition p --size 4 --allocation nope", REFUSED, "allocation nope does not"),
    ("vipu-admin create allocation x --cluster cluster --size 12", USAGE, "size 12 is not"),
    ("vipu-admin create cluster x --agents nobody", USAGE, "nobody"),
    ("vipu-admin test cluster cluster --tests bogus", USAGE, "unknown test 'bogus'"),
    ("vipu-admin inject fault --agent ag1 --kind ipu", USAGE, "--kind ipu needs --device"),
    ("vipu-admin remove cluster cluster", REFUSED, "cluster"),
    ("vipu-admin remove agent ag1", REFUSED, "ag1"),
    ("vipu-admin test cluster nocluster", REFUSED, "nocluster"),
]


@pytest.mark.parametrize(("line", "code", "fragment"), ERRORS, ids=[e[0][:50] for e in ERRORS])
def test_errors_exit_with_one_line(pod64: Pod, line: str, code: int, fragment: str) -> None:
    """Usage errors and INVALID_ARGUMENT exit 2, other refusals 1; one line, no traceback."""
    assert_one_line_error(sh(pod64, line, check=False), code, fragment)


def test_capacity_and_duplicates_exit_1(clean: Pod) -> None:
    """RESOURCE_EXHAUSTED and ALREADY_EXISTS are refusals (1), with the controller's sentence."""
    sh(clean, "vipu create partition all --size 64")
    full = sh(clean, "vipu create partition more --size 1", check=False)
    assert_one_line_error(full, REFUSED, "does not fit")
    taken = sh(clean, "vipu create partition all --size 4", check=False)
    assert_one_line_error(taken, REFUSED, "partition all already exists with 64 IPUs")
    repeat = sh(clean, "vipu create partition all --size 64")
    assert repeat.stdout == "create partition (all): success.\n"
    busy = sh(clean, "vipu-admin remove allocation default", check=False)
    assert_one_line_error(busy, REFUSED, "remove its partitions first")


# ------------------------------------------------------- settings precedence


def write_config(path: Path, **values: str | int) -> Path:
    """A vipu-cli.hcl with these keys (``api_port`` is written ``api-port``)."""
    lines = [
        f"{k.replace('_', '-')}={v}" if isinstance(v, int) else f'{k.replace("_", "-")}="{v}"'
        for k, v in values.items()
    ]
    path.write_text("# written by the test\n" + "\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("in_file", "in_env", "on_flag", "winner"),
    [
        pytest.param("good", None, None, "file", id="file-alone"),
        pytest.param("bad", "good", None, "env", id="env-beats-file"),
        pytest.param("good", "bad", None, "env", id="bad-env-beats-good-file"),
        pytest.param("bad", "bad", "good", "flag", id="flag-beats-env-and-file"),
        pytest.param("good", "good", "bad", "flag", id="bad-flag-beats-good-env"),
    ],
)
def test_flag_beats_environment_beats_config_file(
    pod64: Pod,
    tmp_path: Path,
    in_file: str,
    in_env: str | None,
    on_flag: str | None,
    winner: str,
) -> None:
    """``--api-port`` over ``VIPU_CLI_*`` over the config file, for the user and admin ports."""
    bad = closed_port()
    for tool, good, key in (
        ("vipu", pod64.user_port, "api_port"),
        ("vipu-admin", pod64.admin_port, "admin_api_port"),
    ):
        port = {"good": good, "bad": bad}
        config = write_config(
            tmp_path / f"{tool}.hcl", api_host="127.0.0.1", **{key: port[in_file]}
        )
        env = {"VIPU_CLI_CONFIG": str(config)}
        if in_env is not None:
            env["VIPU_CLI_" + key.upper()] = str(port[in_env])
        flag = [] if on_flag is None else ["--api-port", str(port[on_flag])]
        done = run_cli(tool, *flag, "--server-version", env=env, cwd=tmp_path)
        chosen = {"file": in_file, "env": in_env, "flag": on_flag}[winner]
        if chosen == "good":
            assert done.returncode == 0, done.stderr
            assert done.stdout.splitlines()[1] == f"host: 127.0.0.1:{good}"
        else:
            reach = f"cannot reach the V-IPU controller at 127.0.0.1:{bad}"
            assert_one_line_error(done, REFUSED, reach)


def test_config_file_in_the_working_directory_is_found(pod64: Pod, tmp_path: Path) -> None:
    """Without --config or VIPU_CLI_CONFIG, ./vipu-cli.hcl is read."""
    write_config(tmp_path / "vipu-cli.hcl", api_host="127.0.0.1", api_port=pod64.user_port)
    done = run_cli("vipu", "--server-version", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == f"host: 127.0.0.1:{pod64.user_port}"
