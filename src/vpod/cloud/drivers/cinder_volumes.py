"""The ``cinder`` volume driver: every volume is a Cinder volume, attached by Nova.

A volume is named ``vpod-VOLUME_ID`` (found again by that name: every call is idempotent),
of the vpod volume's size, of the Cinder type mapped in ``[openstack.volume_types]``; a boot
volume is made from the mapped Glance image (Cinder copies it). Attaching is a Nova volume
attachment to the server, and answers the device Nova gives it (``/dev/vdb``); detaching
removes the attachment. Each call waits until Cinder reports the status it leads to
(``available``, ``in-use``, gone); a volume that goes to ``error`` fails with Cinder's
sentence, a wait that runs out is temporary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import DriverError
from .openstack_lookup import find_server, find_volume, get_server, get_volume, volume_name
from .openstack_options import OpenStackOptions
from .openstack_session import Session, wait_for

if TYPE_CHECKING:
    from openstack.connection import Connection

BUSY = ("creating", "downloading", "attaching", "detaching", "reserved", "deleting")


def cinder_says(conn: Connection, volume_id: str) -> str:
    """Cinder's latest user message about a volume (why it went to ``error``: "schedule
    allocate volume:Could not find any available weighted backend."), or ""."""
    from openstack import exceptions as sdk

    try:  # filtering messages needs microversion 3.5
        reply = conn.block_storage.get(
            f"/messages?resource_uuid={volume_id}&sort=created_at:desc&limit=1",
            microversion="3.5",
        )
        messages = reply.json().get("messages", []) if reply.ok else []
    except (sdk.SDKException, ValueError):
        return ""  # the reason is a courtesy: the status alone still fails the call
    return str(messages[0].get("user_message", "")) if messages else ""


class CinderVolumes:
    name = "cinder"

    def __init__(self, options: OpenStackOptions, session: Session | None = None) -> None:
        self.options = options
        self._session = session or Session(options)

    def _wait(self, conn: Connection, volume: Any, *status: str) -> Any:
        """Until Cinder reports one of ``status``; ``error``: permanent, with the reason."""
        return wait_for(
            lambda: conn.block_storage.get_volume(volume.id),
            lambda v: str(v.status),
            status,
            ("error", "error_deleting", "error_restoring", "error_extending"),
            self.options.wait_s,
            f"Cinder volume {volume.name}",
            why=lambda v: cinder_says(conn, v.id),
        )

    async def create(
        self, volume_id: str, size_gib: int, volume_type: str, image: str | None
    ) -> None:
        await self._session.call(
            f"creating volume {volume_id}",
            lambda c: self._create(c, volume_id, size_gib, volume_type, image),
        )

    def _create(
        self, conn: Connection, volume_id: str, size_gib: int, volume_type: str, image: str | None
    ) -> None:
        from openstack import exceptions as sdk

        volume = find_volume(conn, volume_id)
        if volume is not None and volume.status == "error":
            conn.block_storage.delete_volume(volume, ignore_missing=True)  # a failed try
            conn.block_storage.wait_for_delete(volume, interval=1, wait=int(self.options.wait_s))
            volume = None
        if volume is None:
            attrs: dict[str, Any] = {
                "name": volume_name(volume_id),
                "size": size_gib,
                "metadata": {"vpod-volume": volume_id},
            }
            cinder_type = self.options.cinder_type(volume_type)
            if cinder_type is not None:
                attrs["volume_type"] = cinder_type
            if image is not None:
                glance = self.options.glance_image(image)
                try:
                    attrs["image_id"] = conn.image.find_image(glance, ignore_missing=False).id
                except sdk.NotFoundException:
                    raise DriverError(
                        f"Glance has no image {glance!r} for vpod image {image}: map it in"
                        " cloud.toml [openstack.images] (docs/openstack.md)"
                    ) from None
            volume = conn.block_storage.create_volume(**attrs)
        if volume.status not in ("available", "in-use"):
            self._wait(conn, volume, "available", "in-use")

    async def delete(self, volume_id: str) -> None:
        await self._session.call(
            f"deleting volume {volume_id}", lambda c: self._delete(c, volume_id)
        )

    def _delete(self, conn: Connection, volume_id: str) -> None:
        volume = find_volume(conn, volume_id)
        if volume is None:
            return
        if volume.status in BUSY or volume.status == "in-use":
            # a boot volume is released by Nova as its server goes; a moment after
            volume = self._wait(conn, volume, "available", "error")
        conn.block_storage.delete_volume(volume, ignore_missing=True)
        conn.block_storage.wait_for_delete(volume, interval=1, wait=int(self.options.wait_s))

    async def attach(self, volume_id: str, server_id: str, mount_name: str) -> str:
        del mount_name  # Nova names the device; the server mounts it
        return await self._session.call(
            f"attaching volume {volume_id}", lambda c: self._attach(c, volume_id, server_id)
        )

    def _attach(self, conn: Connection, volume_id: str, server_id: str) -> str:
        volume = get_volume(conn, volume_id)
        server = get_server(conn, server_id)
        for attachment in volume.attachments or []:
            if attachment.get("server_id") == server.id:
                if volume.status != "in-use":
                    self._wait(conn, volume, "in-use")
                return str(attachment.get("device") or "")
            raise DriverError(
                f"volume {volume_id} is attached to another server ({attachment.get('server_id')})"
            )
        attachment = conn.compute.create_volume_attachment(server, volume=volume.id)
        self._wait(conn, volume, "in-use")
        return str(attachment.device or "")

    async def detach(self, volume_id: str, server_id: str) -> None:
        await self._session.call(
            f"detaching volume {volume_id}", lambda c: self._detach(c, volume_id, server_id)
        )

    def _detach(self, conn: Connection, volume_id: str, server_id: str) -> None:
        volume = find_volume(conn, volume_id)
        if volume is None:
            return
        server = find_server(conn, server_id) if volume.attachments else None
        if server is None or not any(
            a.get("server_id") == server.id for a in volume.attachments or []
        ):
            return
        conn.compute.delete_volume_attachment(server, volume.id)
        self._wait(conn, volume, "available")
