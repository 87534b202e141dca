"""Tenants driving the real OpenSSH client and the real ``vpod`` CLI against a live cloud
(shared by ``test_ssh.py`` and ``test_ssh_direct.py``).

A :class:`Tenant` is a project's token, an HTTP client of the cloud API and
a home directory of its own (``HOME`` and ``VPOD_SSH_DIR`` there, so keys,
known_hosts and configurations never touch the machine's). The module marks
say why the tests skip where a host cannot run them: they need root,
bubblewrap and openssh-server (``scripts/ensure-system-deps``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from vpod.cloud.drivers.sandbox import sandbox_problem

from .live import LiveCloud

MISSING = [t for t in ("ssh", "scp", "sftp", "rsync", "ssh-keygen") if shutil.which(t) is None]
NEEDS_OPENSSH = [
    pytest.mark.skipif(
        sandbox_problem() is not None, reason=f"no sandbox on this host: {sandbox_problem()}"
    ),
    pytest.mark.skipif(
        not os.access("/usr/sbin/sshd", os.X_OK),
        reason="openssh-server is not installed (scripts/ensure-system-deps)",
    ),
    pytest.mark.skipif(bool(MISSING), reason=f"missing OpenSSH client tools: {MISSING}"),
]
VPOD = str(Path(sys.executable).with_name("vpod"))
FLAVOR = "g2a-ai-fast-v1pod-4"
TIMEOUT_S = 120


@dataclass
class Tenant:
    http: httpx.Client
    env: dict[str, str]
    home: Path

    def vpod(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return self.run(VPOD, *args, stdin=stdin)

    def run(
        self, *argv: str, stdin: str | None = None, timeout: float = TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(argv),
            env=self.env,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=self.home,
        )


def tenant(live: LiveCloud, project: str, home: Path) -> Tenant:
    token = live.project(project)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VPOD_", "SSH_"))}
    env.update(VPOD_URL=live.url, VPOD_TOKEN=token, HOME=str(home), VPOD_SSH_DIR=str(home / "v"))
    home.mkdir(parents=True, exist_ok=True)
    return Tenant(live.client(token), env, home)


def ssh(
    tenant: Tenant, *args: str, config: str = "ssh_config", stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """OpenSSH with the configuration ``vpod cluster ssh-config`` wrote to HOME/``config``."""
    return tenant.run("ssh", "-F", str(tenant.home / config), *args, stdin=stdin)


def ssh_with(
    tenant: Tenant, key: Path, *args: str, config: str = "ssh_config"
) -> subprocess.CompletedProcess[str]:
    """ssh offering ``key`` only (the generated configuration without its IdentityFile)."""
    lines = (tenant.home / config).read_text().splitlines()
    bare = tenant.home / f"{config}_bare"
    bare.write_text("".join(f"{line}\n" for line in lines if "IdentityFile" not in line))
    options = ["-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-i", str(key)]
    return tenant.run("ssh", "-F", str(bare), *options, *args)


def accepts(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def wait_port(port: int, deadline_s: float = 60) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if accepts(port):
            return
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on {port}")
