"""The embedded compute driver: a server is a sandboxed workspace on this host.

A server is a directory tree (see :mod:`.workspace`) with its own HOME,
environment and ``vipu-cli.hcl``; ``vpod cluster ssh`` runs a real ``bash``
there, started with a clean environment (only the server's variables, plus
``TERM`` and ``LANG`` of the terminal), HOME and working directory inside
the workspace. That is the sandbox: separate HOME, environment and working
directory. It is not a security boundary against a hostile tenant on the same
host (no namespaces: bubblewrap is not required by the embedded default); an
OpenStack driver gives each server its own VM or machine.

Shelving (suspension) keeps the server's root, which lives on its boot
volume, and marks the server SHELVED_OFFLOADED: it has no shell until
unshelved. Bare-metal servers are stopped instead (SHUTOFF), keeping their
local disk.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from . import confined, rclone_mount
from .base import DriverError, ServerSetup, ServerSpec, SetupResult, ShellAccess
from .dataset_files import dataset_env, write_aws_files
from .workspace import (
    Layout,
    parse_env,
    parse_hcl,
    read_json,
    render_bashrc,
    render_env,
    render_hcl,
    write_json,
)

T = TypeVar("T")

ACTIVE, SHUTOFF, SHELVED = "ACTIVE", "SHUTOFF", "SHELVED_OFFLOADED"
HCL_PATH = "etc/vipu/vipu-cli.hcl"
ENV_PATH = "etc/environment"
PASSED_THROUGH = ("TERM", "LANG", "LC_ALL", "COLORTERM")
"""Variables of the caller's terminal a shell keeps; everything else comes from the server."""


def _default_path() -> str:
    """PATH of a server: this installation's scripts (vipu, vipu-admin...), then the system's."""
    return ":".join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"])


class LocalCompute:
    name = "local"

    def __init__(self, layout: Layout, *, path: str | None = None) -> None:
        self._layout = layout
        self._path = path or _default_path()

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
        write_json(
            state_path,
            {
                "status": ACTIVE,
                "image": spec.image,
                "name": spec.name,
                "cluster": spec.cluster_name,
                "bare_metal": spec.bare_metal,
                "host": spec.host_id,
                "address": spec.address,
            },
        )

    async def delete_server(self, server_id: str) -> None:
        def delete() -> None:
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
        def shelve() -> None:
            rclone_mount.release(self._layout.mounts, server_id)  # its compute goes away
            self._set_status(server_id, SHELVED)

        await self._run(shelve)

    async def unshelve(self, server_id: str) -> None:
        await self._run(lambda: self._set_status(server_id, ACTIVE))

    async def stop(self, server_id: str) -> None:
        def stop() -> None:
            rclone_mount.release(self._layout.mounts, server_id)  # powered off
            self._set_status(server_id, SHUTOFF)

        await self._run(stop)

    async def start(self, server_id: str) -> None:
        await self._run(lambda: self._set_status(server_id, ACTIVE))

    async def rebuild(self, server_id: str, image: str) -> None:
        await self._run(lambda: self._rebuild(server_id, image))

    def _rebuild(self, server_id: str, image: str) -> None:
        state = self._state(server_id)
        root = self._layout.server_root(server_id)
        for entry in root.iterdir():
            if entry.name == "mnt":
                continue  # attached data volumes stay attached
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        _install_image(root.resolve(), image, str(state.get("name", server_id)))
        state.update(image=image, status=ACTIVE)
        write_json(self._layout.server_dir(server_id) / "state.json", state)

    async def reboot(self, server_id: str) -> None:
        def reboot() -> None:
            self._state(server_id)
            root = self._layout.server_root(server_id).resolve()
            tmp = root / "tmp"
            if tmp.is_dir() and not tmp.is_symlink():
                shutil.rmtree(tmp, ignore_errors=True)  # rmtree removes links, never follows
            else:
                confined.unlink(root, "tmp")
            confined.make_dirs(root, "tmp")
            self._set_status(server_id, ACTIVE)

        await self._run(reboot)

    # -- setup and shell ----------------------------------------------------------------------

    async def setup(self, server_id: str, setup: ServerSetup) -> SetupResult:
        return await self._run(lambda: self._setup(server_id, setup))

    def _setup(self, server_id: str, setup: ServerSetup) -> SetupResult:
        state = self._state(server_id)
        root = self._layout.server_root(server_id)
        real = root.resolve()  # the controller's own link; below it, nothing is followed
        name = str(state.get("name", server_id))
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
            hcl_path = root / HCL_PATH
            existing = parse_hcl(confined.read(real, HCL_PATH) or "")
            key = setup.vipu.access_key or existing.get("api-access-key")
            has_key = bool(key) and (
                setup.vipu.access_key is not None
                or existing.get("api-user-id") == setup.vipu.user_id
            )
            values: dict[str, str | int] = {
                "api-host": setup.vipu.host,
                "api-port": setup.vipu.port,
                "api-user-id": setup.vipu.user_id,
            }
            if has_key and key:
                values["api-access-key"] = key
            confined.write(real, HCL_PATH, render_hcl(values), 0o600)
            env.update(
                VIPU_CLI_CONFIG=str(hcl_path),
                IPUOF_VIPU_API_HOST=setup.vipu.host,
                IPUOF_VIPU_API_PORT=str(setup.vipu.port),
            )
        write_aws_files(real, setup.datasets)
        rclone_mount.sync(real, self._layout.mounts, server_id, setup.datasets)
        if setup.datasets is not None:
            env.update(dataset_env(setup.datasets))
            if setup.datasets.mount_path is not None:  # no chroot here: the host's path to it
                env["VPOD_DATASET_MOUNT"] = str(root / setup.datasets.mount_path.lstrip("/"))
        # 0600: the environment may hold dataset keys; the server's own user reads it
        confined.write(real, ENV_PATH, render_env(env), 0o600)
        confined.write(
            real, "home/.bashrc", render_bashrc(setup.cluster_name, name, root / ENV_PATH)
        )
        return SetupResult(has_vipu_credentials=has_key)

    async def shell(self, server_id: str) -> ShellAccess:
        return await self._run(lambda: self._shell(server_id))

    def mount_problem(self) -> str | None:
        return rclone_mount.mount_problem()

    def _shell(self, server_id: str) -> ShellAccess:
        state = self._state(server_id)
        if state.get("status") != ACTIVE:
            raise DriverError(
                f"server {state.get('name', server_id)} is {state.get('status')}: it has no"
                " shell until it runs again (resume or start the cluster)"
            )
        root = self._layout.server_root(server_id).resolve()
        env = parse_env(confined.read(root, ENV_PATH) or "")
        env.setdefault("HOME", str(root / "home"))
        env.setdefault("PATH", self._path)
        return ShellAccess(
            kind="local",
            cwd=str(root / "home"),
            env=env,
            command=("bash", "--rcfile", str(root / "home" / ".bashrc"), "-i"),
        )


def _install_image(root: Path, image: str, host_name: str) -> None:
    """Lay down what a freshly imaged server holds."""
    for sub in ("etc/vipu", "home", "mnt", "tmp"):
        confined.make_dirs(root, sub)
    confined.write(root, "etc/image", image + "\n")
    confined.write(root, "etc/hostname", host_name + "\n")
