"""A Cinder volume backend for the test OpenStack of scripts/openstack-up: volumes as files.

Cinder's own fake driver (``cinder.tests.fake_driver``, what Cinder's functional tests run)
answers every call without touching storage, so a volume made from an image would have
nowhere to go; this one keeps each volume as a sparse file under ``$VPOD_CINDER_FILES``, so
that Cinder really copies Glance images onto boot volumes (``qemu-img convert``), and its
exports are the fake target's (no iSCSI, no device-mapper, no hardware).
"""

import os

from cinder.tests.fake_driver import FakeLoggingVolumeDriver


class FileVolumeDriver(FakeLoggingVolumeDriver):
    def _directory(self):
        directory = os.environ.get("VPOD_CINDER_FILES", "/var/lib/vpod-openstack/cinder/volumes")
        os.makedirs(directory, exist_ok=True)
        return directory

    def local_path(self, volume, vg=None):
        return os.path.join(self._directory(), "volume-%s" % volume["id"])

    def create_volume(self, volume):
        with open(self.local_path(volume), "ab") as f:
            f.truncate(int(volume["size"]) * 1024**3)

    def delete_volume(self, volume):
        try:
            os.unlink(self.local_path(volume))
        except FileNotFoundError:
            pass

    def extend_volume(self, volume, new_size):
        with open(self.local_path(volume), "ab") as f:
            f.truncate(int(new_size) * 1024**3)
