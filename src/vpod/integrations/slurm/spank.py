"""The ``--ipus=N`` SPANK plugin: built at set-up against the installed Slurm's headers.

Slurm lets only SPANK plugins add options to ``sbatch``, ``srun`` and
``salloc``, and a SPANK plugin is a C shared object built for the Slurm
version it runs in. So vpod ships the source (``vpod_ipus.c``) and builds it
here with the C compiler (``CC``, else ``cc``) against ``<slurm/spank.h>``
(Debian: ``libslurm-dev``). The build is idempotent: the object is named
after a hash of the source and of the headers, so a rebuild happens only
when either changes (a Slurm upgrade), and it replaces the old file in one
step, so a running ``srun`` never loads half a file.

``plugstack.conf`` names the object (``optional``: a node without it still
runs jobs, those without ``--ipus``); ``job_submit.lua`` turns the option
into the job's ``gres:ipu:N`` and refuses sizes V-IPU cannot make.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from importlib import resources
from pathlib import Path

SOURCE = "vpod_ipus.c"
PLUGIN = "vpod_ipus.so"
SPANK_HEADER = Path("/usr/include/slurm/spank.h")
PLUGSTACK_FILE = "plugstack.conf"


class SpankBuildError(Exception):
    """The plugin cannot be built here; the message says what to install or fix."""


def missing_toolchain(header: Path = SPANK_HEADER) -> str | None:
    """Why the plugin cannot be built here, or None."""
    if not header.is_file():
        return f"{header} is missing: install Slurm's headers (Debian: libslurm-dev)"
    if _compiler() is None:
        return "no C compiler: install one (Debian: gcc) or set CC"
    return None


def _compiler() -> str | None:
    return shutil.which(os.environ.get("CC", "cc"))


def build(out_dir: Path, *, header: Path = SPANK_HEADER) -> Path:
    """Build (or find already built) the plugin in ``out_dir``; its path."""
    reason = missing_toolchain(header)
    if reason:
        raise SpankBuildError(f"cannot build the --ipus plugin: {reason}")
    source = resources.files(__package__).joinpath(SOURCE).read_bytes()
    digest = hashlib.sha256(source + header.read_bytes()).hexdigest()[:16]
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / PLUGIN
    stamp = out_dir / (PLUGIN + ".sha256")
    if target.is_file() and stamp.is_file() and stamp.read_text().strip() == digest:
        return target
    src = out_dir / SOURCE
    src.write_bytes(source)
    new = out_dir / (PLUGIN + ".new")
    compiler = _compiler()
    assert compiler is not None
    done = subprocess.run(
        [compiler, "-shared", "-fPIC", "-O2", "-Wall", "-o", str(new), str(src)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SpankBuildError(
            f"cannot build the --ipus plugin with {compiler}: {done.stderr.strip()[-2000:]}"
        )
    os.chmod(new, 0o755)
    os.replace(new, target)
    stamp.write_text(digest + "\n")
    return target


def plugstack_line(plugin: Path) -> str:
    """The plugstack.conf line that loads the plugin (``optional``: jobs run without it)."""
    return f"optional {plugin}"


def write_plugstack(path: Path, plugin: Path) -> None:
    """Make ``path`` name the plugin, keeping its other lines (idempotent)."""
    line = plugstack_line(plugin)
    lines = path.read_text().splitlines() if path.exists() else []
    kept = [x for x in lines if not x.split("#", 1)[0].strip().endswith("/" + PLUGIN)]
    path.write_text("\n".join([*kept, line]) + "\n")
