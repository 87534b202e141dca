"""Fixtures: a secure controller with two tenants, started once for the security tests.

``tenants`` is a real ``vipu-server --secure`` (initialised with
``vipu-server --init --secure``) and a real ``vipu-agent`` process emulating
four Bow-2000 machines ``ag1``-``ag4``, cabled into cluster ``pod``:

- allocation ``alloc-a`` (ag1, ag2) is granted to ``alice`` and ``carol``;
- allocation ``alloc-b`` (ag3, ag4) is granted to ``bob``;
- ``alice`` created partition ``part-of-alice`` (4 IPUs) in alloc-a, ``bob`` created
  ``part-of-bob`` in alloc-b.

Tests must leave that state as they found it (they make their own
partitions when they need more).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import httpx
import pytest

from vpod.controller import credentials as key_hashing
from vpod.wire import admin_pb2 as apb
from vpod.wire import admin_pb2_grpc as apb_grpc
from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire import virmgrpc_pb2_grpc as pb_grpc

from .procs import (
    CALL_TIMEOUT_S,
    Agents,
    Metadata,
    Server,
    access_key_of,
    credentials,
    issue_agent_token,
    run_tool,
    start_agents,
    start_server,
    wait_for_agents,
)


@dataclass
class Tenants:
    """The running secure controller, its users' keys, and clients for each endpoint."""

    server: Server
    agents: Agents
    keys: dict[str, str]
    """Access key by user id: ``admin``, ``alice``, ``bob``, ``carol``."""
    init_output: str
    channels: list[grpc.Channel] = field(default_factory=list)

    def md(self, user_id: str) -> Metadata:
        return credentials(user_id, self.keys[user_id])

    def _channel(self, target: str) -> grpc.Channel:
        channel = grpc.insecure_channel(target)
        self.channels.append(channel)
        return channel

    def user_stub(self) -> pb_grpc.UserServiceStub:
        return pb_grpc.UserServiceStub(self._channel(self.server.user_target))

    def admin_stub(self) -> apb_grpc.AdminServiceStub:
        return apb_grpc.AdminServiceStub(self._channel(self.server.admin_target))

    def admin_stub_on_user_port(self) -> apb_grpc.AdminServiceStub:
        """The admin service's stub on the user endpoint (it serves ListAllocations only)."""
        return apb_grpc.AdminServiceStub(self._channel(self.server.user_target))

    def user_channel(self) -> grpc.Channel:
        return self._channel(self.server.user_target)

    def admin_channel(self) -> grpc.Channel:
        return self._channel(self.server.admin_target)

    def http(self, user_id: str | None = None, key: str | None = None) -> httpx.Client:
        headers = {}
        if user_id is not None:
            headers["Authorization"] = f"Bearer {user_id}:{key or self.keys[user_id]}"
        return httpx.Client(
            base_url=f"http://127.0.0.1:{self.server.http_port}",
            headers=headers,
            timeout=CALL_TIMEOUT_S,
        )

    def config_file(self, user_id: str) -> Path:
        """A vipu-cli.hcl naming both endpoints and ``user_id``'s credentials."""
        path = self.server.data_dir / f"{user_id}.test.hcl"
        user_port = self.server.user_target.rsplit(":", 1)[1]
        admin_port = self.server.admin_target.rsplit(":", 1)[1]
        path.write_text(
            f'api-host="127.0.0.1"\napi-port={user_port}\nadmin-api-port={admin_port}\n'
            f'api-user-id="{user_id}"\napi-access-key="{self.keys[user_id]}"\n'
        )
        path.chmod(0o600)
        return path

    def vipu_admin(self, *args: str) -> tuple[int, str, str]:
        """The real ``vipu-admin`` as the administrator: (exit status, stdout, stderr)."""
        done = run_tool("vipu-admin", "--config", str(self.config_file("admin")), *args)
        return done.returncode, done.stdout, done.stderr


def _create_partition(stub: pb_grpc.UserServiceStub, md: Metadata, pid: str, alloc: str) -> None:
    stub.CreatePartition(
        pb.CreatePartitionRequest(
            requirements=pb.PartitionRequirements(id=pid, size=4, allocation_id=alloc)
        ),
        metadata=md,
        timeout=CALL_TIMEOUT_S,
    )


@pytest.fixture(scope="session")
def tenants(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenants]:
    data_dir = tmp_path_factory.mktemp("secure")
    init = run_tool("vipu-server", "--init", "--secure", "--data-dir", str(data_dir))
    assert init.returncode == 0, init.stderr
    keys = {"admin": access_key_of(init.stdout)}
    server = start_server(data_dir, "--secure")
    with grpc.insecure_channel(server.admin_target) as channel:
        token = issue_agent_token(
            apb_grpc.AdminServiceStub(channel), credentials("admin", keys["admin"])
        )
    agents = start_agents(server.admin_target, 4, data_dir / "agents.log", token=token)
    live = Tenants(server=server, agents=agents, keys=keys, init_output=init.stdout)
    try:
        admin = live.admin_stub()
        md = live.md("admin")
        wait_for_agents(admin, md, agents.ids)
        t = CALL_TIMEOUT_S
        admin.CreateCluster(
            apb.CreateClusterRequest(cluster_id="pod", agent_ids=agents.ids), metadata=md, timeout=t
        )
        for alloc, members in (("alloc-a", ["ag1", "ag2"]), ("alloc-b", ["ag3", "ag4"])):
            admin.CreateAllocation(
                apb.CreateAllocationRequest(
                    allocation_id=alloc, cluster_id="pod", agent_ids=members
                ),
                metadata=md,
                timeout=t,
            )
        for user, alloc in (("alice", "alloc-a"), ("bob", "alloc-b"), ("carol", "alloc-a")):
            reply = admin.CreateUser(
                apb.CreateUserRequest(user_id=user, allocation_ids=[alloc]), metadata=md, timeout=t
            )
            keys[user] = reply.access_key
        user_api = live.user_stub()
        _create_partition(user_api, live.md("alice"), "part-of-alice", "alloc-a")
        _create_partition(user_api, live.md("bob"), "part-of-bob", "alloc-b")
        yield live
    finally:
        for channel in live.channels:
            channel.close()
        agents.stop()
        server.stop()


@pytest.fixture
def scrypt_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The secrets checked against a stored scrypt hash in this test, in order (every
    check of the controller and the cloud goes through ``credentials.verify_key``)."""
    checked: list[str] = []
    real = key_hashing.verify_key

    def counting(key: str, stored: str) -> bool:
        checked.append(key)
        return real(key, stored)

    monkeypatch.setattr(key_hashing, "verify_key", counting)
    return checked
