"""The embedded drivers: servers as workspaces, volumes as directories; every call idempotent."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import stat
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from vpod.cloud.drivers import (
    DriverError,
    Layout,
    LocalCompute,
    LocalVolumes,
    ServerSetup,
    ServerSpec,
    ShellRequest,
    VipuAccess,
)
from vpod.cloud.drivers.sandbox import UidRange, allocate_uid
from vpod.cloud.drivers.workspace import parse_env, parse_hcl

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout(tmp_path / "cloud")


def spec(boot: str | None = "vol-boot") -> ServerSpec:
    return ServerSpec(
        server_id="sv-1",
        name="c1-poplar-1",
        cluster_id="cl-1",
        cluster_name="c1",
        image="ubuntu-22.04-poplar-3.4",
        flavor="g2a-ai-fast-v1pod-4",
        bare_metal=boot is None,
        address="10.0.0.11",
        boot_volume_id=boot,
    )


def access(key: str | None) -> ServerSetup:
    vipu = VipuAccess(host="127.0.0.1", port=8090, user_id="vpod-cl-1", access_key=key)
    return ServerSetup("c1", (("c1-poplar-1", "10.0.0.11"),), vipu=vipu)


def test_a_vm_server_lives_on_its_boot_volume(layout: Layout) -> None:
    """The server's root is the boot volume's data: it survives the server."""
    volumes, compute = LocalVolumes(layout), LocalCompute(layout)
    run(volumes.create("vol-boot", 50, "standard", "img"))
    run(compute.create_server(spec()))
    run(compute.create_server(spec()))  # idempotent
    root = layout.server_root("sv-1")
    assert root.resolve() == layout.volume_data("vol-boot").resolve()
    assert (root / "etc" / "image").read_text() == "ubuntu-22.04-poplar-3.4\n"
    run(compute.delete_server("sv-1"))
    run(compute.delete_server("sv-1"))
    assert (layout.volume_data("vol-boot") / "etc" / "image").exists()


def test_setup_writes_a_private_hcl_and_the_ipuof_environment(layout: Layout) -> None:
    """vipu-cli.hcl (0600) holds endpoint and key; the env points vipu and Poplar at it."""
    compute = LocalCompute(layout, path="/bin")
    run(compute.create_server(spec(boot=None)))
    result = run(compute.setup("sv-1", access("KEY1")))
    root = layout.server_root("sv-1")
    hcl = root / "etc" / "vipu" / "vipu-cli.hcl"
    assert result.has_vipu_credentials
    assert stat.S_IMODE(hcl.stat().st_mode) == 0o600
    # a sandboxed server has a network of its own: it dials the controller's loopback
    # service at its gateway (docs/security.md, "Tenant networks")
    host = parse_hcl(hcl.read_text())["api-host"]
    if compute.sandboxed:
        assert ipaddress.ip_address(host) in ipaddress.ip_network("169.254.64.0/18")
    else:
        assert host == "127.0.0.1"
    assert parse_hcl(hcl.read_text()) == {
        "api-host": host,
        "api-port": "8090",
        "api-user-id": "vpod-cl-1",
        "api-access-key": "KEY1",
    }
    env = parse_env((root / "etc" / "environment").read_text())
    assert env["IPUOF_VIPU_API_HOST"] == host
    assert env["IPUOF_VIPU_API_PORT"] == "8090"
    if compute.sandboxed:  # paths as the server sees them; the server's uid reads its key
        assert (env["VIPU_CLI_CONFIG"], env["HOME"]) == ("/etc/vipu/vipu-cli.hcl", "/home")
        uid = json.loads((layout.server_dir("sv-1") / "state.json").read_text())["uid"]
        assert hcl.stat().st_uid == uid >= 200_000
    else:
        assert env["VIPU_CLI_CONFIG"] == str(hcl)
        assert env["HOME"] == str(root / "home")


def test_setup_without_a_key_keeps_the_one_the_server_holds(layout: Layout) -> None:
    """Resume rewrites the endpoint (it may move) but keeps the user's key."""
    compute = LocalCompute(layout)
    run(compute.create_server(spec(boot=None)))
    run(compute.setup("sv-1", access("KEY1")))
    moved = ServerSetup("c1", (), vipu=VipuAccess("127.0.0.2", 9000, "vpod-cl-1", None))
    assert run(compute.setup("sv-1", moved)).has_vipu_credentials
    values = parse_hcl((layout.server_root("sv-1") / "etc/vipu/vipu-cli.hcl").read_text())
    assert (values["api-port"], values["api-access-key"]) == ("9000", "KEY1")


def test_a_rebuilt_server_has_no_key_but_keeps_its_volumes(layout: Layout) -> None:
    """Rebuild re-images the root except /mnt; setup then reports the key missing."""
    volumes, compute = LocalVolumes(layout), LocalCompute(layout)
    run(volumes.create("vol-boot", 50, "standard", None))
    run(volumes.create("vol-data", 10, "standard", None))
    run(compute.create_server(spec()))
    run(compute.setup("sv-1", access("KEY1")))
    assert run(volumes.attach("vol-data", "sv-1", "data")) == "/mnt/data"
    (layout.volume_data("vol-data") / "weights.bin").write_text("w")
    run(compute.rebuild("sv-1", "ubuntu-20.04-poplar-3.3"))
    root = layout.server_root("sv-1")
    assert (root / "etc" / "image").read_text() == "ubuntu-20.04-poplar-3.3\n"
    assert (root / "mnt" / "data" / "weights.bin").read_text() == "w"
    assert not run(compute.setup("sv-1", access(None))).has_vipu_credentials


def test_a_shelved_server_has_no_shell_until_unshelved(layout: Layout) -> None:
    """Shell access is refused with the reason while shelved; back after unshelve."""
    compute = LocalCompute(layout)
    run(compute.create_server(spec(boot=None)))
    run(compute.setup("sv-1", access("K")))
    run(compute.shelve("sv-1"))
    with pytest.raises(DriverError, match="is SHELVED_OFFLOADED: it has no shell"):
        run(compute.shell("sv-1"))
    run(compute.unshelve("sv-1"))
    shell = run(compute.shell("sv-1"))
    assert (shell.kind, shell.host) == ("relay", "c1-poplar-1")
    assert "/" not in shell.host + shell.user  # no host path in what a tenant is shown


def test_volume_attach_and_detach_are_idempotent(layout: Layout) -> None:
    """Attaching twice or detaching twice is harmless; a taken mount point is refused."""
    volumes, compute = LocalVolumes(layout), LocalCompute(layout)
    run(compute.create_server(spec(boot=None)))
    run(volumes.create("v1", 1, "standard", None))
    run(volumes.create("v2", 1, "standard", None))
    run(volumes.attach("v1", "sv-1", "data"))
    run(volumes.attach("v1", "sv-1", "data"))
    with pytest.raises(DriverError, match="taken by something else"):
        run(volumes.attach("v2", "sv-1", "data"))
    run(volumes.detach("v1", "sv-1"))
    run(volumes.detach("v1", "sv-1"))
    assert not (layout.server_root("sv-1") / "mnt" / "data").exists()
    run(volumes.delete("v1"))
    run(volumes.delete("v1"))
    with pytest.raises(DriverError, match="volume v1 does not exist"):
        run(volumes.attach("v1", "sv-1", "data"))


def test_a_relative_cloud_directory_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`vpod up` defaults to the relative `vpod-data`: the links a server's root and its
    volumes are made of must still point at real directories (not dangle, which made every
    `vpod cluster create` fail with `[Errno 17] File exists`)."""
    monkeypatch.chdir(tmp_path)
    relative = Layout(Path("vpod-data") / "cloud")
    volumes, compute = LocalVolumes(relative), LocalCompute(relative)
    run(volumes.create("vol-boot", 50, "standard", "img"))
    run(volumes.create("vol-data", 10, "standard", None))
    run(compute.create_server(spec()))
    run(compute.setup("sv-1", access("k1")))
    assert run(volumes.attach("vol-data", "sv-1", "data")) == "/mnt/data"
    root = tmp_path / "vpod-data" / "cloud" / "servers" / "sv-1" / "root"
    assert (root / "etc" / "vipu" / "vipu-cli.hcl").is_file()
    assert (root / "mnt" / "data").resolve() == (
        tmp_path / "vpod-data" / "cloud" / "volumes" / "vol-data" / "data"
    )


def test_uids_are_handed_out_in_order_never_to_two_servers(tmp_path: Path) -> None:
    """In order from the range's start; a uid a server holds is skipped; after the end the
    range wraps to the free ones; a full range is refused with a sentence."""
    uids = UidRange(500_000, 4)
    assert allocate_uid(tmp_path, uids, set()) == 500_000
    assert allocate_uid(tmp_path, uids, {500_000}) == 500_001
    assert allocate_uid(tmp_path, uids, {500_000, 500_002}) == 500_003
    assert allocate_uid(tmp_path, uids, {500_003}) == 500_000  # wrapped; 500_000 was freed
    with pytest.raises(OSError, match=r"every uid of 500000\.\.500003 is taken"):
        allocate_uid(tmp_path, uids, {500_000, 500_001, 500_002, 500_003})


def test_a_server_has_at_most_max_shells_open(layout: Layout, tmp_path: Path) -> None:
    """The next shell is refused with the reason; ending one makes room (the unsafe mode here,
    so the test runs on any host: the count is the same with the sandbox)."""
    compute = LocalCompute(
        layout, bwrap=str(tmp_path / "no-bwrap"), unsafe_shared_host=True, max_shells=2
    )
    run(compute.create_server(spec(boot=None)))
    run(compute.setup("sv-1", access("K")))

    async def scenario() -> None:
        first = await compute.open_shell("sv-1", ShellRequest(command="sleep 30"))
        second = await compute.open_shell("sv-1", ShellRequest(command="sleep 30"))
        with pytest.raises(DriverError, match="has 2 shells open already"):
            await compute.open_shell("sv-1", ShellRequest(command="true"))
        await first.end()
        third = await compute.open_shell("sv-1", ShellRequest(command="exit 5"))
        assert await third.wait() == 5
        for session in (second, third):
            await session.end()

    run(scenario())
