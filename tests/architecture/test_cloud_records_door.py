"""The cloud reaches its records through one door: the context offers no raw store, and the
records' methods take and return cloud model values, never store rows."""

from __future__ import annotations

import inspect
import typing
from dataclasses import fields

from vpod.cloud.services.context import CloudContext
from vpod.cloud.services.records import CloudRecords


def test_the_context_holds_records_and_no_raw_store() -> None:
    names = {f.name for f in fields(CloudContext)}
    assert "records" in names
    assert not names & {"store", "calls", "db"}
    for gone in ("db", "db_racing"):
        assert not hasattr(CloudContext, gone)


def test_no_records_method_takes_or_returns_a_store_type() -> None:
    public = [
        (name, member)
        for name, member in inspect.getmembers(CloudRecords, inspect.iscoroutinefunction)
        if not name.startswith("_")
    ]
    assert len(public) > 50  # the walk sees the whole door (one that saw nothing would pass)
    leaks = []
    for name, method in public:
        for hint in typing.get_type_hints(method).values():
            for part in _parts(hint):
                if getattr(part, "__module__", "").startswith("vpod.store"):
                    leaks.append(f"{name}: {part.__module__}.{part.__qualname__}")
    assert not leaks, leaks


def _parts(hint: object) -> typing.Iterator[object]:
    yield hint
    for arg in typing.get_args(hint):
        yield from _parts(arg)
