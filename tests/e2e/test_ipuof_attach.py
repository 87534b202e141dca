"""Applications attaching to IPUs over IPUoF, the way Poplar's client does (vipu-system.md §5).

The application asks the controller for its partition's IPUoF config (the
generated gRPC client, or the static file ``vipu get partition
--ipuof-configs`` writes), then connects to each device's ``ip:server_port``
on the emulated machine that holds the IPU. Only IPUs of an ACTIVE
partition attach, one application per IPU, until it detaches or the
partition is reset or removed; a detach resets a plain partition (§4).
"""

from __future__ import annotations

import json
import socket
from typing import Any

from vpod.wire import virmgrpc_pb2 as pb

from .conftest import Pod
from .fixtures_pods import AdminView, UserApi, devices_of, wait_until

# fixture, used by its name api64
from .fixtures_pods import api64_fixture as api64_fixture
from .ipuof_app import Answer, Application, IpuConnection


def ok(agent_id: str, device: pb.IpuofDevice) -> Answer:
    """The answer to an accepted attach: which agent, device and routing id the app now holds."""
    return Answer("OK", f"{agent_id} {device.device_id} {device.routing_id}")


def attaches(device: pb.IpuofDevice, partition_id: str) -> bool:
    """Whether a new application can attach the device now (it detaches again at once)."""
    with Application(partition_id) as app:
        _, answer = app.attach(device)
    return answer is not None and answer.word == "OK"


def test_an_application_attaches_every_ipu_of_each_gcd(pod64: Pod, api64: UserApi) -> None:
    """Per GCD (IPUOF_VIPU_API_GCD_ID), every device's endpoint accepts and names its IPU."""
    api64.create("app", 8, num_gcds=2)
    locations = AdminView(pod64).locations("app")
    with Application("app") as app:
        for gcd in range(2):
            config = api64.config("app", gcd=gcd)
            for device in config.gcd_configs[0].devices:
                connection, answer = app.attach(device)
                assert answer == ok(locations[device.routing_id]["agent_id"], device)
                assert connection.request("PING") == Answer("PONG", "")
        assert len(app.connections) == 8


def test_the_static_config_file_from_the_cli_is_enough_to_attach(
    pod64: Pod, api64: UserApi, tmp_path: Any
) -> None:
    """``vipu get partition --ipuof-configs`` writes what IPUOF_CONFIG_PATH needs to attach."""
    api64.create("static", 4)
    path = tmp_path / "static_gcd0.conf"
    path.write_text(pod64.run("vipu", "get", "partition", "static", "--ipuof-configs").stdout)
    devices = json.loads(path.read_text())["devices"]
    assert [d["routing_id"] for d in devices] == [0, 1, 2, 3]
    with Application("static") as app:
        for entry in devices:
            device = pb.IpuofDevice(
                ip=entry["ip"], server_port=entry["server_port"], device_id=entry["device_id"]
            )
            _, answer = app.attach(device)
            assert answer is not None
            assert answer.word == "OK"
            assert answer.rest.split()[1:] == [str(entry["device_id"]), str(entry["routing_id"])]


def test_a_second_attach_to_the_same_ipu_is_refused(api64: UserApi) -> None:
    """One application per IPU: the second is told who holds it, the first keeps it."""
    api64.create("busy", 1)
    device = devices_of(api64.config("busy"))[0]
    with Application("busy") as first, Application("busy") as second:
        held, answer = first.attach(device)
        assert answer is not None
        assert answer.word == "OK"
        refused_on, refused = second.attach(device)
        assert refused is not None
        assert refused.word == "ERR"
        assert refused.reason == "ipu-attached"
        assert "one application per IPU" in refused.rest
        assert refused_on.receive() is None, "the endpoint closes a refused connection"
        assert held.request("PING") == Answer("PONG", "")


def test_ipus_outside_an_active_partition_refuse_to_attach(pod64: Pod, api64: UserApi) -> None:
    """An IPU in no partition, or in another one, refuses with a reason the client can show."""
    api64.create("mine", 2)  # half a machine: its other two IPUs are in no partition
    api64.create("theirs", 4)
    mine = devices_of(api64.config("mine"))
    theirs = devices_of(api64.config("theirs"))
    assert theirs[0].ip != mine[0].ip
    idle = next(d for d in (3, 2, 1, 0) if d not in {m.device_id for m in mine})
    free_ipu = pb.IpuofDevice(ip=mine[0].ip, server_port=50052 + idle, device_id=idle)
    with Application("mine") as app:
        _, unconfigured = app.attach(free_ipu)
        assert unconfigured is not None
        assert unconfigured.reason == "ipu-not-configured"
        assert "is in no active partition" in unconfigured.rest
        _, wrong = app.attach(theirs[0])
        assert wrong is not None
        assert wrong.reason == "wrong-partition"
        assert "belongs to partition theirs, not mine" in wrong.rest
    with Application("ghost") as stranger:
        _, unknown = stranger.attach(mine[0])
        assert unknown is not None
        assert unknown.reason == "wrong-partition"


def test_detach_frees_the_ipu_for_the_next_application(api64: UserApi) -> None:
    """DETACH (or the program ending) gives the IPU back; the next application gets it."""
    api64.create("turns", 1)
    device = devices_of(api64.config("turns"))[0]
    first = IpuConnection.to(device)
    try:
        assert first.attach("turns") is not None
        assert first.request("DETACH") == Answer("BYE", "detached")
        assert first.receive() is None
    finally:
        first.close()
    second = IpuConnection.to(device)
    answer = second.attach("turns")
    assert answer is not None
    assert answer.word == "OK"
    second.close()  # a program that exits without DETACH
    wait_until(lambda: attaches(device, "turns"), "the IPU is free after its holder exits")


def test_reset_ends_attachments_and_the_partition_stays_usable(api64: UserApi) -> None:
    """A reset tells attached applications (BYE) and the IPUs can be attached again."""
    api64.create("again", 4)
    devices = devices_of(api64.config("again"))
    with Application("again") as app:
        for device in devices:
            app.attach(device)
        api64.users.ResetPartition(pb.ResetPartitionRequest(partition_id="again"))
        for connection in app.connections:
            bye = connection.receive()
            assert bye is not None
            assert bye.word == "BYE"
            assert "reset" in bye.rest
            assert connection.receive() is None
    assert all(attaches(device, "again") for device in devices)


def test_after_remove_the_endpoints_refuse(api64: UserApi) -> None:
    """Removing a partition ends its attachments and its IPUs no longer attach."""
    api64.create("gone", 8)
    devices = devices_of(api64.config("gone"))
    assert len({d.ip for d in devices}) == 2
    with Application("gone") as app:
        for device in devices:
            app.attach(device)
        api64.remove("gone")
        for connection in app.connections:
            bye = connection.receive()
            assert bye is not None
            assert bye.word == "BYE"
            assert "released" in bye.rest
    with Application("gone") as late:
        for device in devices:
            _, answer = late.attach(device)
            assert answer is not None
            assert answer.reason == "ipu-not-configured"


def test_rdma_ports_are_taken_but_hold_no_conversation(api64: UserApi) -> None:
    """The RDMA ports listen, as on a real machine, and close a TCP connection at once."""
    api64.create("rdma", 1)
    device = devices_of(api64.config("rdma"))[0]
    with socket.create_connection((device.ip, device.rdma_port), timeout=10) as sock:
        assert sock.recv(16) == b""


def detach_once(device: pb.IpuofDevice, partition_id: str) -> None:
    """An application attaches the device, then detaches cleanly."""
    connection = IpuConnection.to(device)
    try:
        assert connection.attach(partition_id) is not None
        assert connection.request("DETACH") == Answer("BYE", "detached")
    finally:
        connection.close()


def test_detach_resets_only_partitions_that_want_it(api64: UserApi) -> None:
    """A detach resets a plain partition (status counts it), not one with auto-reset disabled
    nor a reconfigurable one.

    All three sit on one machine and are detached in this order, so once the
    last one's reset is seen the agent's earlier detach events were handled too.
    """
    api64.create("keep", 1, disable_auto_reset=True)
    api64.create("shared", 1, reconfigurable=True)
    api64.create("auto", 1)
    devices = {pid: devices_of(api64.config(pid))[0] for pid in ("keep", "shared", "auto")}
    assert len({d.ip for d in devices.values()}) == 1, "best fit packs them on one machine"
    for pid, device in devices.items():
        detach_once(device, pid)
    wait_until(
        lambda: api64.status("auto").auto_reset_retry_count == 1,
        "the detach is followed by an automatic reset",
    )
    assert api64.status("auto").last_auto_reset_time.seconds > 0
    assert api64.status("keep").auto_reset_retry_count == 0
    assert api64.status("shared").auto_reset_retry_count == 0
