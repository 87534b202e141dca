"""One Slurm cluster (and pod64) for the whole package: starting them costs ~20 s each time."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from vpod.integrations.slurm.local_accounting import missing_accounting

from .harness import TEST_SETTINGS, SlurmPod, slurm_pod


@pytest.fixture(scope="package", name="slurm")
def slurm_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmPod]:
    """A pod64 and a one-node Slurm wired to it; with slurmdbd when it is installed."""
    yield from slurm_pod(tmp_path_factory, TEST_SETTINGS, accounting=missing_accounting() is None)
