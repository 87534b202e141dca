"""Find the partition as Poplar's IPUoF client does (vipu-system.md §5).

In this order:

1. **Dynamic**: ``IPUOF_VIPU_API_HOST`` set -> ask that controller
   (``IPUOF_VIPU_API_PORT``, default 8090) for the IPUoF config of
   ``IPUOF_VIPU_API_PARTITION_ID`` (GCD ``IPUOF_VIPU_API_GCD_ID`` when set),
   waiting up to ``IPUOF_VIPU_API_TIMEOUT`` seconds (default 120) for it to
   be ACTIVE, then failing with the partition and the state it is in. An
   unknown partition fails at once: waiting cannot fix a wrong id.
   Credentials for a ``--secure`` controller come from ``VIPU_CLI_*`` and
   ``vipu-cli.hcl``, as for ``vipu``.
2. **Static**: the file named by ``IPUOF_CONFIG_PATH``.
3. Every ``*.conf`` in ``~/.ipuof.conf.d/``, else in ``/etc/ipuof.conf.d/``
   (one file per GCD, merged; the first directory that has any wins).

Decision: without ``IPUOF_VIPU_API_GCD_ID`` a partition of several GCDs is
taken whole (its IPUs in routing order), so tools see every IPU; an
application of one GCD sets the variable, as ``vpod-run`` does.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from .config import PartitionTarget, read_config_files, target_from_gcds
from .errors import ConfigInvalid, ConfigNotFound, ControllerUnreachable, PartitionNotReady
from .source import NotActiveYet, SourceFactory, StillUnreachable

ENV_HOST = "IPUOF_VIPU_API_HOST"
ENV_PORT = "IPUOF_VIPU_API_PORT"
ENV_PARTITION = "IPUOF_VIPU_API_PARTITION_ID"
ENV_GCD = "IPUOF_VIPU_API_GCD_ID"
ENV_TIMEOUT = "IPUOF_VIPU_API_TIMEOUT"
ENV_CONFIG_PATH = "IPUOF_CONFIG_PATH"
DEFAULT_PORT = 8090
DEFAULT_TIMEOUT_S = 120.0
USER_DIR = Path("~/.ipuof.conf.d")
SYSTEM_DIR = Path("/etc/ipuof.conf.d")
POLL_S = (0.05, 0.1, 0.2, 0.5, 1.0)
"""Waits between asking again for a partition that is not ACTIVE yet (the last repeats)."""


def find_partition(
    env: Mapping[str, str] | None = None,
    *,
    source_factory: SourceFactory | None = None,
    home: Path | None = None,
    system_dir: Path = SYSTEM_DIR,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> PartitionTarget:
    """The partition this process should use, found as the IPUoF client finds it."""
    env = os.environ if env is None else env
    if env.get(ENV_HOST):
        if source_factory is None:
            from .controller import controller_source

            source_factory = controller_source
        return _from_controller(env, source_factory, sleep, monotonic)
    if env.get(ENV_CONFIG_PATH):
        path = Path(env[ENV_CONFIG_PATH]).expanduser()
        if not path.is_file():
            raise ConfigNotFound(f"{ENV_CONFIG_PATH}={path}: no such file")
        return read_config_files([path])
    user_dir = (home / ".ipuof.conf.d") if home is not None else USER_DIR.expanduser()
    for directory in (user_dir, system_dir):
        files = sorted(directory.glob("*.conf")) if directory.is_dir() else []
        if files:
            return read_config_files(files)
    raise ConfigNotFound(
        f"no partition to use: set {ENV_HOST} and {ENV_PARTITION} (or run under vpod-run or"
        f" Slurm), or {ENV_CONFIG_PATH}, or put a config in {user_dir}/ or {system_dir}/"
        " ('vipu get partition ID --ipuof-configs' writes one)"
    )


def _from_controller(
    env: Mapping[str, str],
    source_factory: SourceFactory,
    sleep: Callable[[float], None],
    monotonic: Callable[[], float],
) -> PartitionTarget:
    host = env[ENV_HOST]
    partition_id = env.get(ENV_PARTITION, "").strip()
    if not partition_id:
        raise ConfigInvalid(
            f"{ENV_HOST} is set but {ENV_PARTITION} is not: name the partition to use"
        )
    port = _whole(env, ENV_PORT, DEFAULT_PORT)
    gcd_text = env.get(ENV_GCD, "").strip()
    gcd_id = _whole(env, ENV_GCD, 0) if gcd_text else None
    timeout = _seconds(env)
    source = source_factory(host, port, env)
    try:
        deadline = monotonic() + timeout
        attempt = 0
        while True:
            try:
                gcds = source.ipuof_gcds(partition_id, gcd_id)
                break
            except NotActiveYet as exc:
                if monotonic() >= deadline and isinstance(exc, StillUnreachable):
                    raise ControllerUnreachable(
                        f"{exc.state} (for {timeout:g} s, {ENV_TIMEOUT}); check {ENV_HOST}"
                        f" and {ENV_PORT}"
                    ) from None
                if monotonic() >= deadline:
                    raise PartitionNotReady(
                        f"partition {partition_id} on {source.where} is {exc.state}, not"
                        f" ACTIVE, after {timeout:g} s ({ENV_TIMEOUT}); check it with"
                        f" 'vipu get partition {partition_id}'",
                        partition_id,
                        exc.state,
                    ) from None
            sleep(min(POLL_S[min(attempt, len(POLL_S) - 1)], max(0.0, deadline - monotonic())))
            attempt += 1
    finally:
        source.close()
    return target_from_gcds(
        gcds,
        partition_id=partition_id,
        gcd_id=gcd_id,
        source=f"controller {source.where}",
    )


def _whole(env: Mapping[str, str], key: str, default: int) -> int:
    text = env.get(key, "").strip()
    if not text:
        return default
    if not text.isdigit():
        raise ConfigInvalid(f"{key}={text!r}: expected a whole number")
    return int(text)


def _seconds(env: Mapping[str, str]) -> float:
    text = env.get(ENV_TIMEOUT, "").strip()
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < 1e6:
        raise ConfigInvalid(f"{ENV_TIMEOUT}={text!r}: expected a number of seconds")
    return value
