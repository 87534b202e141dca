"""What the cloud asks of compute and volume back ends: two small Protocols.

The embedded default is :mod:`.local_compute` and :mod:`.local_volumes`; the
OpenStack pair (:mod:`.openstack_compute`, :mod:`.cinder_volumes`, docs/openstack.md)
implements the same calls (see docs/cloud.md, "Drivers"):

=====================  ===============================  ==============================
call                   local                            OpenStack
=====================  ===============================  ==============================
``create_server``      a workspace directory            Nova boot (Ironic for bare metal)
``shelve``/``unshelve`` mark offloaded / back            Nova shelve-offload / unshelve
``stop``/``start``     mark SHUTOFF / ACTIVE            Nova stop / start (bare metal)
``rebuild``            re-image the workspace           Nova rebuild
``setup``              write env, hosts, vipu-cli.hcl,  Nova metadata + cloud-init
                       ~/.aws, rclone mount
``create_network``     a bridge and a subnet lease      Neutron network + subnet
``set_reach``          the vPOD's nftables table        security groups
``delete_network``     bridge, rules and lease gone     Neutron network delete
``shell``              how to reach it (no host path)   ssh to its address, Nova console
``open_shell``         bash in the server's sandbox     (none: tenants ssh themselves)
``open_ssh``           ``sshd -i`` in the sandbox       (none: ssh to the floating IP)
``authorize_keys``     write etc/ssh/authorized_keys    Nova keypair (cloud-init)
``serve_ssh``          port 22 on the tenant network    (none: the image's own sshd)
volume ``create``      a directory                      Cinder create
volume ``attach``      a link under ``/mnt``             Nova volume attachment
=====================  ===============================  ==============================

Every call is idempotent (creating what exists, or deleting what is gone,
succeeds), because a task interrupted by a controller restart runs again
from the start. Failures raise :class:`DriverError` with a sentence, or
:class:`TemporaryDriverError` when the same call may succeed later (the back
end is busy or unreachable): the task runner retries those with backoff.

Drivers import only this module and the cloud's model (an import-linter
contract), so a driver can be written, and tested, without the rest of the
cloud.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..model.errors import DriverError, TemporaryDriverError

__all__ = [
    "ComputeDriver",
    "DatasetAccess",
    "DriverError",
    "NetworkReach",
    "ServerSetup",
    "ServerSpec",
    "SetupResult",
    "ShellAccess",
    "ShellRequest",
    "ShellSession",
    "TemporaryDriverError",
    "VipuAccess",
    "VolumeDriver",
]


@dataclass(frozen=True)
class ServerSpec:
    server_id: str
    name: str
    """Host name, e.g. ``train-1-poplar-1``."""
    cluster_id: str
    cluster_name: str
    image: str
    flavor: str
    bare_metal: bool
    address: str
    """Private address on the cluster's network."""
    host_id: str | None = None
    """The registered host it must run on (bare metal, GPU VMs)."""
    boot_volume_id: str | None = None
    """VMs boot from a volume; bare metal from its local disk."""
    local_disk_gib: int = 0
    """A VM's ephemeral local disk (its flavor's ``disk_gib``): ``/scratch``, emptied by
    suspension; 0: none (bare metal's local disk is its root)."""
    public_keys: tuple[str, ...] = ()
    """OpenSSH public keys the server lets in (the project's keypairs)."""


@dataclass(frozen=True)
class VipuAccess:
    """How a Poplar server reaches the V-IPU controller, for ``vipu`` and Poplar."""

    host: str
    port: int
    user_id: str
    access_key: str | None
    """None: keep the key the server already holds (resume, reconfiguration)."""


@dataclass(frozen=True)
class DatasetAccess:
    """A project's bucket as a server gets it: ``~/.aws`` files, ``AWS_*`` variables and,
    with ``mount_path``, a mount of the bucket there."""

    endpoint_url: str
    region: str
    bucket: str
    path_style: bool
    access_key_id: str = field(repr=False)
    secret_access_key: str = field(repr=False)
    mount_path: str | None = None
    """Absolute path on the server; None: credentials only."""


@dataclass(frozen=True)
class ServerSetup:
    """What POST_DEPLOY_SETUP puts on a server."""

    cluster_name: str
    peers: tuple[tuple[str, str], ...]
    """(host name, address) of every server of the cluster."""
    env: Mapping[str, str] = field(default_factory=dict)
    vipu: VipuAccess | None = None
    datasets: DatasetAccess | None = None
    """None: the server holds no dataset storage (written files are removed)."""
    devices: tuple[tuple[str, str], ...] = ()
    """(path in the server, path on the host) of the device nodes of the GPUs it holds:
    the only GPUs its processes may see (GPU clusters whose hosts run an agent)."""

    authorized_keys: tuple[str, ...] | None = None
    """The public keys (``authorized_keys`` lines) its sshd accepts; None: keep them."""
    endpoints: tuple[str, ...] = ()
    """``host:port`` the server must reach beyond its peers (the controller's cloud API, the
    IPUoF endpoints of its allocation); drivers with a network of their own allow only these
    (and the V-IPU user API of ``vipu``)."""
    known_hosts: tuple[str, ...] = ()
    """``known_hosts`` lines of its peers' SSH host keys (``name,address TYPE KEY``), so
    ``ssh PEER`` from the server checks the key without asking."""


@dataclass(frozen=True)
class NetworkReach:
    """What a cluster's servers may reach beyond each other (and nothing else of the host)."""

    services: tuple[tuple[str, int], ...] = ()
    """(host, port) of the controller's APIs and dataset storage endpoints servers dial; a
    loopback service is reached at the server's gateway on the same port."""
    ipuof_hosts: tuple[str, ...] = ()
    """IPUoF addresses of the IPU-Machines in the cluster's allocation."""


@dataclass(frozen=True)
class SetupResult:
    has_vipu_credentials: bool
    """False when ``vipu.access_key`` was None and the server holds no key: issue one."""


@dataclass(frozen=True)
class ShellAccess:
    """How a tenant reaches a server's shell; never a path of the host."""

    kind: str
    """``relay``: through the cloud API (a WebSocket, docs/cloud.md); ``ssh``: to ``host``."""
    host: str
    """The server's host name (relay) or the address to ssh to."""
    user: str
    """Who the shell runs as on the server."""
    port: int = 0
    """ssh's port; 0 for the relay."""
    console: str = ""
    """A remote console's URL (OpenStack: Nova's noVNC); empty where there is none."""


@dataclass(frozen=True)
class ShellRequest:
    """What a caller of the relay asks for."""

    command: str | None = None
    """A command line for the server's shell (``bash -c``); ``None``: a shell."""
    tty: bool = False
    """A terminal of its own (an interactive shell), else pipes (stdout and stderr apart)."""
    rows: int = 24
    cols: int = 80
    term: str = "xterm"
    lang: str = ""


class ShellSession(Protocol):
    """A running shell of a server (see :mod:`.sessions`)."""

    async def read(self) -> tuple[int, bytes] | None:
        """The next output chunk: (1 stdout | 2 stderr, bytes); ``None`` at the end."""

    async def write(self, data: bytes) -> None: ...

    async def close_input(self) -> None: ...

    def resize(self, rows: int, cols: int) -> None: ...

    async def wait(self) -> int:
        """The exit status."""

    async def end(self) -> None:
        """Kill what still runs; release everything."""


class ComputeDriver(Protocol):
    name: str

    async def create_server(self, spec: ServerSpec) -> None: ...

    async def delete_server(self, server_id: str) -> None: ...

    async def shelve(self, server_id: str) -> None:
        """Release the server's compute, keeping its boot volume (VMs)."""

    async def unshelve(self, server_id: str) -> None: ...

    async def stop(self, server_id: str) -> None:
        """Power off, keeping the machine (bare metal)."""

    async def start(self, server_id: str) -> None: ...

    async def rebuild(self, server_id: str, image: str) -> None:
        """Re-image the boot disk; attached data volumes stay."""

    async def reboot(self, server_id: str) -> None: ...

    async def setup(self, server_id: str, setup: ServerSetup) -> SetupResult: ...

    async def create_network(self, cluster_id: str, cidr: str) -> str:
        """The cluster's own network (idempotent); returns the subnet it has, ``cidr`` when
        that was free (servers are then addressed in the subnet returned)."""

    async def set_reach(self, cluster_id: str, reach: NetworkReach) -> None:
        """Let the cluster's servers reach exactly ``reach`` beyond each other."""

    async def delete_network(self, cluster_id: str) -> None:
        """Remove the cluster's network (its servers are gone); nothing if it is gone."""

    def ipuof_sources(self, addresses: Sequence[str]) -> tuple[str, ...]:
        """Where the IPUoF connections of servers at ``addresses`` come from, as the
        IPU-Machines see them (the hosts their allocation lets attach)."""

    async def shell(self, server_id: str) -> ShellAccess: ...

    def mount_problem(self) -> str | None:
        """Why this back end cannot mount buckets on servers, in one line; None when it can."""

    async def open_shell(self, server_id: str, request: ShellRequest) -> ShellSession:
        """Start a shell (or ``request.command``) on the server, for the relay."""

    def refusal(self) -> str | None:
        """Why this driver cannot run tenants' servers safely here, in one line (``None``:
        it can); creating servers is then refused."""

    async def authorize_keys(self, server_id: str, lines: Sequence[str]) -> None:
        """Make ``lines`` (public keys) the keys the server's sshd accepts."""

    async def ssh_host_keys(self, server_id: str) -> tuple[str, ...]:
        """The server's public SSH host keys (``TYPE BASE64``); empty when it has none."""

    async def close(self) -> None:
        """The controller stops: let go of what this process holds on the host (the local
        driver's scratch mounts; made again at the next use)."""

    async def serve_ssh(self, server_id: str) -> None:
        """Let the server's peers ssh to it on their network (idempotent; called after
        every setup and by the health round, so a restarted controller serves again)."""

    async def open_ssh(self, server_id: str) -> ShellSession:
        """Connect to the server's sshd: the session's input and output (stream 1) carry the
        SSH protocol, its stream 2 is sshd's log."""


class VolumeDriver(Protocol):
    name: str

    async def create(
        self, volume_id: str, size_gib: int, volume_type: str, image: str | None
    ) -> None: ...

    async def delete(self, volume_id: str) -> None: ...

    async def attach(self, volume_id: str, server_id: str, mount_name: str) -> str:
        """Attach to a server; returns where it appears there (device or mount point)."""

    async def detach(self, volume_id: str, server_id: str) -> None: ...
