"""A GPU server finds the host's NVIDIA driver where it is installed: ``nvidia-smi`` and the
driver libraries outside ``/usr`` and the linker cache reach its ``PATH``,
``LD_LIBRARY_PATH`` and sandbox (read-only); nothing else of the controller's environment
does. The real driver was checked on an H200 (docs/gpu.md); here a driver tree of files
stands in for it."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from vpod.cloud.drivers.gpu_device_nodes import real_gpus
from vpod.cloud.drivers.local_compute import LocalCompute
from vpod.cloud.drivers.nvidia_userland import Userland, find
from vpod.cloud.drivers.sandbox import SYSTEM_DIRS, Sandbox, sandbox_problem
from vpod.cloud.drivers.tenant_network import network_problem
from vpod.cloud.drivers.workspace import Layout
from vpod.cloud.settings import CloudSettings, parse_settings


def _driver_tree(base: Path) -> tuple[Path, Path]:
    """A driver laid out as NVIDIA's images do: ``bin/nvidia-smi``, ``lib64/lib*.so.1``."""
    bin_dir, lib_dir = base / "nvidia" / "bin", base / "nvidia" / "lib64"
    bin_dir.mkdir(parents=True)
    lib_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: stand-in'\n")
    smi.chmod(0o755)
    for name in ("libcuda.so.1", "libnvidia-ml.so.1"):
        (lib_dir / name).write_bytes(b"\x7fELF stand-in")
    return bin_dir, lib_dir


def test_a_driver_outside_the_cache_is_found_on_path_and_ld_library_path(tmp_path: Path) -> None:
    bin_dir, lib_dir = _driver_tree(tmp_path)
    unrelated = tmp_path / "controller-libs"  # on the controller's LD_LIBRARY_PATH, no driver
    unrelated.mkdir()
    found = find(
        f"/nonexistent:{bin_dir}:/usr/bin",
        f"{unrelated}:{lib_dir}:relative/dir",
        cached=set(),
    )
    assert found == Userland(bin_dirs=(str(bin_dir),), lib_dirs=(str(lib_dir),))
    assert str(unrelated) not in found.dirs


def test_libraries_the_linker_cache_resolves_need_no_directory(tmp_path: Path) -> None:
    bin_dir, lib_dir = _driver_tree(tmp_path)
    found = find(str(bin_dir), str(lib_dir), cached={"libcuda.so.1", "libnvidia-ml.so.1"})
    assert found.lib_dirs == ()
    assert found.bin_dirs == (str(bin_dir),)
    half = find(str(bin_dir), str(lib_dir), cached={"libcuda.so.1"})
    assert half.lib_dirs == (str(lib_dir),)  # libnvidia-ml is still needed from there


def test_no_driver_no_directories(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    found = find(str(empty), str(empty), cached=set())
    assert all(not Path(d).is_relative_to(tmp_path) for d in found.dirs)


def test_the_environment_gains_the_directories_once_after_its_own() -> None:
    userland = Userland(bin_dirs=("/opt/nv/bin",), lib_dirs=("/opt/nv/lib64",))
    env = userland.environment({"PATH": "/venv/bin:/usr/bin", "HOME": "/home"})
    assert env == {
        "PATH": "/venv/bin:/usr/bin:/opt/nv/bin",
        "LD_LIBRARY_PATH": "/opt/nv/lib64",
        "HOME": "/home",
    }
    assert userland.environment(env) == env  # applied twice: the same
    assert Userland().environment({"PATH": "/usr/bin"}) == {"PATH": "/usr/bin"}


def test_only_directories_outside_what_the_sandbox_shows_are_bound() -> None:
    userland = Userland(
        bin_dirs=("/usr/local/nvidia/bin", "/opt/nv/bin"), lib_dirs=("/opt/nv/lib64",)
    )
    assert userland.outside(SYSTEM_DIRS) == ("/opt/nv/bin", "/opt/nv/lib64")


def test_only_character_devices_count_asreal_gpus(tmp_path: Path) -> None:
    stand_in = tmp_path / "nvidia0"
    stand_in.write_text("stand-in\n")
    assert real_gpus((("/dev/nvidia0", Path("/dev/null")),))  # a character device
    assert not real_gpus((("/dev/nvidia0", stand_in),))  # an emulated host's file
    assert not real_gpus((("/dev/nvidia0", tmp_path / "gone"),))
    assert not real_gpus(())


@pytest.mark.skipif(sandbox_problem() is not None, reason=f"no sandbox here: {sandbox_problem()}")
def test_the_driver_directories_are_shown_read_only_inside_the_sandbox(tmp_path: Path) -> None:
    # not under /tmp: a server's own /tmp hides the host's (and drivers are not kept there)
    host = Path(tempfile.mkdtemp(prefix="vpod-driver-", dir="/var/tmp"))
    try:
        _shown_read_only(tmp_path, host)
    finally:
        shutil.rmtree(host)


def _shown_read_only(tmp_path: Path, host: Path) -> None:
    os.chmod(host, 0o755)
    bin_dir, lib_dir = _driver_tree(host)
    root = tmp_path / "root"
    for sub in ("home", "tmp", "etc"):
        (root / sub).mkdir(parents=True)
        os.chown(root / sub, 200_321, 200_321)
    userland = Userland((str(bin_dir),), (str(lib_dir),))
    box = Sandbox(root, "gpu-1", 200_321, host_dirs=userland.outside(SYSTEM_DIRS))
    script = (
        'nvidia-smi; ls "$LD_LIBRARY_PATH";'
        f" touch {bin_dir}/planted 2>/dev/null && echo WROTE || echo READ-ONLY;"
        f" ls {host}/nvidia"
    )
    env = userland.environment({"PATH": "/usr/bin:/bin", "HOME": "/home"})
    with box.command(["sh", "-c", script]) as (argv, fds):
        done = subprocess.run(
            argv, env=env, pass_fds=fds, capture_output=True, text=True, timeout=60, check=False
        )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split()
    assert "GPU" in lines
    assert "libcuda.so.1" in lines
    assert "libnvidia-ml.so.1" in lines
    assert "READ-ONLY" in lines
    assert "WROTE" not in lines
    assert not (bin_dir / "planted").exists()
    hidden = Userland((str(tmp_path / "under-tmp"),), ())
    (tmp_path / "under-tmp").mkdir()
    box = Sandbox(root, "gpu-1", 200_321, host_dirs=hidden.dirs)
    with box.command(["true"]) as (argv, _fds):
        assert str(tmp_path / "under-tmp") not in argv  # never a mount point in /tmp


def test_unsafe_shared_network_keeps_the_sandbox_without_tenant_networks(tmp_path: Path) -> None:
    assert CloudSettings().compute_options()["isolate_network"] is True  # isolated by default
    chosen = parse_settings({"unsafe_shared_network": True}, data_dir=tmp_path, source="t")
    assert chosen.compute_options()["isolate_network"] is False
    compute = LocalCompute(Layout(tmp_path / "cloud"), **chosen.compute_options())
    if sandbox_problem() is None:
        assert compute.sandboxed
        assert compute.refusal() is None
    else:
        assert not compute.sandboxed
        assert sandbox_problem() in (compute.refusal() or "")


@pytest.mark.skipif(os.geteuid() != 0, reason="makes a network namespace: needs root")
def test_the_network_probe_leaves_nothing_behind() -> None:
    assert network_problem.__wrapped__() is None  # type: ignore[attr-defined]
    after = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"vpod-probe-{os.getpid()}" not in after  # its links and table went with it
