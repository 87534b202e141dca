"""A user's access key replaced in place: the old key stops at its next call, the user keeps
its grants and partitions, and only administrators may do it.

Against the shared secure controller (``tenants``) with the real ``vipu-admin`` and ``vipu``,
the admin gRPC API and the REST API, on a user of its own (``dave``) that each test makes
and removes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from vpod.wire import admin_pb2 as apb

from .conftest import Tenants
from .procs import run_tool

USER = "dave"


def _allocations(config: Path) -> tuple[int, list[str], str]:
    """(exit status, the allocations ``vipu list allocations`` shows, stderr) with ``config``."""
    done = run_tool("vipu", "--config", str(config), "list", "allocations", "--json")
    if done.returncode != 0:
        return done.returncode, [], done.stderr
    listing = json.loads(done.stdout)["allocations"]
    return 0, sorted(a["allocation"]["id"] for a in listing), done.stderr


@pytest.fixture
def dave(tenants: Tenants, tmp_path: Path) -> Iterator[Path]:
    """User dave with alloc-a, and the vipu-cli.hcl `create user` wrote for it."""
    code, _, err = tenants.vipu_admin(
        "create", "user", USER, "--allocations", "alloc-a", "--output", str(tmp_path)
    )
    assert code == 0, err
    config = tmp_path / f"{USER}.vipu-cli.hcl"
    # The endpoints the test's config files name (create user wrote the user port alone).
    admin_port = tenants.server.admin_target.rsplit(":", 1)[1]
    config.write_text(config.read_text() + f"admin-api-port={admin_port}\n")
    yield config
    tenants.vipu_admin("remove", "user", USER)


def test_vipu_admin_gives_a_new_key_and_the_old_one_stops(
    tenants: Tenants, dave: Path, tmp_path: Path
) -> None:
    assert _allocations(dave)[:2] == (0, ["alloc-a"])
    new_dir = tmp_path / "new"
    new_dir.mkdir()
    code, out, err = tenants.vipu_admin(
        "update", "user", USER, "--new-key", "--output", str(new_dir), "--json"
    )
    assert code == 0, err
    reply = json.loads(out)
    assert reply["user"]["id"] == USER
    assert reply["user"]["allocation_ids"] == ["alloc-a"]  # the grants stay
    new_config = Path(reply["config_file"])
    assert new_config == new_dir / f"{USER}.vipu-cli.hcl"
    assert new_config.stat().st_mode & 0o777 == 0o600
    assert f'api-access-key="{reply["access_key"]}"' in new_config.read_text()

    code, _, err = _allocations(dave)  # the old key, at its next call
    assert code == 1
    assert "wrong access key" in err
    admin_port = tenants.server.admin_target.rsplit(":", 1)[1]
    new_config.write_text(new_config.read_text() + f"admin-api-port={admin_port}\n")
    assert _allocations(new_config)[:2] == (0, ["alloc-a"])


def test_the_text_output_prints_the_key_once_and_names_the_file(
    tenants: Tenants, dave: Path, tmp_path: Path
) -> None:
    code, out, err = tenants.vipu_admin(
        "update", "user", USER, "--new-key", "--output", str(tmp_path)
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"update user ({USER}): success."
    key = lines[1].removeprefix("access key: ")
    assert f'api-access-key="{key}"' in dave.read_text()  # rewritten in place
    assert lines[-1].startswith(f"config file: {dave} ")


def test_rest_and_grpc_rotate_for_administrators_only(tenants: Tenants, dave: Path) -> None:
    with tenants.http("alice") as alice, tenants.http("admin") as admin:
        assert alice.post(f"/api/v1/admin/users/{USER}/key").status_code == 403
        rotated = admin.post(f"/api/v1/admin/users/{USER}/key")
        assert rotated.status_code == 200, rotated.text
        body = rotated.json()
        assert body["user"]["allocation_ids"] == ["alloc-a"]
        missing = admin.post("/api/v1/admin/users/nobody/key")
        assert missing.status_code == 404
        assert "nobody" in missing.json()["error"]["message"]
        new_key = body["access_key"]
    with tenants.http(USER, key=new_key) as fresh:
        assert fresh.get("/api/v1/partitions").status_code == 200

    stub = tenants.admin_stub()
    with pytest.raises(grpc.RpcError) as refused:
        stub.RotateUserKey(apb.RotateUserKeyRequest(user_id=USER), metadata=tenants.md("alice"))
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    reply = stub.RotateUserKey(apb.RotateUserKeyRequest(user_id=USER), metadata=tenants.md("admin"))
    assert reply.access_key not in ("", new_key)
    with tenants.http(USER, key=new_key) as stale:
        assert stale.get("/api/v1/partitions").status_code == 401


def test_update_user_says_what_to_change_and_who_does_not_exist(tenants: Tenants) -> None:
    code, _, err = tenants.vipu_admin("update", "user", USER)
    assert code == 2
    assert "--new-key" in err
    code, _, err = tenants.vipu_admin("update", "user", "nobody", "--new-key")
    assert code == 1
    assert "user nobody does not exist" in err
    assert len(err.strip().splitlines()) == 1
