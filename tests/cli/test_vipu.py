"""``vipu`` against a controller double: what it sends, what it prints."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Run, table_rows
from tests.cli.fake_controller import RunningFake
from tests.ports import free_port
from vpod.cli.config import render_hcl
from vpod.domain.ipuof import FILE_DEVICE_KEYS
from vpod.wire import virmgrpc_pb2 as pb


def test_server_version_prints_version_then_host(vipu: Run, fake: RunningFake) -> None:
    """--server-version prints 'version: X.Y.Z' then 'host: HOST:PORT', nothing else."""
    result = vipu("--server-version")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"version: 1.18.0\nhost: 127.0.0.1:{fake.user_port}\n"


def test_no_command_prints_help(vipu: Run) -> None:
    """Plain 'vipu' shows the help with its examples."""
    result = vipu()
    assert result.exit_code == 0
    assert "vipu create partition training --size 16" in result.stdout


def test_create_partition_sends_every_option(vipu: Run, fake: RunningFake) -> None:
    """Each option lands in its wire field; enum spellings become the wire numbers."""
    result = vipu(
        "create", "partition", "p1", "--size", "16", "--allocation", "a1", "--cluster", "c1",
        "--num-gcds", "2", "--num-replicas", "4", "--sync-type", "pod-native-default",
        "--routing", "SWNC", "--gw-routing", "ring", "--num-ilds", "1",
        "--disable-auto-reset", "--relocatable",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "create partition (p1): success.\n"
    request = fake.state.calls_to("CreatePartition")[0].request
    assert request.disable_auto_reset
    assert request.relocatable
    assert request.requirements == pb.PartitionRequirements(
        id="p1",
        size=16,
        allocation_id="a1",
        cluster_id="c1",
        num_gcds=2,
        num_replicas=4,
        sync_type=pb.ST_POD_NATIVE_DEFAULT,
        ipulink_routing_type=pb.IRT_SWNC,
        gw_routing_type=pb.GRT_RING,
        num_ipulink_segments=1,
    )


def test_create_partition_leaves_unset_options_to_the_controller(
    vipu: Run, fake: RunningFake
) -> None:
    """Only --size given: every other requirement is sent unset (0 / empty / false)."""
    assert vipu("create", "partition", "p1", "--size", "4").exit_code == 0
    call = fake.state.calls_to("CreatePartition")[0]
    assert call.request.requirements == pb.PartitionRequirements(id="p1", size=4)
    assert not call.request.relocatable
    assert "vipu-user-id" not in call.metadata


def test_list_partitions_table_keeps_the_spec_columns(vipu: Run, fake: RunningFake) -> None:
    """The header and column order are the ones scripts parse (vipu-system.md §6)."""
    fake.state.capacity = 256
    vipu("create", "partition", "small", "--size", "4")
    assert vipu("create", "partition", "big", "--size", "128", "--num-ilds", "2").exit_code == 0
    result = vipu("list", "partitions")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0].split(" | ") == [
        "Partition", "Cluster", "ILDs", "GW Routing", "ILD Routing", "Size", "GCDs", "State",
    ]  # fmt: skip
    assert table_rows(result.stdout)[1:] == [
        ["big", "c1", "2", "RING", "RINGSWNC", "128", "1", "ACTIVE"],
        ["small", "c1", "1", "-", "DNC", "4", "1", "ACTIVE"],
    ]


def test_list_partitions_without_partitions_prints_the_header(vipu: Run) -> None:
    """An empty list is still a table with its header, and exit status 0."""
    result = vipu("list", "partitions")
    assert result.exit_code == 0
    assert result.stdout.startswith("Partition | Cluster")
    assert len(result.stdout.splitlines()) == 2


def test_list_partitions_json_and_allocation_filter(vipu: Run, fake: RunningFake) -> None:
    """--json prints the wire reply; --allocation is sent as the filter."""
    vipu("create", "partition", "p1", "--size", "4", "--allocation", "a1")
    result = vipu("list", "partitions", "--allocation", "a1", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert [p["id"] for p in data["partitions"]] == ["p1"]
    assert data["partitions"][0]["spec"]["ipulink_routing_type"] == "IRT_DNC"
    assert data["partitions"][0]["ready_state"] == "PS_ACTIVE"
    assert fake.state.calls_to("ListPartitions")[-1].request.allocation_id == "a1"


def test_get_partition_shows_spec_status_and_ipus(vipu: Run) -> None:
    """Details as 'Key: value' lines, then one row per IPU in routing order."""
    vipu("create", "partition", "p1", "--size", "4", "--num-gcds", "2")
    result = vipu("get", "partition", "p1")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    pairs = {k.strip(): v.strip() for k, _, v in (x.partition(":") for x in lines[:17])}
    assert pairs["Partition"] == "p1"
    assert pairs["Size"] == "4"
    assert pairs["GCDs"] == "2"
    assert pairs["Sync Type"] == "c2-compatible"
    assert pairs["State"] == "ACTIVE"
    assert pairs["Operation"] == "IDLE"
    assert pairs["Auto-reset retries"] == "0 of 3"
    ipu_table = result.stdout.split("\n\n")[1]
    assert [row[0] for row in table_rows(ipu_table)] == ["Routing ID", "0", "1", "2", "3"]


def test_get_partition_json_has_partition_and_status(vipu: Run) -> None:
    """--json gives both wire messages."""
    vipu("create", "partition", "p1", "--size", "2")
    data = json.loads(vipu("get", "partition", "p1", "--json").stdout)
    assert data["partition"]["id"] == "p1"
    assert data["status"]["operation_state"] == "POS_IDLE"


def test_ipuof_configs_of_one_gcd_is_the_static_file(vipu: Run) -> None:
    """One GCD: a single {"devices", "attributes"} object, device keys of the .conf file."""
    vipu("create", "partition", "p1", "--size", "4")
    result = vipu("get", "partition", "p1", "--ipuof-configs")
    assert result.exit_code == 0, result.stderr
    config = json.loads(result.stdout)
    assert list(config) == ["devices", "attributes"]
    assert [list(d) for d in config["devices"]] == [list(FILE_DEVICE_KEYS)] * 4
    assert [d["routing_id"] for d in config["devices"]] == [0, 1, 2, 3]
    assert [d["device_id"] for d in config["devices"]] == [3, 2, 1, 0]
    assert list(config["attributes"]) == [
        "Fabric Reconfigurable", "IPU version", "Num Replicas", "Routing Type", "Sync Type",
        "GCD Id",
    ]  # fmt: skip


def test_ipuof_configs_of_a_partition_in_error_come_with_a_warning(
    vipu: Run, fake: RunningFake
) -> None:
    """The controller serves a faulted partition's recorded config: stdout stays the file,
    stderr says in one line that the partition is not ACTIVE and why."""
    vipu("create", "partition", "p1", "--size", "4")
    active = vipu("get", "partition", "p1", "--ipuof-configs")
    assert active.stderr == ""
    status = fake.state.statuses["p1"]
    status.ready_state = pb.PS_ERROR
    status.errors.append("agent ag1 is unreachable (it stopped answering)")
    faulted = vipu("get", "partition", "p1", "--ipuof-configs")
    assert faulted.exit_code == 0, faulted.stderr
    assert json.loads(faulted.stdout) == json.loads(active.stdout)
    assert faulted.stderr.count("\n") == 1
    assert faulted.stderr.startswith("vipu: warning: partition p1 is ERROR (agent ag1 is")
    assert "until it is ACTIVE" in faulted.stderr


def test_ipuof_configs_of_several_gcds_is_a_list_and_gcd_picks_one(
    vipu: Run, fake: RunningFake
) -> None:
    """Several GCDs: a JSON list; --gcd N asks the controller for that GCD only."""
    vipu("create", "partition", "p1", "--size", "8", "--num-gcds", "2")
    every = json.loads(vipu("get", "partition", "p1", "--ipuof-configs").stdout)
    assert [c["attributes"]["GCD Id"] for c in every] == ["0", "1"]
    one = json.loads(vipu("get", "partition", "p1", "--ipuof-configs", "--gcd", "1").stdout)
    assert one == every[1]
    request = fake.state.calls_to("GetPartitionIpuofConfig")[-1].request
    assert request.HasField("gcd_id")
    assert request.gcd_id.id == 1


def test_ipuof_configs_json_is_the_whole_reply(vipu: Run) -> None:
    """--ipuof-configs --json prints the wire PartitionConfig."""
    vipu("create", "partition", "p1", "--size", "4")
    data = json.loads(vipu("get", "partition", "p1", "--ipuof-configs", "--json").stdout)
    assert data["ipuof_server_version"] == "2.6.0"
    assert data["gcd_configs"][0]["devices"][0]["ipum_sw_version"] == "2.6.0"


def test_gcd_without_ipuof_configs_is_a_usage_error(vipu: Run) -> None:
    """--gcd alone says to add --ipuof-configs, exit 2."""
    result = vipu("get", "partition", "p1", "--gcd", "0")
    assert result.exit_code == 2
    assert result.stderr == "vipu: error: --gcd picks one GCD's IPUoF config: add --ipuof-configs\n"


def test_partition_status(vipu: Run) -> None:
    """get partition-status shows state, operation, retries and errors."""
    vipu("create", "partition", "p1", "--size", "1", "--disable-auto-reset")
    result = vipu("get", "partition-status", "p1")
    assert result.exit_code == 0, result.stderr
    assert "Auto-reset retries: 0 of 0" in result.stdout
    assert json.loads(vipu("get", "partition-status", "p1", "--json").stdout)["partition_id"] == (
        "p1"
    )


def test_reset_and_remove_send_their_flags(vipu: Run, fake: RunningFake) -> None:
    """reset --relocatable and remove --force reach the wire."""
    vipu("create", "partition", "p1", "--size", "4")
    assert vipu("reset", "partition", "p1", "--relocatable").stdout == (
        "reset partition (p1): success.\n"
    )
    assert fake.state.calls_to("ResetPartition")[0].request.relocatable
    assert vipu("remove", "partition", "p1", "--force").exit_code == 0
    assert fake.state.calls_to("RemovePartition")[0].request.force
    assert "p1" not in fake.state.partitions


def test_list_allocations_asks_the_user_endpoint_as_the_user(
    vipu: Run, fake: RunningFake, vipu_admin: Run
) -> None:
    """No user rpc lists allocations: ListAllocations, with the user's key, on the user port
    (a vPOD's server has no way to the admin port: a dead admin port changes nothing)."""
    vipu_admin("create", "agent", "m1", "--host", "h", "--port", "1")
    vipu_admin("create", "agent", "m2", "--host", "h", "--port", "2")
    vipu_admin("create", "cluster", "c1", "--agents", "m1,m2")
    vipu_admin("create", "allocation", "a1", "--cluster", "c1", "--size", "8")
    dead_admin = {"VIPU_CLI_ADMIN_API_PORT": str(free_port())}
    result = vipu(
        "list", "allocations", "--api-user-id", "u", "--api-access-key", "k", env=dead_admin
    )
    assert result.exit_code == 0, result.stderr
    assert table_rows(result.stdout) == [["Allocation ID", "Agents"], ["a1", "m1,m2"]]
    call = fake.state.calls_to("ListAllocations")[-1]
    assert (call.metadata["vipu-user-id"], call.metadata["vipu-access-key"]) == ("u", "k")
    data = json.loads(vipu("list", "allocations", "--json").stdout)
    assert data["allocations"][0]["allocation"]["spec"]["agent_ids"] == ["m1", "m2"]


def test_list_ipu_attrs_one_row_per_attribute(vipu: Run, fake: RunningFake) -> None:
    """Agent | IPU | Attribute | Value, sorted; --agents is sent as the filter."""
    result = vipu("list", "ipu-attrs", "--agents", "ipum1")
    assert result.exit_code == 0, result.stderr
    rows = table_rows(result.stdout)
    assert rows[0] == ["Agent", "IPU", "Attribute", "Value"]
    assert rows[1:4] == [
        ["ipum1", "0", "board type", "Bow-2000"],
        ["ipum1", "0", "clock", "1850MHz"],
        ["ipum1", "0", "serial", "ipum1-s0"],
    ]
    assert len(rows) == 1 + 6
    assert list(fake.state.calls_to("ListIPUAttributes")[0].request.agents) == ["ipum1"]
    data = json.loads(vipu("list", "ipu-attrs", "--json").stdout)
    assert data["entries"][0]["ipu_attributes"]["0"]["attributes"]["clock"] == "1850MHz"


def test_credentials_travel_as_metadata(vipu: Run, fake: RunningFake) -> None:
    """--api-user-id and --api-access-key become vipu-user-id / vipu-access-key metadata."""
    fake.state.credentials = ("alice", "secret")
    refused = vipu("list", "partitions")
    assert refused.exit_code == 1
    assert "set --api-user-id and --api-access-key" in refused.stderr
    result = vipu("--api-user-id", "alice", "--api-access-key", "secret", "list", "partitions")
    assert result.exit_code == 0, result.stderr


def test_global_options_also_work_after_the_command(vipu: Run, fake: RunningFake) -> None:
    """'vipu list partitions --api-port N' is the same as 'vipu --api-port N list partitions'."""
    env = {"VIPU_CLI_API_PORT": "1"}
    after = vipu("list", "partitions", "--api-port", str(fake.user_port), env=env)
    assert after.exit_code == 0, after.stderr
    before = vipu("--api-port", str(fake.user_port), "list", "partitions", env=env)
    assert before.exit_code == 0, before.stderr


def test_flag_beats_environment_beats_config_file(
    vipu: Run, fake: RunningFake, tmp_path: Path
) -> None:
    """Endpoint and credentials: --flag over VIPU_CLI_* over vipu-cli.hcl."""
    config = tmp_path / "vipu-cli.hcl"
    config.write_text(
        render_hcl({"api-host": "127.0.0.1", "api-port": 1, "api-user-id": "file-user"})
    )
    base = {"VIPU_CLI_CONFIG": str(config)}
    from_file = vipu("list", "partitions", env=base, use_default_env=False)
    assert from_file.exit_code == 1
    assert "cannot reach the V-IPU controller at 127.0.0.1:1" in from_file.stderr
    assert f"or {config})" in from_file.stderr

    env = {**base, "VIPU_CLI_API_PORT": str(fake.user_port), "VIPU_CLI_API_USER_ID": "env-user"}
    assert vipu("list", "partitions", env=env, use_default_env=False).exit_code == 0
    assert fake.state.calls[-1].metadata["vipu-user-id"] == "env-user"

    env["VIPU_CLI_API_PORT"] = "1"
    flagged = vipu(
        "--api-port", str(fake.user_port), "--api-user-id", "flag-user", "list", "partitions",
        env=env, use_default_env=False,
    )  # fmt: skip
    assert flagged.exit_code == 0, flagged.stderr
    assert fake.state.calls[-1].metadata["vipu-user-id"] == "flag-user"


def test_config_file_in_the_working_directory_is_read(vipu: Run, fake: RunningFake) -> None:
    """Without --config or VIPU_CLI_CONFIG, ./vipu-cli.hcl is used."""
    settings = render_hcl({"api-host": "127.0.0.1", "api-port": fake.user_port})
    Path("vipu-cli.hcl").write_text(settings)
    result = vipu("--server-version", use_default_env=False)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.endswith(f"host: 127.0.0.1:{fake.user_port}\n")
