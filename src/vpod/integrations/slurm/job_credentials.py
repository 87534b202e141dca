"""Each job's V-IPU credentials: a partition key, in a vipu-cli.hcl only the job's user reads.

Under a ``--secure`` controller, a job's tasks (``vipu``, an IPUoF
application, ``vpod-run``) must authenticate. The integration's own key may
create and remove partitions in the whole allocation, so it never reaches a
job; instead, when the job's partition is ACTIVE, the bridge mints a
partition key for it (``<partition>.job``: it may get, reset and attach that
partition and nothing else) and writes ``<credentials_dir>/<partition>.vipu-cli.hcl``
naming the controller as the nodes reach it (``ipuof_api_host``/``port``,
the integration's ``tls-ca``) and the key. The file is born 0600 and handed
to the job's user (``chown`` when the bridge may, else a POSIX ACL granting
that user read); the directory is 0711, so no one lists whose jobs have
keys. The TaskProlog exports ``VIPU_CLI_CONFIG`` naming the file and
``VIPU_CLI_API_USER_ID``/``VIPU_CLI_API_ACCESS_KEY`` from it, the variables
every V-IPU client reads.

When the job ends the file is deleted at once; removing the partition
deletes its keys in the same transaction on the controller, so the key is
revoked by the removal itself, and only a removal that fails (controller
busy, an agent down) is followed by an explicit revoke, lest the key outlive
the job while the reconciler retries. Against an open controller (no key to
mint) the bridge asks again only every ``OPEN_RECHECK_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import pwd
import shutil
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from vpod.client.config import load_settings, render_hcl

from .settings import SlurmSettings
from .vipu_api import PartitionApi

log = logging.getLogger("vpod.slurm")

CREDENTIALS_SUFFIX = ".vipu-cli.hcl"
OPEN_RECHECK_S = 60.0
"""How long an open controller's answer spares each job the call that asks for a key."""
_TLS_KEYS = ("tls-ca", "tls-server-name")
"""What the job's file copies from the integration's vipu-cli.hcl (never its key)."""


class CredentialsFailure(Exception):
    """The job's credentials could not be issued; the message says why and what to fix."""


def key_id(partition_id: str) -> str:
    """The job's key id, what its tasks send as the user id."""
    return f"{partition_id}.job"


def credentials_path(settings: SlurmSettings, partition_id: str) -> Path:
    return Path(settings.credentials_dir) / f"{partition_id}{CREDENTIALS_SUFFIX}"


class JobCredentials:
    """Mint, hand over and revoke the partition key of each job."""

    def __init__(
        self,
        settings: SlurmSettings,
        api: PartitionApi,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.api = api
        self.clock = clock
        self._tls = _tls_values(settings.vipu_config)
        self._open_until = float("-inf")
        """Until then the controller is taken to run open (it said so): no key is asked for."""

    async def issue(
        self,
        partition_id: str,
        uid: int | Callable[[], Awaitable[int | None]],
        *,
        name: str | None = None,
    ) -> str:
        """Mint the job's key and write its file for the job's user (``uid``, or the function
        that finds it); what was done, for the log. ``name`` (default: the partition's id)
        names the key (``<name>.job``) and its file: the static and reconfigurable modes,
        whose partitions outlive jobs, name them after the job."""
        name = name or partition_id
        if self.clock() < self._open_until:
            return "no key (the controller runs without --secure)"
        key = await self.api.mint_key(partition_id, key_id(name))
        if key is None:
            # Asked again after a while: the controller may come back secure.
            self._open_until = self.clock() + OPEN_RECHECK_S
            return "no key (the controller runs without --secure)"
        owner = uid if isinstance(uid, int) else await uid()
        if owner is None:
            raise CredentialsFailure(
                f"cannot tell which user job's partition {partition_id} belongs to"
            )
        values: dict[str, str | int] = {
            "api-host": self.settings.ipuof_api_host,
            "api-port": self.settings.ipuof_api_port,
            "api-user-id": key_id(name),
            "api-access-key": key,
            **self._tls,
        }
        path = credentials_path(self.settings, name)
        await asyncio.to_thread(write_owned, path, render_hcl(values), owner)
        return f"key {key_id(name)} in {path}"

    def forget_file(self, partition_id: str) -> None:
        """Delete the job's file (the job has ended: its tasks are gone)."""
        with contextlib.suppress(FileNotFoundError):
            credentials_path(self.settings, partition_id).unlink()

    async def revoke(self, partition_id: str) -> None:
        """Delete the file and revoke the key (nothing if there was none)."""
        self.forget_file(partition_id)
        await self.api.revoke_key(key_id(partition_id))


def _tls_values(vipu_config: str) -> dict[str, str | int]:
    if not vipu_config:
        return {}
    try:
        settings = load_settings({}, env={}, config_path=vipu_config)
    except Exception:  # the bridge reports an unreadable config when it first calls V-IPU
        return {}
    found: dict[str, str | int] = {}
    for key in _TLS_KEYS:
        value = settings.get(key)
        if value:
            found[key] = value
    return found


def write_owned(path: Path, text: str, uid: int) -> None:
    """Write ``text`` to ``path`` readable by ``uid`` alone (and the bridge's own user)."""
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o711)  # users reach their own file by name; none lists the others
    new = path.with_name(path.name + ".new")
    with contextlib.suppress(FileNotFoundError):
        new.unlink()
    fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        _give_to(new, uid)
        os.replace(new, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            new.unlink()
        raise


def _give_to(path: Path, uid: int) -> None:
    if uid == os.geteuid():
        return
    try:
        gid = pwd.getpwuid(uid).pw_gid
    except KeyError:
        gid = -1
    try:
        os.chown(path, uid, gid)
        return
    except PermissionError as exc:
        if exc.errno != errno.EPERM:
            raise
    # Not root: the owner may still grant one user read with an ACL.
    setfacl = shutil.which("setfacl")
    if setfacl is None:
        raise CredentialsFailure(
            f"cannot give uid {uid} its job's key: run vpod-slurm-bridge with CAP_CHOWN,"
            " or install setfacl (Debian: acl) on a file system with POSIX ACLs"
        )
    done = subprocess.run(
        [setfacl, "-m", f"u:{uid}:r", str(path)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise CredentialsFailure(
            f"cannot give uid {uid} its job's key: setfacl: {done.stderr.strip()}"
        )
