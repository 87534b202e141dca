"""The embedded compute driver: a server is a sandboxed workspace on this host.

A server is a directory tree (see :mod:`.workspace`) with its own HOME,
environment and ``vipu-cli.hcl``, and a uid of its own from a configured
range (``sandbox_uid_first``/``sandbox_uid_count``, 200000.. by default).
Its shells run inside a bubblewrap sandbox (:mod:`.sandbox`): its own mount,
PID, IPC and UTS namespaces, as its uid, seeing only its own files, attached
volumes and the host's system directories read-only. ``vpod cluster ssh``
reaches them through the controller (:meth:`LocalCompute.open_shell`, relayed
over a WebSocket by the cloud API); the shell info names no host path.

Where the host cannot sandbox (no bwrap, not root, no namespaces),
:meth:`LocalCompute.refusal` says why and the cloud refuses to create
servers, unless the operator chose ``unsafe_shared_host``: shells then run
on the host as the controller's own user, in the server's directory (no
isolation at all; for a single-user laptop).

Shelving (suspension) keeps the server's root, which lives on its boot
volume, and marks the server SHELVED_OFFLOADED: it has no shell until
unshelved. Bare-metal servers are stopped instead (SHUTOFF), keeping their
local disk. Each of these, and deleting, first ends the server's open shells.
"""

from __future__ import annotations

import asyncio
import getpass
import ipaddress
import os
import shutil
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from . import confined, rclone_mount, scratch, ssh_server
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
from .dataset_files import dataset_env, write_aws_files
from .gpu_device_nodes import gpu_devices, real_gpus
from .local_networks import LocalNetworks
from .nvidia_userland import host_userland
from .peer_ssh import PeerSsh, run_sshd
from .sandbox import (
    SERVER_USER,
    SYSTEM_DIRS,
    Sandbox,
    UidRange,
    allocate_uid,
    own_tree,
    sandbox_problem,
)
from .sessions import ProcessSession, sessions_of
from .tenant_network import NETNS_DIR, NetworkSettings, network_problem
from .workspace import (
    Layout,
    parse_env,
    read_json,
    render_bashrc,
    render_env,
    vipu_env,
    vipu_hcl,
    write_json,
)

T = TypeVar("T")

SSHD_INETD = (ssh_server.SSHD, "-i", "-e", "-f", f"/{ssh_server.CONFIG}")
"""sshd serving one connection on stdin (inetd mode), logging to stderr, with the server's
own configuration."""

ACTIVE, SHUTOFF, SHELVED = "ACTIVE", "SHUTOFF", "SHELVED_OFFLOADED"
HCL_PATH = "etc/vipu/vipu-cli.hcl"
ENV_PATH = "etc/environment"
PASSED_THROUGH = ("TERM", "LANG", "LC_ALL", "COLORTERM")
"""Variables of the caller's terminal a shell keeps; everything else comes from the server."""
MAX_SHELLS = 16
"""Shells a server may have open at once (each is a sandbox of processes on the host)."""
MAX_SSH = 64
"""SSH connections a server may have open at once (each an sshd in a sandbox of its own)."""


def _default_path() -> str:
    """PATH of a server: this installation's scripts (vipu, vipu-admin...), then the system's."""
    return ":".join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"])


class LocalCompute:
    name = "local"

    def __init__(
        self,
        layout: Layout,
        *,
        path: str | None = None,
        uids: UidRange | None = None,
        unsafe_shared_host: bool = False,
        bwrap: str = "",
        max_shells: int = MAX_SHELLS,
        network: NetworkSettings | None = None,
        isolate_network: bool = True,
    ) -> None:
        """``isolate_network=False`` keeps sandboxed servers on the host's network, as vpod
        did before tenant networks: the operator's documented opt-out for a host whose kernel
        has no network namespaces or nftables (``unsafe_shared_network`` in cloud.toml), and
        how benchmarks/tenant_network.py measures what isolation costs."""
        self._layout = layout
        self._max_shells = max_shells
        self._path = path or _default_path()
        self._uids = uids or UidRange()
        self._problem = sandbox_problem(bwrap)
        if self._problem is None and isolate_network:
            no_network = network_problem()
            if no_network is not None:
                self._problem = (
                    f"{no_network} (an operator may keep servers sandboxed on the host's network"
                    " with unsafe_shared_network = true in cloud.toml: docs/cloud.md)"
                )
        self._networks = LocalNetworks(layout.base, network or NetworkSettings())
        self._isolated = isolate_network and self._problem is None
        self._bwrap = bwrap
        self._unsafe = unsafe_shared_host
        self._sessions = sessions_of(str(layout.base))
        self._peer_ssh = PeerSsh(self._serve_peer_ssh)

    @property
    def sandboxed(self) -> bool:
        """Whether servers' shells run in a sandbox (else: the documented unsafe mode)."""
        return self._problem is None

    def refusal(self) -> str | None:
        if self._problem is None or self._unsafe:
            return None
        return (
            f"this host cannot sandbox tenants' servers: {self._problem} (an operator may"
            " accept servers sharing the host unsandboxed with --unsafe-shared-host, see"
            " docs/cloud.md)"
        )

    async def _run(self, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except OSError as exc:
            raise DriverError(f"local compute: {exc}") from exc

    # -- life cycle ---------------------------------------------------------------------------

    async def create_server(self, spec: ServerSpec) -> None:
        await self._run(lambda: self._create(spec))

    def _create(self, spec: ServerSpec) -> None:
        server_dir = self._layout.server_dir(spec.server_id)
        state_path = server_dir / "state.json"
        if read_json(state_path) is not None:
            return
        server_dir.mkdir(parents=True, exist_ok=True)
        if spec.boot_volume_id is not None:
            target = self._layout.volume_data(spec.boot_volume_id)
            if not target.is_dir():
                raise DriverError(
                    f"boot volume {spec.boot_volume_id} of server {spec.name} does not exist"
                )
        else:
            target = server_dir / "disk"
            target.mkdir(exist_ok=True)
        root = server_dir / "root"
        if not root.is_symlink():
            root.symlink_to(target, target_is_directory=True)
        if confined.read(root.resolve(), "etc/image") is None:
            _install_image(root.resolve(), spec.image, spec.name)
        state: dict[str, object] = {
            "status": ACTIVE,
            "image": spec.image,
            "name": spec.name,
            "cluster": spec.cluster_name,
            "bare_metal": spec.bare_metal,
            "host": spec.host_id,
            "address": spec.address,
            "cluster_id": spec.cluster_id,
        }
        if self.sandboxed:
            state["uid"] = self._allocate_uid()
            self._own(root.resolve(), int(str(state["uid"])))
            ssh_server.prepare(root.resolve(), int(str(state["uid"])), SERVER_USER)
        if spec.local_disk_gib > 0 and not spec.bare_metal:
            state["scratch_gib"] = spec.local_disk_gib
        write_json(state_path, state)
        if self._isolated:
            self._networks.server_net(spec.server_id, state)
        self._ensure_scratch(spec.server_id)

    async def close(self) -> None:
        """Unmount every scratch space (its image stays: the next shell or SSH connection
        mounts it again), so no mount outlives the controller that made it."""
        await self._peer_ssh.close()
        await self._run(lambda: scratch.release_all(self._layout.base / "scratch"))

    def _scratch_dir(self, server_id: str) -> Path:
        return self._layout.base / "scratch" / server_id

    def _ensure_scratch(self, server_id: str) -> tuple[tuple[str, Path], ...]:
        """The VM's local disk at ``/scratch`` (made, or mounted again after a host reboot);
        none for bare metal and for servers made without one."""
        state = self._state(server_id)
        size = state.get("scratch_gib")
        if not isinstance(size, int) or size <= 0:
            return ()
        uid = state.get("uid")
        problem = scratch.ensure(
            self._scratch_dir(server_id), size, uid if isinstance(uid, int) else None
        )
        if problem is not None and state.get("scratch_unlimited") != problem:
            state["scratch_unlimited"] = problem  # said once: a plain directory, no size limit
            write_json(self._layout.server_dir(server_id) / "state.json", state)
        return (("/scratch", self._scratch_dir(server_id)),)

    def _allocate_uid(self) -> int:
        in_use = set()
        for state_file in (self._layout.base / "servers").glob("*/state.json"):
            uid = (read_json(state_file) or {}).get("uid")
            if isinstance(uid, int):
                in_use.add(uid)
        return allocate_uid(self._layout.base / "servers", self._uids, in_use)

    def _uid(self, server_id: str) -> int:
        """The server's uid; a server made before uids were given gets one now."""
        state = self._state(server_id)
        uid = state.get("uid")
        if isinstance(uid, int):
            return uid
        uid = self._allocate_uid()
        state["uid"] = uid
        self._own(self._layout.server_root(server_id).resolve(), uid)
        write_json(self._layout.server_dir(server_id) / "state.json", state)
        return uid

    def _own(self, root: Path, uid: int) -> None:
        """The server's uid owns its root and what its tenant writes (home, tmp); ``etc`` and
        ``mnt`` stay the controller's."""
        os.chown(root, uid, uid, follow_symlinks=False)
        for sub in ("home", "tmp"):
            confined.make_dirs(root, sub)
            own_tree(root / sub, uid)
        users = f"{SERVER_USER}:x:{uid}:{uid}::/home:/bin/bash\n"
        confined.write(root, "etc/passwd", "root:x:0:0:root:/root:/usr/sbin/nologin\n" + users)
        confined.write(root, "etc/group", f"root:x:0:\n{SERVER_USER}:x:{uid}:\n")

    async def delete_server(self, server_id: str) -> None:
        await self._peer_ssh.drop(server_id)
        await self._sessions.end_all(server_id)

        def delete() -> None:
            if self._isolated:
                self._networks.remove_server(server_id)
            scratch.discard(self._scratch_dir(server_id))
            rclone_mount.release(self._layout.mounts, server_id)
            (self._layout.mounts / f"{server_id}.path").unlink(missing_ok=True)
            shutil.rmtree(self._layout.server_dir(server_id), True)

        await self._run(delete)

    def _set_status(self, server_id: str, status: str) -> None:
        state = self._state(server_id)
        state["status"] = status
        write_json(self._layout.server_dir(server_id) / "state.json", state)

    def _state(self, server_id: str) -> dict[str, object]:
        state = read_json(self._layout.server_dir(server_id) / "state.json")
        if state is None:
            raise DriverError(f"server {server_id} does not exist on this host")
        return state

    async def shelve(self, server_id: str) -> None:
        await self._peer_ssh.drop(server_id)
        await self._sessions.end_all(server_id)

        def shelve() -> None:
            rclone_mount.release(self._layout.mounts, server_id)  # its compute goes away
            scratch.discard(self._scratch_dir(server_id))  # and its local disk with it
            self._set_status(server_id, SHELVED)

        await self._run(shelve)

    async def unshelve(self, server_id: str) -> None:
        def unshelve() -> None:
            self._ensure_scratch(server_id)  # a new, empty local disk
            self._set_status(server_id, ACTIVE)

        await self._run(unshelve)
        await self.serve_ssh(server_id)

    async def stop(self, server_id: str) -> None:
        await self._peer_ssh.drop(server_id)
        await self._sessions.end_all(server_id)

        def stop() -> None:
            rclone_mount.release(self._layout.mounts, server_id)  # powered off
            self._set_status(server_id, SHUTOFF)

        await self._run(stop)

    async def start(self, server_id: str) -> None:
        await self._run(lambda: self._set_status(server_id, ACTIVE))
        await self.serve_ssh(server_id)

    async def rebuild(self, server_id: str, image: str) -> None:
        await self._sessions.end_all(server_id)
        await self._run(lambda: self._rebuild(server_id, image))

    def _rebuild(self, server_id: str, image: str) -> None:
        state = self._state(server_id)
        root = self._layout.server_root(server_id)
        kept = ssh_server.saved_host_keys(root.resolve())  # the server stays the same host
        for entry in root.iterdir():
            if entry.name == "mnt":
                continue  # attached data volumes stay attached
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        _install_image(root.resolve(), image, str(state.get("name", server_id)))
        uid = state.get("uid")
        ssh_server.restore_host_keys(root.resolve(), kept, uid if isinstance(uid, int) else None)
        if isinstance(uid, int):
            self._own(root.resolve(), uid)
            ssh_server.prepare(root.resolve(), uid, SERVER_USER)
        state.update(image=image, status=ACTIVE)
        write_json(self._layout.server_dir(server_id) / "state.json", state)

    async def reboot(self, server_id: str) -> None:
        await self._peer_ssh.drop(server_id)
        await self._sessions.end_all(server_id)

        def reboot() -> None:
            self._state(server_id)
            root = self._layout.server_root(server_id).resolve()
            tmp = root / "tmp"
            if tmp.is_dir() and not tmp.is_symlink():
                shutil.rmtree(tmp, ignore_errors=True)  # rmtree removes links, never follows
            else:
                confined.unlink(root, "tmp")
            confined.make_dirs(root, "tmp")
            uid = self._state(server_id).get("uid")
            if isinstance(uid, int):
                own_tree(root / "tmp", uid)
            self._set_status(server_id, ACTIVE)

        await self._run(reboot)
        await self.serve_ssh(server_id)

    # -- setup and shell ----------------------------------------------------------------------

    async def setup(self, server_id: str, setup: ServerSetup) -> SetupResult:
        result = await self._run(lambda: self._setup(server_id, setup))
        await self.serve_ssh(server_id)
        return result

    def _setup(self, server_id: str, setup: ServerSetup) -> SetupResult:
        state = self._state(server_id)
        real = self._layout.server_root(server_id).resolve()  # the controller's own link
        uid = self._uid(server_id) if self.sandboxed else None
        root = (
            Path("/") if self.sandboxed else real
        )  # where the server's files are, as it sees them
        name = str(state.get("name", server_id))
        host_datasets = setup.datasets  # the host mounts the bucket at its own address
        if self._isolated:
            setup = self._as_seen_inside(setup, self._networks.server_net(server_id, state)[1])
        hosts = "".join(f"{address}\t{host}\n" for host, address in setup.peers)
        confined.write(real, "etc/hosts", "127.0.0.1\tlocalhost\n" + hosts)
        env = {
            "HOME": str(root / "home"),
            "PATH": self._path,
            "VPOD_CLUSTER": setup.cluster_name,
            "VPOD_SERVER": name,
            **setup.env,
        }
        has_key = True
        if setup.vipu is not None:
            hcl, has_key = vipu_hcl(setup.vipu, confined.read(real, HCL_PATH) or "")
            confined.write(real, HCL_PATH, hcl, 0o600, owner=uid)
            env.update(vipu_env(setup.vipu, str(root / HCL_PATH)))
        if uid is not None:
            ssh_server.prepare(real, uid, SERVER_USER)  # host keys a server made earlier lacks
        if setup.authorized_keys is not None:
            ssh_server.authorize(real, setup.authorized_keys)
        ssh_server.trust_peers(real, setup.known_hosts)
        write_aws_files(real, setup.datasets)
        if uid is not None and (real / "home" / ".aws").is_dir():
            own_tree(real / "home" / ".aws", uid)  # the server's user reads its keys
        rclone_mount.sync(real, self._layout.mounts, server_id, host_datasets, uid)
        devices = [list(d) for d in setup.devices]
        if real_gpus(gpu_devices(devices, self._layout.gpu_stand_ins)):
            env = host_userland().environment(env)  # nvidia-smi and libcuda, where they are
        current = self._state(server_id)  # _uid may have written it since
        if current.get("devices", []) != devices:
            current["devices"] = devices
            write_json(self._layout.server_dir(server_id) / "state.json", current)
        if setup.datasets is not None:
            env.update(dataset_env(setup.datasets))
            if setup.datasets.mount_path is not None:  # as the server sees it
                env["VPOD_DATASET_MOUNT"] = str(root / setup.datasets.mount_path.lstrip("/"))
        # 0600: the environment may hold dataset keys; the server's own user reads it
        confined.write(real, ENV_PATH, render_env(env), 0o600, owner=uid)
        confined.write(
            real,
            "home/.bashrc",
            render_bashrc(setup.cluster_name, name, root / ENV_PATH),
            owner=uid,
        )
        return SetupResult(has_vipu_credentials=has_key)

    async def shell(self, server_id: str) -> ShellAccess:
        return await self._run(lambda: self._shell(server_id))

    # -- ssh ------------------------------------------------------------------------------------

    async def authorize_keys(self, server_id: str, lines: Sequence[str]) -> None:
        def authorize() -> None:
            self._state(server_id)
            ssh_server.authorize(self._layout.server_root(server_id).resolve(), lines)

        await self._run(authorize)

    async def ssh_host_keys(self, server_id: str) -> tuple[str, ...]:
        return await self._run(
            lambda: ssh_server.host_keys(self._layout.server_root(server_id).resolve())
        )

    async def serve_ssh(self, server_id: str) -> None:
        """Port 22 of the server on its tenant network (:mod:`.peer_ssh`), where servers
        have networks of their own and sshd; nothing if it is served already or the server
        is not running."""
        if not (self._isolated and os.access(ssh_server.SSHD, os.X_OK)):
            return
        if self._peer_ssh.listening(server_id):
            return
        state = await self._run(lambda: self._state(server_id))
        if state.get("status") != ACTIVE:
            return
        netns, _ = await self._run(lambda: self._networks.server_net(server_id, state))
        try:
            await self._peer_ssh.ensure(server_id, NETNS_DIR / netns)
        except OSError as exc:
            raise DriverError(f"ssh on the tenant network of server {server_id}: {exc}") from exc

    async def _serve_peer_ssh(self, server_id: str, conn: socket.socket) -> None:
        """One connection to port 22 from the tenant network: ``sshd -i`` in the sandbox."""
        state = await self._run(lambda: self._active(server_id))
        if self._peer_ssh.connections(server_id) > MAX_SSH:
            return  # as many as through the tunnel; the peer sees the connection close
        box = await self._sshd_sandbox(server_id, state)
        with box.command(SSHD_INETD) as (command, fds):
            await run_sshd(command, conn, {"PATH": self._path, "LANG": "C.UTF-8"}, fds)

    async def open_ssh(self, server_id: str) -> ShellSession:
        if not self.sandboxed:
            raise DriverError(
                "servers have no sshd on a host that cannot sandbox them (sshd runs as the"
                f" server's own uid): {self._problem}; use `vpod cluster ssh --relay`"
            )
        if not os.access(ssh_server.SSHD, os.X_OK):
            raise DriverError(
                f"{ssh_server.SSHD} is missing on the controller's host: apt-get install"
                " openssh-server (scripts/ensure-system-deps)"
            )
        state = await self._run(lambda: self._active(server_id))
        if self._sessions.count(server_id) >= self._max_shells + MAX_SSH:
            raise DriverError(
                f"server {state.get('name', server_id)} has {MAX_SSH} SSH connections open"
                " already: close one first"
            )
        box = await self._sshd_sandbox(server_id, state)
        with box.command(SSHD_INETD) as (command, fds):
            session = await ProcessSession.start(
                command, env={"PATH": self._path, "LANG": "C.UTF-8"}, pass_fds=fds, tty=False
            )
        self._sessions.add(server_id, session)
        session.on_end = lambda: self._sessions.discard(server_id, session)
        return session

    def mount_problem(self) -> str | None:
        return rclone_mount.mount_problem()

    def _shell(self, server_id: str) -> ShellAccess:
        state = self._active(server_id)
        user = SERVER_USER if self.sandboxed else getpass.getuser()
        return ShellAccess(kind="relay", host=str(state.get("name", server_id)), user=user)

    def _active(self, server_id: str) -> dict[str, object]:
        state = self._state(server_id)
        if state.get("status") != ACTIVE:
            raise DriverError(
                f"server {state.get('name', server_id)} is {state.get('status')}: it has no"
                " shell until it runs again (resume or start the cluster)"
            )
        return state

    async def open_shell(self, server_id: str, request: ShellRequest) -> ShellSession:
        refused = self.refusal()
        if refused is not None:
            raise DriverError(refused)
        state = await self._run(lambda: self._active(server_id))
        if self._sessions.count(server_id) >= self._max_shells:
            raise DriverError(
                f"server {state.get('name', server_id)} has {self._max_shells} shells open"
                " already: close one first"
            )
        real = self._layout.server_root(server_id).resolve()
        env = parse_env(await self._run(lambda: confined.read(real, ENV_PATH) or ""))
        env.setdefault("PATH", self._path)
        env.update(TERM=request.term or "dumb", **({"LANG": request.lang} if request.lang else {}))
        if request.command is not None:
            argv = ["bash", "-c", request.command]
        elif request.tty:
            argv = ["bash", "--rcfile", "/home/.bashrc", "-i"]
        else:
            argv = ["bash", "-s"]  # commands on stdin, as ssh without a terminal
        if not self.sandboxed:  # the documented unsafe mode: the host, as the controller's user
            env.setdefault("HOME", str(real / "home"))
            if request.tty:
                argv = ["bash", "--rcfile", str(real / "home" / ".bashrc"), "-i"]
            session = await ProcessSession.start(
                argv,
                env=env,
                cwd=str(real / "home"),
                tty=request.tty,
                rows=request.rows,
                cols=request.cols,
            )
        else:
            env["HOME"] = "/home"
            uid = await self._run(lambda: self._uid(server_id))
            box = await self._sandbox(server_id, state, real, uid)
            with box.command(argv) as (command, fds):
                session = await ProcessSession.start(
                    command,
                    env=box.environment(env),
                    pass_fds=fds,
                    tty=request.tty,
                    rows=request.rows,
                    cols=request.cols,
                )
        self._sessions.add(server_id, session)
        session.on_end = lambda: self._sessions.discard(server_id, session)
        return session

    # -- networks ------------------------------------------------------------------------------

    async def create_network(self, cluster_id: str, cidr: str) -> str:
        if not self._isolated:
            return cidr  # the documented unsafe mode: the host's network
        return await self._run(lambda: self._networks.create(cluster_id, cidr))

    async def set_reach(self, cluster_id: str, reach: NetworkReach) -> None:
        if self._isolated:
            await self._run(lambda: self._networks.set_reach(cluster_id, reach))

    async def delete_network(self, cluster_id: str) -> None:
        if self._isolated:
            await self._run(lambda: self._networks.delete(cluster_id))

    def ipuof_sources(self, addresses: Sequence[str]) -> tuple[str, ...]:
        if self._isolated:
            return tuple(addresses)  # each server dials from its own address
        return ("127.0.0.0/8", "::1/128")  # servers share the host's network

    @staticmethod
    def _as_seen_inside(setup: ServerSetup, gateway: str) -> ServerSetup:
        """Services on the host's loopback, as a server dials them: at its gateway."""
        vipu = setup.vipu
        if vipu is not None and _is_loopback(vipu.host):
            vipu = replace(vipu, host=gateway)
        datasets = setup.datasets
        if datasets is not None:
            url = urlsplit(datasets.endpoint_url)
            if url.hostname and _is_loopback(url.hostname):
                netloc = gateway + (f":{url.port}" if url.port else "")
                datasets = replace(datasets, endpoint_url=url._replace(netloc=netloc).geturl())
        return replace(setup, vipu=vipu, datasets=datasets)

    async def _sshd_sandbox(self, server_id: str, state: dict[str, object]) -> Sandbox:
        """The sandbox one ``sshd -i`` runs in, the server's sshd files made ready: its
        forwardings reach what the server's own processes reach."""
        real = self._layout.server_root(server_id).resolve()
        uid = await self._run(lambda: self._uid(server_id))
        await self._run(lambda: ssh_server.prepare(real, uid, SERVER_USER))
        return await self._sandbox(server_id, state, real, uid)

    async def _sandbox(
        self, server_id: str, state: dict[str, object], real: Path, uid: int
    ) -> Sandbox:
        """The server's sandbox as shells and sshd run in it: its volumes, bucket and
        scratch space, its network namespace, its GPUs' device nodes."""
        netns = None
        if self._isolated:
            netns, _ = await self._run(lambda: self._networks.server_net(server_id, state))
        local = await self._run(lambda: self._ensure_scratch(server_id))
        mounts = self._volumes(real) + self._dataset_mount(server_id) + local
        devices = gpu_devices(state.get("devices"), self._layout.gpu_stand_ins)
        name = str(state.get("name", server_id))
        driver: tuple[str, ...] = ()
        if real_gpus(devices):  # the first look runs ldconfig: off the event loop
            driver = await self._run(lambda: host_userland().outside(SYSTEM_DIRS))
        return Sandbox(
            real, name, uid, mounts, self._bwrap, netns=netns, devices=devices, host_dirs=driver
        )

    def _volumes(self, root: Path) -> tuple[tuple[str, Path], ...]:
        """The attached volumes: links the controller made under ``mnt``, to a volume's data
        directory of this cloud (a link anywhere else is not mounted)."""
        volumes = self._layout.base / "volumes"
        found = []
        mnt = root / "mnt"
        for entry in sorted(mnt.iterdir()) if mnt.is_dir() and not mnt.is_symlink() else []:
            try:
                target = confined.link_target(root, f"mnt/{entry.name}")
            except (FileExistsError, confined.Escape):
                continue  # not a link the controller made
            if target is None:
                continue
            data = Path(target)
            if data.name == "data" and data.parent.parent == volumes and data.is_dir():
                found.append((f"/mnt/{entry.name}", data))
        return tuple(found)

    def _dataset_mount(self, server_id: str) -> tuple[tuple[str, Path], ...]:
        """The bucket's mount, where the tenant asked for it; not under ``/home``, whose
        entries the tenant controls (a mount point is made on the sandbox's own tmpfs only)."""
        shown = rclone_mount.shown_at(self._layout.mounts, server_id)
        if shown is None or shown[0].split("/")[1:2] == ["home"]:
            return ()
        return ((shown[0], shown[1]),)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _install_image(root: Path, image: str, host_name: str) -> None:
    """Lay down what a freshly imaged server holds."""
    for sub in ("etc/vipu", "home", "mnt", "tmp"):
        confined.make_dirs(root, sub)
    confined.write(root, "etc/image", image + "\n")
    confined.write(root, "etc/hostname", host_name + "\n")
