"""The copy-on-write id map behaves like a dict that never changes in place."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vpod.placement.persistent import ShardedMap

keys = st.text(min_size=1, max_size=6)
operations = st.lists(st.tuples(st.booleans(), keys, st.integers()), max_size=60)


@given(operations)
def test_matches_a_dict_and_leaves_earlier_versions_alone(ops: list[tuple[bool, str, int]]) -> None:
    """Every version equals the dict it stands for, in key order, after later changes too."""
    current: ShardedMap[int] = ShardedMap()
    model: dict[str, int] = {}
    history = []
    for is_set, key, value in ops:
        if is_set:
            current, model = current.set(key, value), {**model, key: value}
        elif key in model:
            current = current.remove(key)
            model = {k: v for k, v in model.items() if k != key}
        history.append((current, dict(model)))
    for version, expected in history:
        assert dict(version.items()) == expected
        assert version.keys() == sorted(expected)
        assert len(version) == len(expected)
        assert all(k in version and version[k] == v for k, v in expected.items())
    assert ShardedMap.from_items(model.items()) == current


def test_missing_keys() -> None:
    empty: ShardedMap[int] = ShardedMap()
    assert empty.get("x") is None
    assert "x" not in empty
    with pytest.raises(KeyError):
        empty.remove("x")
