"""docs/store.md stays complete: every table, every Store method and every error is described."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from vpod.store import Store, errors
from vpod.store.schema import metadata

DOC = (Path(__file__).parents[2] / "docs" / "store.md").read_text()


@pytest.mark.parametrize("table", sorted(metadata.tables))
def test_every_table_is_described(table: str) -> None:
    """The schema table of docs/store.md has a row for each table."""
    assert f"| `{table}` |" in DOC


@pytest.mark.parametrize("method", [m for m in dir(Store) if not m.startswith("_")])
def test_every_store_method_is_listed(method: str) -> None:
    """The API table of docs/store.md names each public Store method."""
    assert f"`{method}`" in DOC


@pytest.mark.parametrize(
    "error",
    [n for n, c in vars(errors).items() if inspect.isclass(c) and issubclass(c, Exception)],
)
def test_every_error_is_in_the_tree(error: str) -> None:
    """The error tree of docs/store.md shows each store exception."""
    assert error in DOC
