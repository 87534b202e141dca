"""The clients' methods are declared once (``vpod.client.api_methods``): the blocking client and
its asyncio twin offer the same methods with the same parameters, and a declaration shared by a
gRPC client and the REST clients names a builder for each."""

from __future__ import annotations

import inspect

import pytest

from vpod.client import (
    AdminClient,
    AsyncAdminClient,
    AsyncCloudClient,
    AsyncRestClient,
    AsyncUserClient,
    CloudClient,
    RestClient,
    UserClient,
    rest_calls,
)
from vpod.client.admin import AdminMethods
from vpod.client.api_methods import api_call
from vpod.client.user import UserMethods

TWINS = [
    (UserClient, AsyncUserClient),
    (AdminClient, AsyncAdminClient),
    (RestClient, AsyncRestClient),
    (CloudClient, AsyncCloudClient),
]
BLOCKING_ONLY = {"changes", "open_shell", "open_ssh_tunnel"}


def _unopened(cls: type) -> object:
    """A client without a transport: only its methods are looked at, nothing is called."""
    client: object = object.__new__(cls)
    client.__dict__["_transport"] = None
    return client


def _methods(cls: type) -> dict[str, inspect.Signature]:
    found = {}
    for name in dir(cls):
        if name.startswith("_") or name in BLOCKING_ONLY:
            continue
        member = inspect.getattr_static(cls, name)
        if isinstance(member, api_call):
            found[name] = inspect.signature(member.build)
        elif inspect.isfunction(member):
            found[name] = inspect.signature(member)
    return found


@pytest.mark.parametrize(("blocking", "asyncio"), TWINS, ids=lambda c: c.__name__)
def test_the_twins_offer_the_same_methods_with_the_same_parameters(
    blocking: type, asyncio: type
) -> None:
    ours, theirs = _methods(blocking), _methods(asyncio)
    assert len(ours) > 5  # the walk sees the tables (one that saw nothing would pass)
    assert ours.keys() == theirs.keys()
    differ = [n for n in ours if list(ours[n].parameters) != list(theirs[n].parameters)]
    assert differ == []


@pytest.mark.parametrize(("blocking", "asyncio"), TWINS, ids=lambda c: c.__name__)
def test_every_method_of_an_asyncio_twin_is_a_coroutine_function(
    blocking: type, asyncio: type
) -> None:
    client = _unopened(asyncio)
    names = [n for n in _methods(asyncio) if n not in ("from_config", "endpoint_in")]
    assert names
    assert [n for n in names if not inspect.iscoroutinefunction(getattr(client, n))] == []
    blocking_client = _unopened(blocking)
    assert [n for n in names if inspect.iscoroutinefunction(getattr(blocking_client, n))] == []


@pytest.mark.parametrize("table", [UserMethods, AdminMethods], ids=lambda c: c.__name__)
def test_a_declaration_shared_with_the_rest_clients_names_its_rest_builder(table: type) -> None:
    shared = {n: m for n, m in vars(table).items() if isinstance(m, api_call)}
    assert len(shared) > 5
    assert [n for n, m in shared.items() if m.rest is None] == []
    # The REST builder is named, not imported (the gRPC clients load no pydantic): it must
    # exist and take exactly the gRPC builder's parameters.
    rest = {n: getattr(rest_calls, m.rest, None) for n, m in shared.items()}
    assert [n for n, builder in rest.items() if builder is None] == []
    differ = [
        n
        for n, m in shared.items()
        if inspect.signature(m.build).parameters != inspect.signature(rest[n]).parameters
    ]
    assert differ == []


def test_a_method_shows_its_name_parameters_and_help() -> None:
    client = _unopened(AdminClient)
    assert isinstance(client, AdminClient)
    method = client.create_agent
    assert method.__name__ == "create_agent"
    assert method.__qualname__ == "AdminClient.create_agent"
    assert "key" in inspect.signature(method).parameters
    assert method.__doc__
    assert "registered" in method.__doc__
