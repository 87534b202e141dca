"""A controller started with --secure authenticates every call on every endpoint.

No credentials and a wrong key are UNAUTHENTICATED (HTTP 401) with a
sentence saying what to send; a plain user on the admin endpoint is
PERMISSION_DENIED (HTTP 403). Keys live in the store only as scrypt hashes.
"""

from __future__ import annotations

import sqlite3
import stat

import grpc
import pytest
from google.protobuf import symbol_database

from vpod.wire import admin_pb2, virmgrpc_pb2

from .conftest import Tenants
from .procs import CALL_TIMEOUT_S, credentials, run_tool, vipu_server_in_process

pytestmark = pytest.mark.e2e

ADMIN_SERVICE = admin_pb2.DESCRIPTOR.services_by_name["AdminService"]
USER_SERVICE = virmgrpc_pb2.DESCRIPTOR.services_by_name["UserService"]
USERS_OWN_ADMIN_RPCS = {"ListAllocations"}
"""The one admin rpc a plain user may call: `vipu list allocations` (its own only)."""


def call(channel: grpc.Channel, service: object, method: str, metadata: object) -> grpc.RpcError:
    """Call ``method`` with an empty request; return the error it must fail with."""
    descriptor = service.methods_by_name[method]  # type: ignore[attr-defined]
    request_class = symbol_database.Default().GetSymbol(descriptor.input_type.full_name)
    reply_class = symbol_database.Default().GetSymbol(descriptor.output_type.full_name)
    stub = channel.unary_unary(
        f"/{service.full_name}/{method}",  # type: ignore[attr-defined]
        request_serializer=request_class.SerializeToString,
        response_deserializer=reply_class.FromString,
    )
    with pytest.raises(grpc.RpcError) as caught:
        stub(request_class(), metadata=metadata, timeout=CALL_TIMEOUT_S)
    error = caught.value
    assert isinstance(error, grpc.RpcError)
    return error


@pytest.mark.parametrize("method", sorted(USER_SERVICE.methods_by_name))
def test_every_user_rpc_without_credentials_is_unauthenticated(
    tenants: Tenants, method: str
) -> None:
    """Each rpc of the user API refuses a caller that names nobody, saying what to give."""
    error = call(tenants.user_channel(), USER_SERVICE, method, ())
    assert error.code() is grpc.StatusCode.UNAUTHENTICATED
    assert "--api-user-id and --api-access-key" in (error.details() or "")


@pytest.mark.parametrize("method", sorted(ADMIN_SERVICE.methods_by_name))
def test_every_admin_rpc_with_a_wrong_key_is_unauthenticated(tenants: Tenants, method: str) -> None:
    """A known user with a wrong key gets the same answer as an unknown user: no hint which."""
    wrong = call(tenants.admin_channel(), ADMIN_SERVICE, method, credentials("admin", "nope"))
    unknown = call(tenants.admin_channel(), ADMIN_SERVICE, method, credentials("nobody", "nope"))
    assert wrong.code() is unknown.code() is grpc.StatusCode.UNAUTHENTICATED
    assert wrong.details() == unknown.details()
    assert "wrong access key" in (wrong.details() or "")


@pytest.mark.parametrize(
    "method", sorted(set(ADMIN_SERVICE.methods_by_name) - USERS_OWN_ADMIN_RPCS)
)
def test_every_admin_rpc_refuses_a_plain_user(tenants: Tenants, method: str) -> None:
    """A valid user who is not an administrator is PERMISSION_DENIED on the admin endpoint."""
    error = call(tenants.admin_channel(), ADMIN_SERVICE, method, tenants.md("alice"))
    assert error.code() is grpc.StatusCode.PERMISSION_DENIED
    assert "not an administrator" in (error.details() or "")


def test_rest_without_credentials_is_401_with_a_sentence(tenants: Tenants) -> None:
    with tenants.http() as http:
        reply = http.get("/api/v1/partitions")
    assert reply.status_code == 401
    assert reply.json()["error"]["code"] == "UNAUTHENTICATED"
    assert "--api-user-id" in reply.json()["error"]["message"]


def test_rest_with_a_wrong_key_is_401(tenants: Tenants) -> None:
    with tenants.http("alice", "not-the-key") as http:
        reply = http.get("/api/v1/allocations")
    assert reply.status_code == 401
    assert "wrong access key" in reply.json()["error"]["message"]


def test_every_rest_admin_route_refuses_a_plain_user(tenants: Tenants) -> None:
    """Each operation under /api/v1/admin answers 403 to a plain user, whatever the body."""
    with tenants.http("alice") as http:
        paths = http.get("/openapi.json").json()["paths"]
        operations = [
            (method, path)
            for path, entries in paths.items()
            if path.startswith("/api/v1/admin/")
            for method in entries
        ]
        assert ("get", "/api/v1/admin/events") in operations
        assert ("post", "/api/v1/admin/users") in operations
        for method, path in operations:
            url = path.replace("{", "").replace("}", "")  # /agents/agent_id: any id will do
            reply = http.request(method.upper(), url, json={})
            assert reply.status_code == 403, f"{method.upper()} {path}: {reply.status_code}"
            assert reply.json()["error"]["code"] == "PERMISSION_DENIED"


def test_init_printed_the_key_once_and_wrote_a_private_admin_config(tenants: Tenants) -> None:
    """--init --secure shows the key once and leaves it in a 0600 file; a second --init does not."""
    assert tenants.init_output.count(tenants.keys["admin"]) == 1
    config = tenants.server.data_dir / "admin.vipu-cli.hcl"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert f'api-access-key="{tenants.keys["admin"]}"' in config.read_text()
    again = vipu_server_in_process("--init", "--secure", "--data-dir", str(config.parent))
    assert again.exit_code == 0, again.stderr
    assert "exists already" in again.stdout
    assert "access key:" not in again.stdout


def test_the_admin_config_works_with_vipu_admin(tenants: Tenants) -> None:
    """The file --init wrote is all vipu-admin needs (once the ports are those in use)."""
    config = tenants.server.data_dir / "admin.vipu-cli.hcl"
    done = run_tool(
        "vipu-admin",
        "--config",
        str(config),
        "list",
        "users",
        "--api-port",
        tenants.server.admin_target.rsplit(":", 1)[1],
    )
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()[2:]] == [
        "admin",
        "alice",
        "bob",
        "carol",
    ]


def test_access_keys_are_never_stored_in_clear(tenants: Tenants) -> None:
    """Neither the database nor its write-ahead log holds a key; the users table holds scrypt."""
    store = tenants.server.data_dir / "vpod.db"
    raw = b"".join(p.read_bytes() for p in store.parent.glob("vpod.db*"))
    for user, key in tenants.keys.items():
        assert key.encode() not in raw, f"{user}'s key is in the store"
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        hashes = dict(db.execute("SELECT id, key_hash FROM users"))
    assert set(hashes) == set(tenants.keys)
    assert all(h.startswith("scrypt$16384$8$1$") for h in hashes.values())
    assert len(set(hashes.values())) == len(hashes)


def test_an_open_start_of_a_secure_store_is_refused(tenants: Tenants) -> None:
    """Forgetting --secure does not open the tenants' partitions: one line, exit 2."""
    done = vipu_server_in_process("--data-dir", str(tenants.server.data_dir), "--port", "0")
    assert done.exit_code == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "error: this store was initialised with --secure: start with --secure (or with"
        " --insecure to serve it without authentication anyway)"
    )
