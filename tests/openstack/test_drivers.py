"""The openstack and cinder drivers against the real Nova, Cinder, Glance and Neutron.

One server's life, step by step (each step needs the one before): a boot volume copied
from a Glance image, the server booted from it on its cluster's Neutron network with config
drive and the project's key, its settings as Nova metadata and its security group opened
only to the controller, a data volume attached and detached, shelve-offload and unshelve,
stop and start, reboot, rebuild, and deletion taking its port, keypair and network along.
Every call is made twice where the task runner could repeat it.
"""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from collections.abc import Coroutine
from dataclasses import replace
from typing import Any, TypeVar

import pytest

from vpod.cloud.drivers import (
    DriverError,
    ServerSetup,
    ServerSpec,
    TemporaryDriverError,
    VipuAccess,
)
from vpod.cloud.drivers.cinder_volumes import CinderVolumes
from vpod.cloud.drivers.openstack_compute import OpenStackCompute
from vpod.cloud.drivers.openstack_setup import HCL, from_metadata

from .conftest import LocalOpenStack

pytestmark = [pytest.mark.openstack, pytest.mark.timeout(3600)]
T = TypeVar("T")
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEdbYhYq2Gm6cW3YbH7aOq1X0bZ0ZcqFZr9eTqv8Yw2N test@vpod"


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def test_a_server_life_on_nova_cinder_and_neutron(openstack_cloud: LocalOpenStack) -> None:
    compute = OpenStackCompute(openstack_cloud.options)
    volumes = CinderVolumes(openstack_cloud.options)
    conn = openstack_cloud.project()
    tag = uuid.uuid4().hex[:8]
    cluster, server_id, boot, data = f"cl-{tag}", f"sv-{tag}", f"vb-{tag}", f"vd-{tag}"

    # A boot volume made from the mapped Glance image; asking again changes nothing.
    for _ in range(2):
        run(volumes.create(boot, 1, "ssd", "ubuntu-22.04-poplar-3.4"))
    cinder = list(conn.block_storage.volumes(name=f"vpod-{boot}"))
    assert [(v.status, v.size, v.is_bootable) for v in cinder] == [("available", 1, True)]

    spec = ServerSpec(
        server_id=server_id,
        name=f"train-{tag}-poplar-1",
        cluster_id=cluster,
        cluster_name=f"train-{tag}",
        image="ubuntu-22.04-poplar-3.4",
        flavor="g2a-ai-fast-v1pod-4",
        bare_metal=False,
        address="10.77.3.11",
        boot_volume_id=boot,
        public_keys=(KEY,),
    )
    for _ in range(2):
        run(compute.create_server(spec))
    [nova] = list(conn.compute.servers(tags=f"vpod-{server_id}"))
    nova = conn.compute.get_server(nova.id)
    assert (nova.status, nova.name, nova.flavor.original_name) == (
        "ACTIVE",
        spec.name,
        "vpod.poplar",
    )
    assert nova.has_config_drive in (True, "True")
    assert nova.key_name == f"vpod-{server_id}"
    assert conn.compute.find_keypair(nova.key_name).public_key.strip() == KEY
    assert [a["id"] for a in nova.attached_volumes] == [cinder[0].id]
    [addresses] = nova.addresses.values()
    assert [a["addr"] for a in addresses] == ["10.77.3.11"]
    network = conn.network.find_network(f"vpod-{cluster}")
    [subnet] = list(conn.network.subnets(network_id=network.id))
    assert (subnet.cidr, subnet.gateway_ip, subnet.is_dhcp_enabled) == ("10.77.3.0/24", None, False)

    # Settings as Nova metadata; the security group lets out only the group and the controller.
    vipu = VipuAccess(host="127.0.0.1", port=8090, user_id=f"u-{tag}", access_key="s3cret")
    setup = ServerSetup(
        spec.cluster_name,
        ((spec.name, spec.address),),
        vipu=vipu,
        endpoints=("127.0.0.1:8080",),
    )
    assert run(compute.setup(server_id, setup)).has_vipu_credentials
    files = from_metadata(conn.compute.get_server_metadata(nova).metadata)
    assert "s3cret" in files[HCL]["content"]
    assert "IPUOF_VIPU_API_PORT=8090" in files["/etc/environment"]["content"].replace('"', "")
    kept = run(compute.setup(server_id, replace(setup, vipu=replace(vipu, access_key=None))))
    assert kept.has_vipu_credentials  # the server still holds the user's key
    group = conn.network.find_security_group(f"vpod-{cluster}")
    egress = {
        (r.remote_ip_prefix, r.port_range_min, r.remote_group_id)
        for r in conn.network.security_group_rules(security_group_id=group.id)
        if r.direction == "egress"
    }
    assert egress == {
        (None, None, group.id),
        ("127.0.0.1/32", 8090, None),
        ("127.0.0.1/32", 8080, None),
    }

    shell = run(compute.shell(server_id))
    assert (shell.kind, shell.host, shell.port, shell.user) == ("ssh", "10.77.3.11", 22, "ubuntu")
    assert "vnc_auto.html" in shell.console
    assert "token" in shell.console

    # A data volume: attached by Nova, then detached; Cinder's statuses follow.
    run(volumes.create(data, 2, "ssd", None))
    device = run(volumes.attach(data, server_id, "data"))
    assert device.startswith("/dev/")
    assert run(volumes.attach(data, server_id, "data")) == device
    assert conn.block_storage.get_volume(conn.block_storage.find_volume(f"vpod-{data}")).status == (
        "in-use"
    )
    for _ in range(2):
        run(volumes.detach(data, server_id))
    assert conn.block_storage.find_volume(f"vpod-{data}").status == "available"
    for _ in range(2):
        run(volumes.delete(data))
    assert conn.block_storage.find_volume(f"vpod-{data}") is None

    # Suspension is shelve-offload; every other action ends in the state Nova reports.
    for action, status in (
        (compute.shelve, "SHELVED_OFFLOADED"),
        (compute.unshelve, "ACTIVE"),
        (compute.stop, "SHUTOFF"),
        (compute.start, "ACTIVE"),
        (compute.reboot, "ACTIVE"),
    ):
        for _ in range(1 if action == compute.reboot else 2):
            run(action(server_id))
        assert conn.compute.get_server(nova.id).status == status, action
    run(compute.stop(server_id))
    with pytest.raises(DriverError, match="SHUTOFF: it has no shell"):
        run(compute.shell(server_id))
    run(compute.start(server_id))
    run(compute.rebuild(server_id, "ubuntu-22.04-poplar-3.4"))
    assert conn.compute.get_server(nova.id).status == "ACTIVE"

    # Deleting takes the server, its keypair, port and the cluster's network and group along.
    for _ in range(2):
        run(compute.delete_server(server_id))
        run(volumes.delete(boot))
    assert list(conn.compute.servers(tags=f"vpod-{server_id}")) == []
    assert conn.compute.find_keypair(f"vpod-{server_id}") is None
    assert conn.network.find_network(f"vpod-{cluster}") is None
    assert conn.network.find_security_group(f"vpod-{cluster}") is None
    assert conn.block_storage.find_volume(f"vpod-{boot}") is None


def test_what_openstack_refuses_is_permanent_and_says_what_to_map(
    openstack_cloud: LocalOpenStack,
) -> None:
    compute = OpenStackCompute(replace(openstack_cloud.options, default_flavor=""))
    spec = ServerSpec(
        server_id=f"sv-{uuid.uuid4().hex[:8]}",
        name="odd-1",
        cluster_id="cl-odd",
        cluster_name="odd",
        image="ubuntu-22.04-poplar-3.4",
        flavor="g2a-ai-fast-v1pod-64",
        bare_metal=False,
        address="10.78.0.11",
    )
    with pytest.raises(
        DriverError, match=r"no flavor 'g2a-ai-fast-v1pod-64'.*\[openstack.flavors\]"
    ) as refused:
        run(compute.create_server(spec))
    assert not isinstance(refused.value, TemporaryDriverError)
    with pytest.raises(DriverError, match="Cinder has no volume") as missing:
        run(CinderVolumes(openstack_cloud.options).attach("vx-none", spec.server_id, "x"))
    assert not missing.value.temporary


def test_an_openstack_that_does_not_answer_is_a_temporary_error(
    openstack_cloud: LocalOpenStack, tmp_path: Any
) -> None:
    """Keystone on a port where nothing listens: the task runner would try again later."""
    clouds = tmp_path / "clouds.yaml"
    text = openstack_cloud.clouds_yaml.read_text()
    clouds.write_text(re.sub(r"(auth_url: http://127\.0\.0\.1):\d+", r"\1:1", text))
    before = os.environ["OS_CLIENT_CONFIG_FILE"]
    os.environ["OS_CLIENT_CONFIG_FILE"] = str(clouds)
    try:
        with pytest.raises(TemporaryDriverError, match="cannot reach it"):
            run(OpenStackCompute(openstack_cloud.options).shelve("sv-any"))
    finally:
        os.environ["OS_CLIENT_CONFIG_FILE"] = before


def test_a_volume_cinder_cannot_place_fails_with_cinder_s_reason(
    openstack_cloud: LocalOpenStack,
) -> None:
    """A vpod volume type mapped to a Cinder type no backend serves: Cinder puts the volume
    in ``error``, and the driver's permanent error carries Cinder's own sentence (its user
    message), not only the status."""
    admin = openstack_cloud.admin()
    cinder_type = admin.block_storage.find_type("vpod-no-backend") or (
        admin.block_storage.create_type(
            name="vpod-no-backend", extra_specs={"volume_backend_name": "no-such-backend"}
        )
    )
    options = replace(openstack_cloud.options, volume_types={"nowhere": cinder_type.name})
    volumes = CinderVolumes(options)
    volume_id = f"vn-{uuid.uuid4().hex[:8]}"
    try:
        with pytest.raises(DriverError, match=r"is error: .*backend") as failed:
            run(volumes.create(volume_id, 1, "nowhere", None))
        assert not failed.value.temporary
    finally:
        run(volumes.delete(volume_id))
