"""``vipu-admin`` against a controller double: inventory, users, tests, faults."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tests.cli.conftest import Run, endpoint_env, table_rows
from tests.cli.fake_controller import RunningFake
from vpod.cli.config import parse_hcl
from vpod.wire import admin_pb2 as apb
from vpod.wire import agent_pb2 as agpb


@pytest.fixture
def cluster(vipu_admin: Run) -> None:
    """Two agents in cluster c1."""
    for n in (1, 2):
        created = vipu_admin("create", "agent", f"m{n}", "--host", "h", "--port", str(n))
        assert created.exit_code == 0
    assert vipu_admin("create", "cluster", "c1", "--agents", "m1,m2").exit_code == 0


def test_admin_calls_go_to_the_admin_endpoint(vipu_admin: Run, fake: RunningFake) -> None:
    """-H/--api-port on vipu-admin name the admin endpoint (the admin port wins over env)."""
    env = {"VIPU_CLI_ADMIN_API_PORT": "1"}
    result = vipu_admin("--api-port", str(fake.admin_port), "--server-version", env=env)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"version: 1.18.0\nhost: 127.0.0.1:{fake.admin_port}\n"


def test_agents_create_list_remove(vipu_admin: Run, fake: RunningFake) -> None:
    """create agent sends id/host/port; list shows the table; remove --force reaches the wire."""
    result = vipu_admin("create", "agent", "m1", "--host", "10.1.0.1", "--port", "8092")
    assert (result.exit_code, result.stdout) == (0, "create agent (m1): success.\n")
    assert fake.state.calls_to("CreateAgent")[0].request == apb.CreateAgentRequest(
        agent_id="m1", host="10.1.0.1", port=8092
    )
    rows = table_rows(vipu_admin("list", "agents").stdout)
    assert rows == [
        ["Agent", "Host", "Port", "Type", "Serial", "Cluster", "Allocation", "State", "Faults"],
        ["m1", "10.1.0.1", "8092", "Bow-2000", "S-m1", "-", "-", "ONLINE", "-"],
    ]
    assert vipu_admin("remove", "agent", "m1", "--force").exit_code == 0
    assert fake.state.calls_to("RemoveAgent")[0].request.force


def test_removing_an_agent_in_use_shows_the_controllers_advice(
    vipu_admin: Run, cluster: None
) -> None:
    """FAILED_PRECONDITION: exit 1 with the server's sentence."""
    result = vipu_admin("remove", "agent", "m1")
    assert result.exit_code == 1
    assert result.stderr == (
        "vipu-admin: error: agent m1 is in cluster c1: remove the cluster first or use --force\n"
    )


def test_discover_lists_what_it_found_and_fails_on_unreachable_addresses(
    vipu_admin: Run, fake: RunningFake
) -> None:
    """One row per address; a failed probe makes the exit status 1 after the table."""
    result = vipu_admin("discover", "agent", "--address", "h:5,unreachable:6", "--add")
    assert result.exit_code == 1
    rows = table_rows(result.stdout)
    assert rows[0] == ["Agent", "Host", "Port", "Type", "Serial", "Known", "Added", "Error"]
    assert rows[1] == ["ag-5", "h", "5", "Bow-2000", "S5", "no", "yes", "-"]
    assert rows[2][1:3] == ["unreachable", "6"]
    assert rows[2][-1] == "connection refused"
    assert result.stderr == "vipu-admin: error: 1 of 2 agents could not be probed: unreachable:6\n"
    assert list(fake.state.calls_to("DiscoverAgents")[0].request.addresses) == [
        "h:5",
        "unreachable:6",
    ]


def test_discover_checks_addresses_before_calling(vipu_admin: Run, fake: RunningFake) -> None:
    """An address without a port is a usage error; nothing is sent."""
    result = vipu_admin("discover", "agent", "--address", "h")
    assert result.exit_code == 2
    assert "'h' is not HOST:PORT" in result.stderr
    assert not fake.state.calls_to("DiscoverAgents")


def test_create_cluster_sends_topologies(vipu_admin: Run, fake: RunningFake, cluster: None) -> None:
    """--topology and --cluster-topology become the admin enums; list shows them in CLI words."""
    result = vipu_admin(
        "create", "cluster", "c2", "--agents", "m1", "--num-ipulinkdomains", "1",
        "--topology", "mesh", "--cluster-topology", "SWITCHED",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    request = fake.state.calls_to("CreateCluster")[-1].request
    assert request.topology == apb.ILD_TOPOLOGY_MESH
    assert request.cluster_topology == apb.CLUSTER_TOPOLOGY_SWITCHED
    rows = table_rows(vipu_admin("list", "clusters").stdout)
    assert rows[0] == ["Cluster", "Agents", "ILDs", "Topology", "Cluster Topology", "IPUs", "Type"]
    assert rows[1] == ["c1", "m1,m2", "1", "torus", "looped", "8", "Bow-2000"]
    assert rows[2] == ["c2", "m1", "1", "mesh", "switched", "4", "Bow-2000"]


def test_create_cluster_refuses_bad_topology(vipu_admin: Run) -> None:
    """--topology ring is not a choice: exit 2."""
    result = vipu_admin("create", "cluster", "c", "--agents", "m1", "--topology", "ring")
    assert result.exit_code == 2
    assert "'ring' is not one of 'mesh', 'torus'" in result.stderr


@pytest.mark.parametrize("extra", [[], ["--size", "8", "--agents", "m1"]], ids=["neither", "both"])
def test_allocation_needs_exactly_one_of_size_and_agents(vipu_admin: Run, extra: list[str]) -> None:
    """--size and --agents exclude each other, and one is required."""
    result = vipu_admin("create", "allocation", "a1", "--cluster", "c1", *extra)
    assert result.exit_code == 2
    assert result.stderr == "vipu-admin: error: give exactly one of --size and --agents\n"


def test_allocations_create_and_list(vipu_admin: Run, fake: RunningFake, cluster: None) -> None:
    """create prints what was chosen; list starts with vipu's two columns."""
    result = vipu_admin("create", "allocation", "a1", "--cluster", "c1", "--size", "8")
    assert result.stdout == "create allocation (a1): success.\n8 IPUs on agents m1,m2\n"
    vipu_admin(
        "create", "allocation", "a2", "--cluster", "c1", "--agents", "m2", "--hosts", "10.1.2.0/24"
    )
    assert list(fake.state.calls_to("CreateAllocation")[-1].request.agent_ids) == ["m2"]
    rows = table_rows(vipu_admin("list", "allocations").stdout)
    assert rows == [
        ["Allocation ID", "Agents", "Cluster", "Size", "Users", "Partitions", "IPUoF Hosts"],
        ["a1", "m1,m2", "c1", "8", "-", "0", "trusted (127.0.0.0/8,::1/128)"],
        ["a2", "m2", "c1", "4", "-", "0", "10.1.2.0/24"],
    ]
    assert vipu_admin("remove", "allocation", "a2", "--force").exit_code == 0
    assert fake.state.calls_to("RemoveAllocation")[0].request.force


def test_create_user_prints_the_key_and_writes_a_private_config(
    vipu_admin: Run, fake: RunningFake
) -> None:
    """The key is printed once; ID.vipu-cli.hcl names the user endpoint and the credentials."""
    result = vipu_admin("create", "user", "alice", "--allocations", "a1,a2")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[:2] == [
        "create user (alice): success.",
        "access key: key-of-alice",
    ]
    request = fake.state.calls_to("CreateUser")[0].request
    assert (list(request.allocation_ids), request.admin) == (["a1", "a2"], False)
    path = Path("alice.vipu-cli.hcl")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert parse_hcl(path.read_text()) == {
        "api-host": "127.0.0.1",
        "api-port": str(fake.user_port),
        "admin-api-port": str(fake.admin_port),
        "api-user-id": "alice",
        "api-access-key": "key-of-alice",
    }


def test_the_written_config_lets_the_user_in(vipu_admin: Run, vipu: Run, fake: RunningFake) -> None:
    """vipu --config ID.vipu-cli.hcl reaches the controller with the new user's key."""
    vipu_admin("create", "user", "bob")
    fake.state.credentials = ("bob", "key-of-bob")
    result = vipu("--config", "bob.vipu-cli.hcl", "list", "partitions", use_default_env=False)
    assert result.exit_code == 0, result.stderr
    allocations = vipu("--config", "bob.vipu-cli.hcl", "list", "allocations", use_default_env=False)
    assert allocations.exit_code == 0, allocations.stderr


def test_create_user_options_choose_directory_endpoint_and_admin(
    vipu_admin: Run, fake: RunningFake, tmp_path: Path
) -> None:
    """--output, --user-api-host/--user-api-port, --admin and --json."""
    out = tmp_path / "keys"
    out.mkdir()
    result = vipu_admin(
        "create", "user", "root2", "--admin", "--output", str(out),
        "--user-api-host", "ctl.example", "--user-api-port", "9443", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["access_key"] == "key-of-root2"
    assert data["user"]["admin"] is True
    assert data["config_file"] == str(out / "root2.vipu-cli.hcl")
    written = parse_hcl((out / "root2.vipu-cli.hcl").read_text())
    assert (written["api-host"], written["api-port"]) == ("ctl.example", "9443")
    assert fake.state.calls_to("CreateUser")[0].request.admin


def test_create_user_into_a_missing_directory_is_refused_before_creating(
    vipu_admin: Run, fake: RunningFake
) -> None:
    """--output must exist: exit 2, and no user is created."""
    result = vipu_admin("create", "user", "carol", "--output", "no/such/dir")
    assert result.exit_code == 2
    assert not fake.state.calls_to("CreateUser")


def test_users_list_and_remove(vipu_admin: Run, fake: RunningFake) -> None:
    """list users shows admin flag, allocations, creation time; remove sends the id."""
    vipu_admin("create", "user", "alice", "--allocations", "a1")
    rows = table_rows(vipu_admin("list", "users").stdout)
    assert rows == [
        ["User", "Admin", "Allocations", "Created"],
        ["alice", "no", "a1", "2026-05-28T20:26:40Z"],
    ]
    assert vipu_admin("remove", "user", "alice").stdout == "remove user (alice): success.\n"
    assert "alice" not in fake.state.users


def test_list_partitions_adds_allocation_operation_and_agents(vipu_admin: Run, vipu: Run) -> None:
    """vipu's eight columns, then Allocation | Operation | Agents."""
    vipu("create", "partition", "p1", "--size", "8")
    rows = table_rows(vipu_admin("list", "partitions").stdout)
    assert rows[0][8:] == ["Allocation", "Operation", "Agents"]
    assert rows[1][:8] == ["p1", "c1", "1", "-", "SWNC", "8", "1", "ACTIVE"]
    assert rows[1][8:] == ["a1", "IDLE", "ipum1,ipum2"]
    data = json.loads(vipu_admin("list", "partitions", "--json").stdout)
    assert data["partitions"][0]["locations"][0]["agent_id"] == "ipum1"


def test_cluster_test_all_passing(vipu_admin: Run, cluster: None) -> None:
    """One row per test in the spec's order; exit 0."""
    result = vipu_admin("test", "cluster", "c1")
    assert result.exit_code == 0, result.stderr
    rows = table_rows(result.stdout)
    assert rows[0] == ["Test", "Result", "Agents Tested", "Agents Failed", "Summary"]
    assert [r[0] for r in rows[1:]] == ["cabling", "IPU-Link", "GW-Link", "Sync-Link", "traffic"]
    assert {r[1] for r in rows[1:]} == {"passed"}


def test_cluster_test_failure_exits_1_with_details(
    vipu_admin: Run, fake: RunningFake, cluster: None
) -> None:
    """A failed test: FAILED in its row, a detail line per failure, exit 1 naming it."""
    fake.state.failing_tests.add("IPU-Link")
    result = vipu_admin("test", "cluster", "c1")
    assert result.exit_code == 1
    table_text, failures = result.stdout.split("\n\n")
    assert table_rows(table_text)[2][:4] == ["IPU-Link", "FAILED", "2", "1"]
    assert failures.strip() == "IPU-Link: m1: link L3 did not train"
    assert result.stderr == "vipu-admin: error: cluster c1 failed 1 test(s): IPU-Link\n"


def test_cluster_test_subset(vipu_admin: Run, fake: RunningFake, cluster: None) -> None:
    """--tests picks tests by name; an unknown name is a usage error."""
    assert vipu_admin("test", "cluster", "c1", "--tests", "cabling,traffic").exit_code == 0
    assert list(fake.state.calls_to("TestCluster")[0].request.tests) == [
        agpb.LINK_TEST_CABLING,
        agpb.LINK_TEST_TRAFFIC,
    ]
    wrong = vipu_admin("test", "cluster", "c1", "--tests", "smoke")
    assert wrong.exit_code == 2
    assert "unknown test 'smoke'" in wrong.stderr


def test_inject_and_clear_faults(vipu_admin: Run, fake: RunningFake, cluster: None) -> None:
    """Faults reach the wire with their targets; the agent's active faults are listed."""
    result = vipu_admin(
        "inject", "fault", "--agent", "m1", "--kind", "ipu", "--device", "2", "--reason", "drill"
    )
    assert result.exit_code == 0, result.stderr
    assert table_rows(result.stdout.split("\n", 1)[1]) == [
        ["Agent", "Fault", "Reason"],
        ["m1", "ipu(2)", "drill"],
    ]
    vipu_admin("inject", "fault", "--agent", "m1", "--kind", "slow", "--delay-ms", "500")
    sent = fake.state.calls_to("InjectFault")[-1].request
    assert (sent.fault.kind, sent.fault.delay_ms) == (agpb.FAULT_AGENT_SLOW, 500)
    assert table_rows(vipu_admin("list", "agents").stdout)[1][-1] == "ipu(2),slow(500ms)"
    cleared = vipu_admin("clear", "fault", "--agent", "m1", "--kind", "ipu", "--device", "2")
    assert table_rows(cleared.stdout.split("\n", 1)[1])[1:] == [["m1", "slow(500ms)", "-"]]
    assert vipu_admin("clear", "fault", "--agent", "m1", "--all").exit_code == 0
    assert fake.state.calls_to("ClearFault")[-1].request.all


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["inject", "fault", "--agent", "m1", "--kind", "ipu"], "--kind ipu needs --device"),
        (["inject", "fault", "--agent", "m1", "--kind", "link"], "--kind link needs --link"),
        (["inject", "fault", "--agent", "m1", "--kind", "slow"], "--kind slow needs --delay-ms"),
        (
            ["inject", "fault", "--agent", "m1", "--kind", "slow", "--delay-ms", "600001"],
            "use at most 600000",
        ),
        (
            ["inject", "fault", "--agent", "m1", "--kind", "slow", "--delay-ms", "0"],
            "use 1 or more",
        ),
        (["clear", "fault", "--agent", "m1"], "say which faults to clear"),
        (["clear", "fault", "--agent", "m1", "--all", "--kind", "hang"], "say which faults"),
    ],
)
def test_fault_commands_check_their_targets(
    vipu_admin: Run, fake: RunningFake, args: list[str], message: str
) -> None:
    """A fault without its target is a usage error, caught before any call."""
    result = vipu_admin(*args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert not fake.state.calls


def test_admin_ipu_attrs(vipu_admin: Run, fake: RunningFake) -> None:
    """list ipu-attrs on the admin API, same table as vipu's."""
    rows = table_rows(vipu_admin("list", "ipu-attrs", "--agents", "ipum2").stdout)
    assert rows[0] == ["Agent", "IPU", "Attribute", "Value"]
    assert {r[0] for r in rows[1:]} == {"ipum2"}
    assert fake.state.calls_to("ListIpuAttributes")


def test_create_user_keeps_the_key_when_stdout_is_closed_early(
    fake: RunningFake, tmp_path: Path
) -> None:
    """The key lives only in the reply: the file is written before anything is printed, so a
    reader that has gone away (a closed pipe, `| head -c1`) cannot lose it."""
    import os
    import subprocess
    import sys

    tool = str(Path(sys.executable).with_name("vipu-admin"))
    env = {**os.environ, **endpoint_env(fake)}
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read what it prints
    try:
        subprocess.run(
            [tool, "create", "user", "dave"], stdout=write_end, stderr=subprocess.PIPE,
            cwd=tmp_path, env=env, timeout=60, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    written = parse_hcl((tmp_path / "dave.vipu-cli.hcl").read_text())
    assert written["api-access-key"] == "key-of-dave"
    piped = subprocess.run(
        f"'{tool}' create user erin | head -c1", shell=True, cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert piped.stdout == "c"
    assert parse_hcl((tmp_path / "erin.vipu-cli.hcl").read_text())["api-access-key"] == (
        "key-of-erin"
    )
