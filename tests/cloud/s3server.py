"""A real S3-compatible server for the dataset storage tests: moto in server mode.

``moto_server`` (from the ``moto[server]`` package, a dev dependency) runs as
a child process on a free loopback port and speaks the S3 REST API; it
accepts any credentials, so the tests check which keys each server holds
themselves.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.ports import free_port

START_TIMEOUT_S = 60.0


@contextmanager
def moto_server() -> Iterator[str]:
    """The URL of a running ``moto_server``, stopped when the block ends."""
    program = shutil.which("moto_server") or str(Path(sys.executable).with_name("moto_server"))
    port = free_port()
    process = subprocess.Popen(
        [program, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"moto_server exited with {process.returncode}")
            try:
                httpx.get(url + "/", timeout=2.0)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server did not answer on {url}") from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
