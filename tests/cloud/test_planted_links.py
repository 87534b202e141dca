"""The controller never follows a link a tenant planted inside its server.

A tenant owns everything under its server's root and may replace any file
or directory there with a symbolic link to the controller's files (here a
stand-in "controller" directory holding a secret). Every write the local
drivers make into a server (hosts file, environment, shell rc,
``vipu-cli.hcl``, ``~/.aws`` files and the dataset mount's link, the image
files of a rebuild, volume links, the reboot's ``tmp``) must then leave the
link's target untouched, and no read may leak the target into the server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import pytest

from vpod.cloud.drivers import (
    DatasetAccess,
    DriverError,
    Layout,
    LocalCompute,
    LocalVolumes,
    ServerSetup,
    ServerSpec,
    ShellRequest,
    VipuAccess,
)

T = TypeVar("T")
SECRET = "controller secret: admin key 0123456789\n"


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


SPEC = ServerSpec(
    server_id="sv-1",
    name="c1-poplar-1",
    cluster_id="cl-1",
    cluster_name="c1",
    image="ubuntu-22.04-poplar-3.4",
    flavor="g2a-ai-fast-v1pod-4",
    bare_metal=False,
    address="10.0.0.11",
    boot_volume_id="vol-boot",
)
SETUP = ServerSetup(
    "c1",
    (("c1-poplar-1", "10.0.0.11"),),
    vipu=VipuAccess(host="127.0.0.1", port=8090, user_id="vpod-cl-1", access_key="new-key"),
)


class Server:
    def __init__(self, tmp_path: Path) -> None:
        self.layout = Layout(tmp_path / "cloud")
        self.volumes = LocalVolumes(self.layout)
        # sandboxed where the host can; else the unsafe mode, which reads the same files
        self.compute = LocalCompute(self.layout, unsafe_shared_host=True)
        run(self.volumes.create("vol-boot", 50, "standard", "img"))
        run(self.compute.create_server(SPEC))
        self.root = self.layout.server_root("sv-1").resolve()
        self.controller = tmp_path / "controller"
        self.controller.mkdir()
        self.secret = self.controller / "admin.vipu-cli.hcl"
        self.secret.write_text(SECRET)

    def plant(self, relative: str, target: Path) -> None:
        """What a tenant does from its shell: replace ``relative`` with a link to ``target``."""
        path = self.root / relative
        if path.is_dir() and not path.is_symlink():
            for child in sorted(path.rglob("*"), reverse=True):
                child.unlink() if not child.is_dir() or child.is_symlink() else child.rmdir()
            path.rmdir()
        elif path.exists() or path.is_symlink():
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target)

    def untouched(self) -> None:
        assert self.secret.read_text() == SECRET
        assert sorted(p.name for p in self.controller.iterdir()) == ["admin.vipu-cli.hcl"]


@pytest.fixture
def server(tmp_path: Path) -> Server:
    return Server(tmp_path)


@pytest.mark.parametrize(
    "relative", ["etc/hosts", "etc/environment", "home/.bashrc", "etc/vipu/vipu-cli.hcl"]
)
def test_a_file_replaced_by_a_link_is_replaced_again_not_written_through(
    server: Server, relative: str
) -> None:
    """Setup writes a fresh file where the link was; the link's target keeps its bytes, and
    the old vipu-cli.hcl's 'key' read through the link does not reach the new file."""
    server.plant(relative, server.secret)
    run(server.compute.setup("sv-1", SETUP))
    server.untouched()
    written = server.root / relative
    assert not written.is_symlink()
    assert "controller secret" not in written.read_text()


@pytest.mark.parametrize("relative", ["etc", "home", "etc/vipu"])
def test_a_directory_replaced_by_a_link_is_refused(server: Server, relative: str) -> None:
    """A link where a directory belongs: the setup fails with a sentence, nothing is written
    into the link's target."""
    server.plant(relative, server.controller)
    with pytest.raises(DriverError):
        run(server.compute.setup("sv-1", SETUP))
    server.untouched()


def test_a_rebuild_does_not_follow_links_the_tenant_left(server: Server) -> None:
    server.plant("etc", server.controller)
    run(server.compute.rebuild("sv-1", "ubuntu-20.04-poplar-3.3"))
    server.untouched()
    assert (server.root / "etc" / "image").read_text().startswith("ubuntu-20.04")


def test_reboot_empties_tmp_without_following_a_link(server: Server) -> None:
    server.plant("tmp", server.controller)
    run(server.compute.reboot("sv-1"))
    server.untouched()
    assert (server.root / "tmp").is_dir()
    assert not (server.root / "tmp").is_symlink()


def test_attaching_a_volume_under_a_linked_mnt_is_refused(server: Server) -> None:
    run(server.volumes.create("vol-data", 10, "standard", ""))
    server.plant("mnt", server.controller)
    with pytest.raises(DriverError):
        run(server.volumes.attach("vol-data", "sv-1", "data"))
    run(server.volumes.detach("vol-data", "sv-1"))
    server.untouched()


def test_the_shell_environment_is_read_without_following_a_link(server: Server) -> None:
    """A linked etc/environment is not read: the shell gets no variable from the target."""
    run(server.compute.setup("sv-1", SETUP))
    server.plant("etc/environment", server.secret)

    async def env_of_a_shell() -> str:
        session = await server.compute.open_shell("sv-1", ShellRequest(command="env"))
        output = b""
        while (chunk := await session.read()) is not None:
            output += chunk[1]
        assert await session.wait() == 0
        await session.end()
        return output.decode()

    env = run(env_of_a_shell())
    assert "HOME=" in env  # the shell ran, without the linked file's variables
    assert "controller secret" not in env


DATASETS = DatasetAccess(
    endpoint_url="http://127.0.0.1:9",
    region="us-east-1",
    bucket="data",
    path_style=True,
    access_key_id="AKIATENANT",
    secret_access_key="tenant-secret",
)


@pytest.mark.parametrize("relative", ["home/.aws/credentials", "home/.aws/config"])
def test_dataset_files_replace_a_planted_link(server: Server, relative: str) -> None:
    server.plant(relative, server.secret)
    run(server.compute.setup("sv-1", replace(SETUP, datasets=DATASETS)))
    server.untouched()
    assert not (server.root / relative).is_symlink()
    assert "controller secret" not in (server.root / relative).read_text()


def test_a_linked_aws_directory_is_refused(server: Server) -> None:
    server.plant("home/.aws", server.controller)
    with pytest.raises(DriverError):
        run(server.compute.setup("sv-1", replace(SETUP, datasets=DATASETS)))
    server.untouched()


def test_a_mount_under_a_linked_directory_is_refused_before_mounting(server: Server) -> None:
    server.plant("mnt", server.controller)
    mounted = replace(DATASETS, mount_path="/mnt/datasets")
    with pytest.raises(DriverError, match="/mnt/datasets"):
        run(server.compute.setup("sv-1", replace(SETUP, datasets=mounted)))
    server.untouched()
    assert not (server.layout.mounts / "sv-1").exists()


def test_detaching_leaves_the_tenants_own_aws_files(server: Server) -> None:
    run(server.compute.setup("sv-1", replace(SETUP, datasets=DATASETS)))
    own = server.root / "home/.aws/config"
    own.unlink()
    own.write_text("[profile mine]\nregion = eu-north-1\n")
    run(server.compute.setup("sv-1", SETUP))
    assert own.read_text().startswith("[profile mine]")
    assert not (server.root / "home/.aws/credentials").exists()
    assert "AWS_" not in (server.root / "etc/environment").read_text()
