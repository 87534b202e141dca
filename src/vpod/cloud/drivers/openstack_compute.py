"""The ``openstack`` compute driver: every server is a Nova server (openstacksdk).

========================  ==========================================================
call                      Nova
========================  ==========================================================
``create_server``         boot of the mapped flavor; from the boot volume (VMs) or the
                          mapped Glance image; on a port of the cluster's Neutron network
                          at the server's address (:mod:`.openstack_network`); config
                          drive on; cloud-init user data (:mod:`.openstack_setup`); the
                          project's public keys (a Nova keypair, and cloud-init)
``delete_server``         delete, then its port, keypair, and the cluster's network once
                          its last server is gone
``shelve``/``unshelve``   shelve, then shelve-offload (its compute is released; its boot
                          volume stays) / unshelve
``stop``/``start``        stop / start (bare metal keeps its machine)
``rebuild``/``reboot``    rebuild with the mapped image / soft reboot
``setup``                 the settings as Nova metadata (config drive, metadata service),
                          the security group's egress to the controller and IPUoF
``shell``                 ``kind: ssh`` to the server's address, and Nova's remote
                          console URL
========================  ==========================================================

A Nova server carries the tag ``vpod-SERVER_ID`` (and ``vpod-cluster-CLUSTER_ID``), by which
it is found again: each call is idempotent, as the task runner needs. Every action waits
until Nova reports the state it leads to; a server that goes to ERROR fails the task with
Nova's fault, a wait that runs out (``wait_s``) is temporary.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import openstack_network as net
from .base import (
    DriverError,
    NetworkReach,
    ServerSetup,
    ServerSpec,
    SetupResult,
    ShellAccess,
    ShellRequest,
    ShellSession,
)
from .openstack_lookup import cluster_tag, find_server, get_server, get_volume, server_tag
from .openstack_options import OpenStackOptions
from .openstack_session import Session, wait_for
from .openstack_setup import HCL, from_metadata, render_files, to_metadata, user_data

if TYPE_CHECKING:
    from openstack.compute.v2.server import Server
    from openstack.connection import Connection

SHELVED = ("SHELVED", "SHELVED_OFFLOADED")
SSH_PORT = 22


class OpenStackCompute:
    name = "openstack"

    def __init__(self, options: OpenStackOptions, session: Session | None = None) -> None:
        self.options = options
        self._session = session or Session(options)

    def refusal(self) -> str | None:
        return None  # Nova isolates servers; nothing of this host is shared with tenants

    def mount_problem(self) -> str | None:
        return None  # the server mounts its bucket itself (its image carries rclone)

    def _wait(self, conn: Connection, server: Server, *status: str) -> Server:
        """Until Nova reports one of ``status`` (ERROR: the server's fault, permanent)."""
        return wait_for(
            lambda: conn.compute.get_server(server.id),
            lambda s: str(s.status),
            status,
            ("ERROR",),
            self.options.wait_s,
            f"Nova server {server.name}",
            why=lambda s: str((s.fault or {}).get("message", "no reason given")),
        )

    # -- life cycle ---------------------------------------------------------------------------

    async def create_server(self, spec: ServerSpec) -> None:
        await self._session.call(f"creating server {spec.name}", lambda c: self._create(c, spec))

    def _create(self, conn: Connection, spec: ServerSpec) -> None:
        server = find_server(conn, spec.server_id)
        if server is None:
            server = self._boot(conn, spec)
        if server.status != "ACTIVE":
            self._wait(conn, server, "ACTIVE")

    def _boot(self, conn: Connection, spec: ServerSpec) -> Server:
        from openstack import exceptions as sdk

        flavor_name = self.options.nova_flavor(spec.flavor)
        try:
            flavor = conn.compute.find_flavor(flavor_name, ignore_missing=False)
        except sdk.NotFoundException:
            raise DriverError(
                f"Nova has no flavor {flavor_name!r} for vpod flavor {spec.flavor}: map it in"
                " cloud.toml [openstack.flavors] (docs/openstack.md)"
            ) from None
        attrs: dict[str, Any] = {
            "name": spec.name,
            "flavor_id": flavor.id,
            "has_config_drive": True,
            "metadata": {
                "vpod-server": spec.server_id,
                "vpod-cluster": spec.cluster_id,
                "vpod-address": spec.address,
            },
            "tags": [server_tag(spec.server_id), cluster_tag(spec.cluster_id)],
            "user_data": base64.b64encode(
                user_data(spec.name, self.options.ssh_user, spec.public_keys).encode()
            ).decode(),
        }
        if spec.boot_volume_id is not None:
            volume = get_volume(conn, spec.boot_volume_id)
            attrs["block_device_mapping"] = [
                {
                    "boot_index": 0,
                    "uuid": volume.id,
                    "source_type": "volume",
                    "destination_type": "volume",
                    "delete_on_termination": False,
                }
            ]
        else:
            attrs["image_id"] = self._image(conn, spec.image).id
        if self.options.networks:
            port = net.ensure_port(conn, spec.cluster_id, spec.server_id, spec.address)
            attrs["networks"] = [{"port": port.id}]
        else:
            attrs["networks"] = "none"
        if spec.public_keys:
            attrs["key_name"] = self._keypair(conn, spec.server_id, spec.public_keys[0])
        return conn.compute.create_server(**attrs)

    def _image(self, conn: Connection, image: str) -> Any:
        from openstack import exceptions as sdk

        name = self.options.glance_image(image)
        try:
            return conn.image.find_image(name, ignore_missing=False)
        except sdk.NotFoundException:
            raise DriverError(
                f"Glance has no image {name!r} for vpod image {image}: map it in cloud.toml"
                " [openstack.images] (docs/openstack.md)"
            ) from None

    def _keypair(self, conn: Connection, server_id: str, public_key: str) -> str:
        name = f"vpod-{server_id}"
        existing = conn.compute.find_keypair(name)
        if existing is not None and existing.public_key.strip() != public_key.strip():
            conn.compute.delete_keypair(existing)
            existing = None
        if existing is None:
            conn.compute.create_keypair(name=name, public_key=public_key)
        return name

    async def delete_server(self, server_id: str) -> None:
        await self._session.call(
            f"deleting server {server_id}", lambda c: self._delete(c, server_id)
        )

    def _delete(self, conn: Connection, server_id: str) -> None:
        server = find_server(conn, server_id)
        cluster_id = None
        if server is not None:
            cluster_id = (server.metadata or {}).get("vpod-cluster")
            conn.compute.delete_server(server, ignore_missing=True)
            conn.compute.wait_for_delete(server, interval=1, wait=int(self.options.wait_s))
        keypair = conn.compute.find_keypair(f"vpod-{server_id}")
        if keypair is not None:
            conn.compute.delete_keypair(keypair, ignore_missing=True)
        if self.options.networks:
            ports = list(conn.network.ports(name=f"vpod-{server_id}"))
            net.delete_port(conn, server_id)
            if cluster_id is None and ports:
                network = conn.network.get_network(ports[0].network_id)
                cluster_id = network.name.removeprefix("vpod-")
            if cluster_id is not None:
                net.delete_network_if_unused(conn, cluster_id)

    async def shelve(self, server_id: str) -> None:
        await self._session.call(
            f"shelving server {server_id}", lambda c: self._shelve(c, server_id)
        )

    def _shelve(self, conn: Connection, server_id: str) -> None:
        server = get_server(conn, server_id)
        if server.status not in SHELVED:
            conn.compute.shelve_server(server)
            server = self._wait(conn, server, *SHELVED)
        if server.status == "SHELVED":  # Nova keeps it on its host for shelved_offload_time
            conn.compute.shelve_offload_server(server)
            self._wait(conn, server, "SHELVED_OFFLOADED")

    async def unshelve(self, server_id: str) -> None:
        await self._session.call(
            f"unshelving server {server_id}", lambda c: self._act(c, server_id, "unshelve")
        )

    async def stop(self, server_id: str) -> None:
        await self._session.call(
            f"stopping server {server_id}", lambda c: self._act(c, server_id, "stop")
        )

    async def start(self, server_id: str) -> None:
        await self._session.call(
            f"starting server {server_id}", lambda c: self._act(c, server_id, "start")
        )

    def _act(self, conn: Connection, server_id: str, action: str) -> None:
        server = get_server(conn, server_id)
        target = "SHUTOFF" if action == "stop" else "ACTIVE"
        if server.status == target:
            return
        if action == "unshelve":
            if server.status in SHELVED:
                conn.compute.unshelve_server(server)
        elif action == "stop":
            conn.compute.stop_server(server)
        elif server.status == "SHUTOFF":
            conn.compute.start_server(server)
        elif server.status in SHELVED:
            conn.compute.unshelve_server(server)
        self._wait(conn, server, target)

    async def rebuild(self, server_id: str, image: str) -> None:
        await self._session.call(
            f"rebuilding server {server_id}", lambda c: self._rebuild(c, server_id, image)
        )

    def _rebuild(self, conn: Connection, server_id: str, image: str) -> None:
        server = get_server(conn, server_id)
        glance = self._image(conn, image)
        conn.compute.rebuild_server(server, image=glance.id)
        self._wait(conn, server, "ACTIVE")

    async def reboot(self, server_id: str) -> None:
        await self._session.call(
            f"rebooting server {server_id}", lambda c: self._reboot(c, server_id)
        )

    def _reboot(self, conn: Connection, server_id: str) -> None:
        server = get_server(conn, server_id)
        conn.compute.reboot_server(server, "SOFT")
        self._wait(conn, server, "ACTIVE")

    # -- setup and shell ----------------------------------------------------------------------

    async def setup(self, server_id: str, setup: ServerSetup) -> SetupResult:
        return await self._session.call(
            f"configuring server {server_id}", lambda c: self._setup(c, server_id, setup)
        )

    def _setup(self, conn: Connection, server_id: str, setup: ServerSetup) -> SetupResult:
        server = get_server(conn, server_id)
        current = dict(server.metadata or {})
        old_hcl = from_metadata(current).get(HCL, {}).get("content", "")
        files, has_key = render_files(setup, server.name, self.options.ssh_user, old_hcl)
        items = to_metadata(files)
        stale = [k for k in current if k.startswith("vpod-setup-") and k not in items]
        if stale:
            conn.compute.delete_server_metadata(server, stale)
        conn.compute.set_server_metadata(server, **items)
        if self.options.networks:
            endpoints = list(setup.endpoints) + list(self.options.allow_cidrs)
            if setup.vipu is not None:
                endpoints.append(f"{setup.vipu.host}:{setup.vipu.port}")
            cluster_id = current.get("vpod-cluster")
            if cluster_id:
                net.allow_egress(conn, cluster_id, endpoints)
        return SetupResult(has_vipu_credentials=has_key)

    async def shell(self, server_id: str) -> ShellAccess:
        return await self._session.call(
            f"finding server {server_id}", lambda c: self._shell(c, server_id)
        )

    def _shell(self, conn: Connection, server_id: str) -> ShellAccess:
        from openstack import exceptions as sdk

        server = get_server(conn, server_id)
        if server.status != "ACTIVE":
            raise DriverError(
                f"server {server.name} is {server.status}: it has no shell until it runs again"
                " (resume or start the cluster)"
            )
        address = _address(server)
        try:
            console = conn.compute.create_server_remote_console(
                server, protocol="vnc", type="novnc"
            ).url
        except sdk.HttpException:
            console = ""  # the cloud offers no remote console: ssh alone
        return ShellAccess(
            kind="ssh", host=address, user=self.options.ssh_user, port=SSH_PORT, console=console
        )

    async def open_shell(self, server_id: str, request: ShellRequest) -> ShellSession:
        del server_id, request
        raise DriverError(
            "servers on OpenStack are reached with ssh (GET .../shell says where), not through"
            " the controller's relay"
        )

    # -- what the local driver does on the host, and Neutron and Nova do here ------------------

    async def create_network(self, cluster_id: str, cidr: str) -> str:
        """The cluster's Neutron network and subnet are made with its first server (the
        subnet asked for is the one it gets)."""
        del cluster_id
        return cidr

    async def set_reach(self, cluster_id: str, reach: NetworkReach) -> None:
        """The cluster's security group follows ``ServerSetup.endpoints`` (see
        :mod:`.openstack_network`); nothing more to program here."""
        del cluster_id, reach

    async def delete_network(self, cluster_id: str) -> None:
        """The network goes with the cluster's last server (:meth:`delete_server`)."""
        del cluster_id

    def ipuof_sources(self, addresses: Sequence[str]) -> tuple[str, ...]:
        return tuple(addresses)  # each Nova server dials from its fixed address

    async def authorize_keys(self, server_id: str, lines: Sequence[str]) -> None:
        """Keys reach Nova servers at boot (``ServerSpec.public_keys``, cloud-init): a running
        server keeps the ones it booted with."""
        del server_id, lines

    async def ssh_host_keys(self, server_id: str) -> tuple[str, ...]:
        del server_id
        return ()  # Nova shows them in the console log only; not read here

    async def serve_ssh(self, server_id: str) -> None:
        del server_id  # the image's own sshd listens on the server's address

    async def open_ssh(self, server_id: str) -> ShellSession:
        del server_id
        raise DriverError(
            "servers on OpenStack are reached with ssh at their address (GET .../shell says"
            " where), not through the controller's tunnel"
        )

    async def close(self) -> None:
        return None


def _address(server: Server) -> str:
    """The server's first fixed address (its cluster network's), else its access address."""
    for entries in (server.addresses or {}).values():
        for entry in entries:
            if entry.get("version") == 4 and entry.get("addr"):
                return str(entry["addr"])
    return str(server.access_ipv4 or (server.metadata or {}).get("vpod-address", ""))
