"""The --ipus SPANK plugin's build: against the installed Slurm's headers, idempotent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vpod.integrations.slurm import spank

BIN = Path(sys.executable).parent
needs_toolchain = pytest.mark.skipif(
    spank.missing_toolchain() is not None, reason=f"{spank.missing_toolchain()}"
)


@needs_toolchain
def test_build_is_idempotent_and_exports_the_ipus_option(tmp_path: Path) -> None:
    plugin = spank.build(tmp_path)
    first = plugin.stat().st_mtime_ns
    assert spank.build(tmp_path) == plugin
    assert plugin.stat().st_mtime_ns == first  # nothing changed: nothing rebuilt
    symbols = subprocess.run(
        ["nm", "-D", "--defined-only", str(plugin)], capture_output=True, text=True, check=False
    )
    if symbols.returncode == 0:
        for name in ("slurm_spank_init", "slurm_spank_init_post_opt", "plugin_name"):
            assert name in symbols.stdout
    assert b"ipus" in plugin.read_bytes()


def test_missing_headers_say_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(spank.SpankBuildError, match="libslurm-dev"):
        spank.build(tmp_path, header=tmp_path / "no-spank.h")


def test_plugstack_names_the_plugin_once_and_keeps_other_lines(tmp_path: Path) -> None:
    plugstack = tmp_path / "plugstack.conf"
    plugstack.write_text("required /opt/site/other.so\n")
    plugin = tmp_path / "lib" / "vpod_ipus.so"
    spank.write_plugstack(plugstack, plugin)
    spank.write_plugstack(plugstack, plugin)
    assert plugstack.read_text().splitlines() == [
        "required /opt/site/other.so",
        f"optional {plugin}",
    ]


@needs_toolchain
def test_vpod_slurm_build_spank(tmp_path: Path) -> None:
    plugstack = tmp_path / "plugstack.conf"
    done = subprocess.run(
        [str(BIN / "vpod"), "slurm", "build-spank", "--out", str(tmp_path / "lib"),
         "--plugstack", str(plugstack)],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"optional {tmp_path / 'lib' / 'vpod_ipus.so'}"
    assert plugstack.read_text().strip() == done.stdout.strip()
    bad = subprocess.run(
        [str(BIN / "vpod"), "slurm", "build-spank", "--out", "/proc/no-such-dir"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert len(bad.stderr.strip().splitlines()) == 1
