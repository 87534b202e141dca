"""Partition keys on a secure controller: one partition, and nothing else, on every endpoint.

alice mints a key for ``part-of-alice`` (the tenants' fixture) while a second
partition of hers, in the same allocation, stands beside it: the key sees,
reads, resets and attaches ``part-of-alice`` only, over gRPC, REST and the
``vipu`` command line, and is refused what a key for one partition must not do.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator

import grpc
import pytest

from vpod.client import MintedPartitionKey, NotFound, PermissionDenied, UserClient
from vpod.client.errors import AlreadyExists, Unauthenticated
from vpod.wire import admin_pb2 as apb
from vpod.wire import virmgrpc_pb2 as pb

from .conftest import Tenants
from .procs import CALL_TIMEOUT_S, credentials, run_tool

pytestmark = pytest.mark.e2e

T = CALL_TIMEOUT_S
OWN = "part-of-alice"
SIBLING = "alice-sibling"
GHOST = "no-such-partition"


def _client(tenants: Tenants, user_id: str, key: str) -> UserClient:
    host, port = tenants.server.user_target.rsplit(":", 1)
    return UserClient.from_config(
        env={}, api_host=host, api_port=int(port), api_user_id=user_id, api_access_key=key
    )


@pytest.fixture(scope="module")
def sibling(tenants: Tenants) -> Iterator[str]:
    """A second partition in alice's allocation: a key for part-of-alice must not see it."""
    with _client(tenants, "alice", tenants.keys["alice"]) as alice:
        alice.create_partition(SIBLING, 1, allocation="alloc-a")
        yield SIBLING
        alice.remove_partition(SIBLING)


@pytest.fixture(scope="module")
def minted(tenants: Tenants, sibling: str) -> Iterator[MintedPartitionKey]:
    with _client(tenants, "alice", tenants.keys["alice"]) as alice:
        key = alice.create_partition_key(OWN)
        yield key
        with contextlib.suppress(NotFound):
            alice.remove_partition_key(key.user_id)


def _md(key: MintedPartitionKey) -> tuple[tuple[str, str], ...]:
    return credentials(key.user_id, key.access_key)


def _code(call: object, *args: object, **kwargs: object) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call(*args, timeout=T, **kwargs)  # type: ignore[operator]
    return caught.value


def test_minting_names_the_key_after_owner_and_partition(minted: MintedPartitionKey) -> None:
    assert minted.user_id == f"alice.{OWN}"
    assert minted.partition_key.owner_id == "alice"
    assert minted.partition_key.partition_id == OWN
    assert len(minted.access_key) >= 40


def test_the_key_lists_its_partition_alone(tenants: Tenants, minted: MintedPartitionKey) -> None:
    stub = tenants.user_stub()
    listed = stub.ListPartitions(pb.ListPartitionsRequest(), metadata=_md(minted), timeout=T)
    assert [p.id for p in listed.partitions] == [OWN]
    by_alloc = stub.ListPartitions(
        pb.ListPartitionsRequest(allocation_id="alloc-a"), metadata=_md(minted), timeout=T
    )
    assert [p.id for p in by_alloc.partitions] == [OWN]
    allocations = tenants.admin_stub_on_user_port().ListAllocations(
        apb.ListAllocationsRequest(), metadata=_md(minted), timeout=T
    )
    assert list(allocations.allocations) == []
    attributes = stub.ListIPUAttributes(
        pb.ListIPUAttributesRequest(), metadata=_md(minted), timeout=T
    )
    assert list(attributes.entries) == []


def test_the_key_gets_resets_and_attaches_its_partition(
    tenants: Tenants, minted: MintedPartitionKey
) -> None:
    with _client(tenants, minted.user_id, minted.access_key) as vipu:
        assert vipu.get_partition(OWN).id == OWN
        assert vipu.partition_status(OWN).ready_state.name == "ACTIVE"
        config = vipu.ipuof_config(OWN)
        assert config.files()
        vipu.reset_partition(OWN)
        vipu.wait_until_active(OWN)


def test_other_partitions_read_as_missing_ones(
    tenants: Tenants, minted: MintedPartitionKey
) -> None:
    stub = tenants.user_stub()
    ghost = _code(
        stub.GetPartitionStatus,
        pb.GetPartitionStatusRequest(partition_id=GHOST),
        metadata=_md(minted),
    )
    assert ghost.code() is grpc.StatusCode.NOT_FOUND
    for hidden in (SIBLING, "part-of-bob"):
        for call, request in (
            (stub.GetPartitionStatus, pb.GetPartitionStatusRequest(partition_id=hidden)),
            (stub.GetPartitionIpuofConfig, pb.GetPartitionIpuofConfigRequest(partition_id=hidden)),
            (stub.ResetPartition, pb.ResetPartitionRequest(partition_id=hidden)),
        ):
            error = _code(call, request, metadata=_md(minted))
            assert error.code() is grpc.StatusCode.NOT_FOUND, (hidden, call)
            assert (error.details() or "").replace(hidden, GHOST) == ghost.details()


def test_the_key_may_not_create_remove_or_mint(
    tenants: Tenants, minted: MintedPartitionKey
) -> None:
    stub = tenants.user_stub()
    create = _code(
        stub.CreatePartition,
        pb.CreatePartitionRequest(
            requirements=pb.PartitionRequirements(id="by-key", size=1, allocation_id="alloc-a")
        ),
        metadata=_md(minted),
    )
    remove = _code(
        stub.RemovePartition, pb.RemovePartitionRequest(partition_id=OWN), metadata=_md(minted)
    )
    for error, what in ((create, "create partitions"), (remove, "remove it")):
        assert error.code() is grpc.StatusCode.PERMISSION_DENIED
        assert f"key for partition {OWN} only" in (error.details() or "")
        assert what in (error.details() or "")
    with _client(tenants, minted.user_id, minted.access_key) as vipu:
        with pytest.raises(PermissionDenied):
            vipu.create_partition_key(OWN, "another")
        with pytest.raises(PermissionDenied):
            vipu.list_partition_keys()
    admin = _code(tenants.admin_stub().ListAgents, apb.ListAgentsRequest(), metadata=_md(minted))
    assert admin.code() is grpc.StatusCode.PERMISSION_DENIED


def test_rest_shows_and_refuses_the_same(tenants: Tenants, minted: MintedPartitionKey) -> None:
    with tenants.http(minted.user_id, minted.access_key) as http:
        listed = http.get("/api/v1/partitions")
        assert listed.status_code == 200
        assert [p["id"] for p in listed.json()["partitions"]] == [OWN]
        assert http.get(f"/api/v1/partitions/{OWN}").status_code == 200
        assert http.post(f"/api/v1/partitions/{OWN}/reset").status_code == 204
        assert http.get(f"/api/v1/partitions/{SIBLING}").status_code == 404
        assert http.get("/api/v1/partitions/part-of-bob").status_code == 404
        created = http.post(
            "/api/v1/partitions", json={"id": "by-key", "size": 1, "allocation_id": "alloc-a"}
        )
        assert created.status_code == 403, created.text
        assert http.delete(f"/api/v1/partitions/{OWN}").status_code == 403
        assert http.post("/api/v1/partition-keys", json={"partition_id": OWN}).status_code == 403
        assert http.get("/api/v1/admin/users").status_code == 403


def test_vipu_works_with_the_key_in_the_environment(
    tenants: Tenants, minted: MintedPartitionKey
) -> None:
    host, port = tenants.server.user_target.rsplit(":", 1)
    env = {
        "VIPU_CLI_API_HOST": host,
        "VIPU_CLI_API_PORT": port,
        "VIPU_CLI_API_USER_ID": minted.user_id,
        "VIPU_CLI_API_ACCESS_KEY": minted.access_key,
        "HOME": os.environ.get("HOME", "/root"),
    }
    got = run_tool("vipu", "get", "partition", OWN, env=env)
    assert got.returncode == 0, got.stderr
    assert OWN in got.stdout
    listed = run_tool("vipu", "list", "partitions", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert [p["id"] for p in json.loads(listed.stdout)["partitions"]] == [OWN]
    other = run_tool("vipu", "get", "partition", SIBLING, env=env)
    assert other.returncode == 1
    create = run_tool("vipu", "create", "partition", "by-key", "--size", "1", env=env)
    assert create.returncode != 0
    assert "not create partitions" in create.stderr


def test_only_users_of_the_partition_mint_and_only_owners_revoke(
    tenants: Tenants, minted: MintedPartitionKey
) -> None:
    with _client(tenants, "bob", tenants.keys["bob"]) as bob:
        with pytest.raises(NotFound):
            bob.create_partition_key(OWN)
        with pytest.raises(NotFound):
            bob.remove_partition_key(minted.user_id)
        assert bob.list_partition_keys() == []
    with _client(tenants, "alice", tenants.keys["alice"]) as alice:
        with pytest.raises(AlreadyExists):
            alice.create_partition_key(OWN, "bob")  # a user's id
        assert minted.user_id in [k.id for k in alice.list_partition_keys()]


def test_revoking_stops_the_key_at_once(tenants: Tenants, sibling: str) -> None:
    with _client(tenants, "alice", tenants.keys["alice"]) as alice:
        key = alice.create_partition_key(SIBLING, "short-lived")
        again = alice.create_partition_key(SIBLING, "short-lived")  # a retried mint: a new key
        with _client(tenants, key.user_id, key.access_key) as old, pytest.raises(Unauthenticated):
            old.list_partitions()
        with _client(tenants, again.user_id, again.access_key) as vipu:
            assert [p.id for p in vipu.list_partitions()] == [SIBLING]
            alice.remove_partition_key("short-lived")
            with pytest.raises(Unauthenticated):
                vipu.list_partitions()


def test_the_key_goes_with_its_partition_and_its_owner(tenants: Tenants) -> None:
    admin_md = tenants.md("admin")
    admin = tenants.admin_stub()
    made = admin.CreateUser(
        apb.CreateUserRequest(user_id="dave", allocation_ids=["alloc-a"]),
        metadata=admin_md,
        timeout=T,
    )
    try:
        with _client(tenants, "dave", made.access_key) as dave:
            dave.create_partition("dave-part", 1, allocation="alloc-a")
            key = dave.create_partition_key("dave-part")
            with _client(tenants, key.user_id, key.access_key) as job:
                assert [p.id for p in job.list_partitions()] == ["dave-part"]
                dave.remove_partition("dave-part")
                with pytest.raises(Unauthenticated):
                    job.list_partitions()
            # Made again with the same id: the old key does not come back.
            dave.create_partition("dave-part", 1, allocation="alloc-a")
            with (
                _client(tenants, key.user_id, key.access_key) as job,
                pytest.raises(Unauthenticated),
            ):
                job.list_partitions()
            key = dave.create_partition_key("dave-part")
        admin.RemoveUser(apb.RemoveUserRequest(user_id="dave"), metadata=admin_md, timeout=T)
        with _client(tenants, key.user_id, key.access_key) as job, pytest.raises(Unauthenticated):
            job.list_partitions()
    finally:
        with (
            _client(tenants, "alice", tenants.keys["alice"]) as alice,
            contextlib.suppress(NotFound),
        ):
            alice.remove_partition("dave-part")
        with contextlib.suppress(grpc.RpcError):
            admin.RemoveUser(apb.RemoveUserRequest(user_id="dave"), metadata=admin_md, timeout=T)
