"""Which device nodes the local driver binds into a server's sandbox: NVIDIA's names only,
from the host's character devices or an emulated host's stand-in files under the cloud's
``gpu-devices`` directory; never a link, another device or a file elsewhere, whatever a
server's state lists (it comes from what an agent reported)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vpod.cloud.drivers.gpu_device_nodes import gpu_devices
from vpod.cloud.drivers.sandbox import Sandbox


def test_only_nvidia_nodes_from_stand_ins_or_character_devices_are_bound(tmp_path: Path) -> None:
    stand_ins = tmp_path / "gpu-devices"
    (stand_ins / "h1").mkdir(parents=True)
    for name in ("nvidia0", "nvidiactl"):
        (stand_ins / "h1" / name).write_text("stand-in\n")
    elsewhere = tmp_path / "secret"
    elsewhere.write_text("not a device\n")
    os.symlink(elsewhere, stand_ins / "h1" / "nvidia1")
    listed = [
        ["/dev/nvidia0", str(stand_ins / "h1" / "nvidia0")],
        ["/dev/nvidiactl", str(stand_ins / "h1" / "nvidiactl")],
        ["/dev/nvidia1", str(stand_ins / "h1" / "nvidia1")],  # a link: refused
        ["/dev/nvidia2", str(elsewhere)],  # a file outside the stand-ins: refused
        ["/dev/sda", str(stand_ins / "h1" / "nvidia0")],  # not NVIDIA's name: refused
        ["/dev/nvidia3", "/dev/null"],  # a character device that is not NVIDIA's: refused
        ["/dev/nvidia0", str(stand_ins / "h1" / "nvidiactl")],  # the same node twice: once
        "garbage",
    ]
    bound = gpu_devices(listed, stand_ins)
    assert bound == (
        ("/dev/nvidia0", stand_ins / "h1" / "nvidia0"),
        ("/dev/nvidiactl", stand_ins / "h1" / "nvidiactl"),
    )
    assert gpu_devices(None, stand_ins) == ()


def test_the_sandbox_binds_its_devices_after_its_own_dev(tmp_path: Path) -> None:
    if not Path("/usr/bin/bwrap").exists():
        pytest.skip("bubblewrap is not installed (scripts/ensure-system-deps installs it)")
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    node = tmp_path / "nvidia4"
    node.write_text("stand-in\n")
    box = Sandbox(root, "s1", 200_123, devices=(("/dev/nvidia4", node),), bwrap="/usr/bin/bwrap")
    with box.command(["true"]) as (argv, _fds):
        dev = argv.index("--dev")
        bind = argv.index("--dev-bind")
        assert dev < bind
        assert argv[bind : bind + 3] == ["--dev-bind", str(node), "/dev/nvidia4"]
