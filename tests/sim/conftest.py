"""Fixtures for the simulator's tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def real_trace() -> Path:
    """``itp-cluster02.csv`` from ``$VPOD_TRACES`` or ``../shared/data/traces`` beside the repo."""
    folder = Path(os.environ.get("VPOD_TRACES", REPO.parent / "shared" / "data" / "traces"))
    path = folder / "itp-cluster02.csv"
    if not path.is_file():
        pytest.skip(f"no real trace at {path}: set VPOD_TRACES to the traces folder")
    return path
