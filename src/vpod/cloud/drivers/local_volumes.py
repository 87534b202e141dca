"""The embedded volume driver: a volume is a directory; attaching links it into a server.

Sizes are recorded, not enforced (a directory has no size limit): the
emulated cloud bills and counts GiB as a real one would. A boot volume is
the root a VM server lives in (the local compute driver links it); a data
volume appears in the server as ``/mnt/<volume name>`` (the sandbox mounts it
there), owned by the server's uid. Detaching ends the server's open shells,
which hold the mount.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from typing import TypeVar

from . import confined
from .base import DriverError
from .sandbox import own_tree
from .sessions import sessions_of
from .workspace import Layout, read_json, write_json

T = TypeVar("T")


class LocalVolumes:
    name = "local"

    def __init__(self, layout: Layout) -> None:
        self._layout = layout

    async def _run(self, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except OSError as exc:
            raise DriverError(f"local volumes: {exc}") from exc

    async def create(
        self, volume_id: str, size_gib: int, volume_type: str, image: str | None
    ) -> None:
        def create() -> None:
            meta = self._layout.volume_dir(volume_id) / "meta.json"
            if read_json(meta) is not None:
                return
            self._layout.volume_data(volume_id).mkdir(parents=True, exist_ok=True)
            write_json(meta, {"size_gib": size_gib, "type": volume_type, "image": image})

        await self._run(create)

    async def delete(self, volume_id: str) -> None:
        await self._run(lambda: shutil.rmtree(self._layout.volume_dir(volume_id), True))

    async def attach(self, volume_id: str, server_id: str, mount_name: str) -> str:
        def attach() -> str:
            data = self._layout.volume_data(volume_id)
            if not data.is_dir():
                raise DriverError(f"volume {volume_id} does not exist on this host")
            root = self._layout.server_root(server_id)
            if not root.exists():
                raise DriverError(f"server {server_id} does not exist on this host")
            root = root.resolve()  # the controller's own link to the boot volume
            relative = f"mnt/{mount_name}"
            try:
                current = confined.link_target(root, relative)
            except (FileExistsError, confined.Escape):
                current = ""
            uid = (read_json(self._layout.server_dir(server_id) / "state.json") or {}).get("uid")
            if isinstance(uid, int):  # a sandboxed server's uid owns what it mounts
                own_tree(data, uid)
            if current == str(data):
                return f"/mnt/{mount_name}"
            if current is not None:
                raise DriverError(
                    f"/mnt/{mount_name} on server {server_id} is taken by something else"
                )
            confined.link(root, relative, data)
            return f"/mnt/{mount_name}"

        return await self._run(attach)

    async def detach(self, volume_id: str, server_id: str) -> None:
        await sessions_of(str(self._layout.base)).end_all(server_id)  # they hold its mount

        def detach() -> None:
            data = self._layout.volume_data(volume_id)
            root = self._layout.server_root(server_id)
            if root.exists():
                confined.unlink_links_to(root.resolve(), "mnt", data)

        await self._run(detach)
