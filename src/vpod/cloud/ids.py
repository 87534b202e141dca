"""Ids of clusters, servers, volumes, tasks and tokens; injected so tests can predict them."""

from __future__ import annotations

import itertools
import secrets
from typing import Protocol


class IdGenerator(Protocol):
    def new(self, prefix: str) -> str:
        """A fresh id such as ``cl-3f9a1b2c4d5e`` (prefix, dash, lower-case hex)."""


class RandomIds:
    """Twelve random hex digits: unique enough across replicas, short enough to type."""

    def new(self, prefix: str) -> str:
        return f"{prefix}-{secrets.token_hex(6)}"


class SequentialIds:
    """``cl-000001``, ``cl-000002``, ...: predictable ids for tests."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)

    def new(self, prefix: str) -> str:
        return f"{prefix}-{next(self._counter):06d}"
