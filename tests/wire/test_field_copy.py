"""copy_fields: a shape built from a value whose fields carry the same names."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire.field_copy import copy_fields, declared_fields
from vpod.wire.rest.users import UserOut


@dataclass(frozen=True)
class _Record:
    id: str
    size: int
    note: str = "internal"


@dataclass(frozen=True)
class _Shape:
    id: str
    size: int
    owner: str = "nobody"


def test_copies_the_fields_the_shape_declares_and_keeps_its_defaults() -> None:
    assert copy_fields(_Shape, _Record("p1", 4)) == _Shape(id="p1", size=4, owner="nobody")


def test_overrides_win_over_the_source() -> None:
    shape = copy_fields(_Shape, _Record("p1", 4), size=8, owner="alice")
    assert shape == _Shape(id="p1", size=8, owner="alice")


def test_a_required_field_the_source_lacks_is_an_error() -> None:
    @dataclass(frozen=True)
    class Partial:
        id: str

    with pytest.raises(TypeError):
        copy_fields(_Shape, Partial("p1"))


def test_protobuf_messages_are_shapes_too() -> None:
    wire = copy_fields(pb.PartitionIpu, _Position(2, 1), routing_id=3)
    assert (wire.ipulink_domain_topology_id, wire.topology_id, wire.routing_id) == (2, 1, 3)
    assert "routing_id" in declared_fields(pb.PartitionIpu)


def test_anything_else_is_refused() -> None:
    with pytest.raises(
        TypeError, match="neither a dataclass, a pydantic model nor a protobuf message"
    ):
        declared_fields(int)


@dataclass(frozen=True)
class _Position:
    ipulink_domain_topology_id: int
    topology_id: int


def test_pydantic_models_are_shapes_too() -> None:
    @dataclass(frozen=True)
    class User:
        id: str
        allocation_ids: tuple[str, ...]
        admin: bool
        key: str

    out = copy_fields(UserOut, User("alice", ("a1",), False, "secret"))
    assert out.model_dump() == {"id": "alice", "allocation_ids": ["a1"], "admin": False}
