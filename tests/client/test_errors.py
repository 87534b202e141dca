"""Every failure class of the exception tree, provoked against a real controller."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_tls import issue_certificate
from tests.e2e.conftest import Pod
from tests.ports import free_port
from vpod.client import (
    AdminClient,
    AgentState,
    AlreadyExists,
    AsyncUserClient,
    ConfigError,
    DeadlineExceeded,
    Endpoint,
    FailedPrecondition,
    Fault,
    FaultKind,
    InvalidArgument,
    NoCapacity,
    NotFound,
    PermanentError,
    PermissionDenied,
    RetryableError,
    TlsError,
    Unauthenticated,
    Unavailable,
    Unreachable,
    UserClient,
    WrongEndpoint,
)
from vpod.domain.partition_states import ReadyState

pytestmark = [pytest.mark.e2e]

AGENT_TIMEOUT_S = 5.0
"""The controller's default wait for an agent (a hung one answers never)."""


@pytest.fixture
def vipu(pod: Pod) -> Iterator[UserClient]:
    with UserClient.from_config(str(pod.config)) as client:
        yield client


def user(pod: Pod, **overrides: str | float) -> UserClient:
    return UserClient.from_config(str(pod.config), **overrides)


def test_refusals_carry_the_servers_sentence_and_code(vipu: UserClient) -> None:
    with pytest.raises(NotFound, match="nowhere") as missing:
        vipu.partition_status("nowhere")
    assert isinstance(missing.value, PermanentError)
    assert missing.value.code == "NOT_FOUND"
    with pytest.raises(InvalidArgument) as bad:
        vipu.create_partition("c-bad", 3)
    assert "3" in str(bad.value)
    assert bad.value.code == "INVALID_ARGUMENT"


def test_no_capacity_and_duplicates_are_conflicts(vipu: UserClient) -> None:
    vipu.create_partition("c-full", 16)
    try:
        with pytest.raises(NoCapacity):
            vipu.create_partition("c-more", 1)
        with pytest.raises(AlreadyExists, match="c-full"):
            vipu.create_partition("c-full", 4)
    finally:
        vipu.remove_partition("c-full")
    with pytest.raises(NotFound, match="not in the list of partitions you may see"):
        vipu.get_partition("c-full")


def test_credentials_are_checked(pod: Pod, admin_config: Path) -> None:
    with pytest.raises(Unauthenticated):
        user(pod, api_access_key="wrong").list_partitions()
    with pytest.raises(Unauthenticated, match="api-user-id and api-access-key"):
        UserClient(Endpoint("127.0.0.1", pod.user_port)).list_partitions()
    not_admin = AdminClient.from_config(str(pod.config))  # the user's own key
    with pytest.raises(PermissionDenied, match="not an administrator"):
        not_admin.list_users()
    admin = AdminClient.from_config(str(admin_config))
    with pytest.raises(FailedPrecondition):  # it has allocations
        admin.remove_cluster("cluster")


def test_connection_failures_name_the_endpoint(pod: Pod) -> None:
    port = free_port()
    with pytest.raises(Unreachable) as down:
        user(pod, api_port=port, timeout=5).list_partitions()
    assert isinstance(down.value, RetryableError)
    assert down.value.endpoint == f"127.0.0.1:{port}"
    assert str(down.value).startswith(f"cannot reach the V-IPU controller at 127.0.0.1:{port}")


def test_async_client_maps_failures_the_same_way(pod: Pod) -> None:
    async def failures() -> list[type[Exception]]:
        seen: list[type[Exception]] = []
        async with AsyncUserClient.from_config(str(pod.config)) as client:
            for call in (client.partition_status("nowhere"), client.create_partition("x", 3)):
                try:
                    await call
                except Exception as exc:
                    seen.append(type(exc))
        port = free_port()
        async with AsyncUserClient.from_config(str(pod.config), api_port=port) as down:
            try:
                await down.version()
            except Exception as exc:
                seen.append(type(exc))
        return seen

    assert asyncio.run(failures()) == [NotFound, InvalidArgument, Unreachable]


def test_the_wrong_api_on_a_port_is_named(pod: Pod) -> None:
    """The user API asked on the admin port: UNIMPLEMENTED becomes WrongEndpoint."""
    with pytest.raises(WrongEndpoint, match="does not serve this call"):
        user(pod, api_port=pod.admin_port).list_partitions()


def test_tls_settings_that_cannot_work_are_diagnosed(pod: Pod, tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_bytes(issue_certificate("test CA", None, ca=True).cert)
    with pytest.raises(TlsError, match="check tls-ca, tls-cert and tls-key"):
        user(pod, tls_ca=str(ca)).list_partitions()
    with pytest.raises(ConfigError, match="cannot read tls-ca file"):
        user(pod, tls_ca=str(tmp_path / "missing.pem")).list_partitions()
    with pytest.raises(ConfigError, match="needs both tls-cert and tls-key"):
        user(pod, tls_ca=str(ca), tls_cert=str(ca)).version()


def hang_last_agent(admin: AdminClient) -> str:
    """Make the last agent hang: a create that needs it waits for the controller's agent timeout."""
    hung = sorted(a.id for a in admin.list_agents())[-1]
    admin.inject_fault(hung, Fault(FaultKind.AGENT_HANG, reason="client test"))
    return hung


def recover(pod: Pod, admin: AdminClient, hung: str, *partitions: str) -> None:
    """Clear the hang; each create whose client gave up must then end as any create does
    (ACTIVE, or rolled back) within the agent timeout, not sit PENDING for a sweeper."""
    admin.clear_fault(hung)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        states = {a.id: a.state for a in admin.list_agents()}
        if states[hung] is AgentState.ONLINE:
            break
        time.sleep(0.2)
    assert states[hung] is AgentState.ONLINE
    settled_by = time.monotonic() + 3 * AGENT_TIMEOUT_S
    for partition in partitions:
        while True:
            try:
                found = user(pod).get_partition(partition)
            except NotFound:
                break
            if found.ready_state is ReadyState.ACTIVE:
                user(pod).remove_partition(partition)
                break
            assert time.monotonic() < settled_by, f"{partition} is still {found.ready_state}"
            time.sleep(0.2)


def test_a_deadline_on_a_live_controller_is_not_called_unreachable(
    pod: Pod, admin_config: Path
) -> None:
    """The deadline passes, but the controller accepts connections: DeadlineExceeded.

    The controller is made slow for certain (it waits for a hung agent, up to its
    5 s agent timeout), so the client's 0.5 s deadline passes however fast the host.
    """
    admin = AdminClient.from_config(str(admin_config))
    hung = hang_last_agent(admin)
    try:
        with pytest.raises(DeadlineExceeded, match=r"did not answer within 0\.5 s") as late:
            user(pod, timeout=0.5).create_partition("c-late", 16)
        assert isinstance(late.value, RetryableError)
    finally:
        recover(pod, admin, hung, "c-late")

    async def late_async() -> type[Exception] | None:
        async with AsyncUserClient.from_config(str(pod.config), timeout=0.5) as client:
            try:
                await client.create_partition("c-late-async", 16)
            except Exception as exc:
                return type(exc)
        return None

    hung = hang_last_agent(admin)
    try:
        assert asyncio.run(late_async()) is DeadlineExceeded
    finally:
        recover(pod, admin, hung, "c-late-async")


def test_the_servers_own_unavailable_keeps_its_sentence(pod: Pod, admin_config: Path) -> None:
    """An agent that hangs during a create: the controller's UNAVAILABLE, retryable."""
    admin = AdminClient.from_config(str(admin_config))
    hung = hang_last_agent(admin)
    try:
        with pytest.raises(Unavailable, match=hung) as refused:
            user(pod).create_partition("c-hang", 16)
        assert isinstance(refused.value, RetryableError)
    finally:
        recover(pod, admin, hung, "c-hang")
