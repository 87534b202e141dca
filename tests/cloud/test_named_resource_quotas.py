"""A project's keypairs and dataset storages count against quotas, as its clusters and
volumes do: one tenant cannot fill the store everyone shares.

An in-process controller and cloud on SQLite (no agents, no servers): the quota check runs
in the transaction that records the resource, so concurrent additions cannot both squeeze
under the limit, and deleting one frees its place.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from vpod.cloud.app import Cloud, build_cloud
from vpod.cloud.model import errors
from vpod.cloud.quotas import DEFAULT_QUOTAS, QuotaExceeded
from vpod.cloud.services.datasets import NewStorage
from vpod.cloud.services.projects import Principal
from vpod.cloud.settings import CloudSettings
from vpod.controller.agent_grpc import GrpcAgentGateway
from vpod.controller.app import build_controller
from vpod.controller.settings import Settings
from vpod.domain.cloud.datasets import StorageEndpoint

SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"


@pytest.fixture
def cloud(tmp_path: Path) -> Iterator[Cloud]:
    controller = build_controller(Settings(data_dir=tmp_path, secure=True), GrpcAgentGateway())
    endpoint = StorageEndpoint(name="lab", url="http://127.0.0.1:9000/", path_style=True)
    settings = CloudSettings(data_dir=tmp_path, storage_endpoints=(endpoint,))
    yield build_cloud(controller, settings)
    controller.close()


def _project(cloud: Cloud, **quotas: int) -> Principal:
    async def make() -> Principal:
        project, token = await cloud.projects.create("acme", quotas=quotas)
        return Principal(token_id=token.record.id, project_id=project.id)

    return asyncio.run(make())


def test_new_projects_get_limits_for_keypairs_and_dataset_storages() -> None:
    assert DEFAULT_QUOTAS["keypairs"] > 0
    assert DEFAULT_QUOTAS["dataset_storages"] > 0


def test_keypairs_beyond_the_quota_are_refused_until_one_is_deleted(cloud: Cloud) -> None:
    who = _project(cloud, keypairs=2)

    async def scenario() -> None:
        await cloud.keypairs.create(who, "first")
        await cloud.keypairs.import_key(who, "second", SSH_KEY)
        with pytest.raises(QuotaExceeded, match="quota keypairs is 2 and 2 are in use"):
            await cloud.keypairs.import_key(who, "third", SSH_KEY)
        with pytest.raises(QuotaExceeded):
            await cloud.keypairs.create(who, "third")
        assert [k.name for k in await cloud.keypairs.list_keypairs(who)] == ["first", "second"]
        assert (await cloud.projects.usage("acme"))["keypairs"] == 2
        await cloud.keypairs.delete(who, "first")
        await cloud.keypairs.create(who, "third")

    asyncio.run(scenario())


def test_concurrent_keypairs_cannot_squeeze_past_the_quota(cloud: Cloud) -> None:
    who = _project(cloud, keypairs=3)

    async def scenario() -> list[BaseException | object]:
        return await asyncio.gather(
            *(cloud.keypairs.import_key(who, f"key-{n}", SSH_KEY) for n in range(8)),
            return_exceptions=True,
        )

    results = asyncio.run(scenario())
    refused = [r for r in results if isinstance(r, QuotaExceeded)]
    assert len(refused) == 5
    assert all(not isinstance(r, BaseException) or isinstance(r, QuotaExceeded) for r in results)


def test_dataset_storages_beyond_the_quota_are_refused(cloud: Cloud) -> None:
    who = _project(cloud, dataset_storages=1)

    def storage(name: str) -> NewStorage:
        return NewStorage(name, "lab", "bucket-1", "AKIAEXAMPLE", "secret-access-key")

    async def scenario() -> None:
        await cloud.datasets.register(who, storage("data-1"))
        with pytest.raises(QuotaExceeded, match="quota dataset_storages is 1"):
            await cloud.datasets.register(who, storage("data-2"))

    asyncio.run(scenario())


def test_a_quota_refusal_is_resource_exhausted() -> None:
    assert issubclass(QuotaExceeded, errors.NoCapacity)
