"""A real OpenStack for the ``openstack`` tests, brought up by scripts/openstack-up.

``openstack_cloud`` (session) runs the script (a minute on a configured machine; it installs
Debian's packages the first time), points openstacksdk at its clouds.yaml and empties the
project ``vpod`` of what an earlier run left. Without root the tests skip, saying why; where
the script fails they skip with its last lines, unless ``VPOD_REQUIRE_OPENSTACK=1``
(``scripts/test -m openstack`` sets it): then they fail.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from vpod.cloud.drivers import OpenStackOptions

REPO = Path(__file__).resolve().parents[2]
DIR = Path(os.environ.get("VPOD_OPENSTACK_DIR", "/var/lib/vpod-openstack"))
UP_TIMEOUT_S = 3600
"""A safety net for a hung bring-up (a first install downloads ~400 packages)."""


@dataclass(frozen=True)
class LocalOpenStack:
    clouds_yaml: Path
    options: OpenStackOptions

    def admin(self) -> Any:
        import openstack

        return openstack.connect(cloud="vpod-admin")

    def project(self) -> Any:
        import openstack

        return openstack.connect(cloud="vpod")


def _unavailable(reason: str) -> None:
    if os.environ.get("VPOD_REQUIRE_OPENSTACK") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


EMPTY_WAIT_S = 300
"""A safety net per resource while emptying the project (Nova and Cinder take seconds)."""


def _empty(conn: Any, admin: Any) -> None:
    """Remove every server, volume, port, network, group and keypair of the project. What an
    interrupted run left half-way (a server stuck in a task, a volume still attaching or
    attached to a server that is gone) is reset by the administrator, then removed."""
    from openstack import exceptions

    stuck = (exceptions.ResourceTimeout, exceptions.ResourceFailure)
    for server in list(conn.compute.servers()):
        conn.compute.delete_server(server, ignore_missing=True)
        try:
            conn.compute.wait_for_delete(server, interval=1, wait=EMPTY_WAIT_S)
        except exceptions.ResourceTimeout:
            admin.compute.reset_server_state(server.id, "error")
            conn.compute.delete_server(server, ignore_missing=True)
            conn.compute.wait_for_delete(server, interval=1, wait=EMPTY_WAIT_S)
    for keypair in list(conn.compute.keypairs()):
        conn.compute.delete_keypair(keypair, ignore_missing=True)
    for volume in list(conn.block_storage.volumes()):
        try:
            if volume.status not in ("available", "error", "deleting"):
                try:  # a boot volume is freed a moment after its server went
                    conn.block_storage.wait_for_status(
                        volume, "available", failures=["error"], interval=1, wait=EMPTY_WAIT_S
                    )
                except stuck:
                    admin.block_storage.reset_volume_status(
                        volume.id, status="error", attach_status="detached", migration_status=None
                    )
            if volume.status != "deleting":
                conn.block_storage.delete_volume(volume, ignore_missing=True)
            conn.block_storage.wait_for_delete(volume, interval=1, wait=EMPTY_WAIT_S)
        except exceptions.NotFoundException:
            continue
    for port in list(conn.network.ports()):
        conn.network.delete_port(port, ignore_missing=True)
    for network in list(conn.network.networks()):
        conn.network.delete_network(network, ignore_missing=True)
    for group in list(conn.network.security_groups()):
        if group.name != "default":
            conn.network.delete_security_group(group, ignore_missing=True)


@pytest.fixture(scope="session")
def openstack_cloud() -> Iterator[LocalOpenStack]:
    if os.geteuid() != 0:
        _unavailable("the OpenStack tests need root (scripts/openstack-up installs packages)")
    try:
        up = subprocess.run(
            [str(REPO / "scripts" / "openstack-up")],
            capture_output=True,
            text=True,
            timeout=UP_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        _unavailable(f"scripts/openstack-up did not finish in {UP_TIMEOUT_S} s")
    if up.returncode != 0:
        tail = " | ".join((up.stdout + up.stderr).strip().splitlines()[-3:])
        _unavailable(f"scripts/openstack-up failed: {tail}")
    clouds = DIR / "clouds.yaml"
    previous = os.environ.get("OS_CLIENT_CONFIG_FILE")
    os.environ["OS_CLIENT_CONFIG_FILE"] = str(clouds)
    cloud = LocalOpenStack(
        clouds_yaml=clouds,
        options=OpenStackOptions(
            cloud="vpod",
            default_flavor="vpod.poplar",
            default_image="vpod-poplar-sdk",
            flavors={
                "g3-ai-24-232-1250-h100-80-1": "vpod.gpu",
                "bm1-ai-small-v1pod-4": "vpod.metal",
            },
            wait_s=600.0,
        ),
    )
    _empty(cloud.project(), cloud.admin())
    try:
        yield cloud
    finally:
        if previous is None:
            os.environ.pop("OS_CLIENT_CONFIG_FILE", None)
        else:
            os.environ["OS_CLIENT_CONFIG_FILE"] = previous
