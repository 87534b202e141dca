"""Fixtures of the client tests: one real secure `vpod up` (controller + emulated Bow Pod16).

``pod`` is shared by every test of this package: the user ``default`` (its
``vipu-cli.hcl``), the administrator (``admin.vipu-cli.hcl``), the user,
admin and HTTP ports. Tests name their own partitions and users so they do
not see each other.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import Pod, start_pod
from vpod.client.config import parse_hcl


@pytest.fixture(scope="session")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pod]:
    # The V-IPU pod alone (no tenants' pod): these tests count its agents and IPUs.
    started = start_pod(
        tmp_path_factory.mktemp("client-pod"), "--secure", "--pod", "pod16", "--cloud-pod", "none"
    )
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="session")
def admin_config(pod: Pod) -> Path:
    return pod.data_dir / "admin.vipu-cli.hcl"


@pytest.fixture(scope="session")
def user_values(pod: Pod) -> dict[str, str]:
    """The user ``default``'s settings as `vpod up` wrote them."""
    return parse_hcl(pod.config.read_text())


@pytest.fixture(autouse=True)
def _no_inherited_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No VIPU_CLI_*/VPOD_* from the outer environment, no stray config in the directory."""
    import os

    for name in list(os.environ):
        if name.startswith(("VIPU_CLI_", "VPOD_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
