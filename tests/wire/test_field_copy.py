"""copy_fields: a shape built from a value whose fields carry the same names."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pydantic import BaseModel, ConfigDict

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


def test_each_call_reads_its_own_source_and_overrides() -> None:
    # The second and later calls with the same shape, source type and overridden names
    # take a remembered plan: it must read each source afresh and leave no value behind.
    shapes = [copy_fields(_Shape, _Record(f"p{n}", n), owner=f"u{n}") for n in range(3)]
    assert shapes == [_Shape(id=f"p{n}", size=n, owner=f"u{n}") for n in range(3)]
    assert copy_fields(_Shape, _Record("p9", 9)) == _Shape(id="p9", size=9)
    assert copy_fields(_Shape, _Record("p8", 8), id="x", size=1) == _Shape(id="x", size=1)


def test_a_source_whose_attributes_vary_by_instance_is_read_name_by_name() -> None:
    # A plain object may hold a field on one instance and not on the next: what the first
    # held must not decide what the second is read for.
    class Loose:
        def __init__(self, **fields: object) -> None:
            self.__dict__.update(fields)

    assert copy_fields(_Shape, Loose(id="p1", size=1)) == _Shape(id="p1", size=1)
    assert copy_fields(_Shape, Loose(id="p2", size=2, owner="bob")) == _Shape(
        id="p2", size=2, owner="bob"
    )


def test_sources_that_can_gain_attributes_are_read_name_by_name() -> None:
    # A mutable dataclass, or a pydantic model that takes extra fields, may carry a field
    # on one instance only: the first instance seen must not decide for the next.
    @dataclass
    class Mutable:
        id: str
        size: int

    first, second = Mutable("p1", 1), Mutable("p2", 2)
    second.owner = "bob"  # type: ignore[attr-defined]
    assert copy_fields(_Shape, first) == _Shape(id="p1", size=1)
    assert copy_fields(_Shape, second) == _Shape(id="p2", size=2, owner="bob")

    class Open(BaseModel):
        model_config = ConfigDict(extra="allow")
        id: str
        size: int

    assert copy_fields(_Shape, Open(id="p3", size=3)) == _Shape(id="p3", size=3)
    assert copy_fields(_Shape, Open(id="p4", size=4, owner="eve")) == _Shape(
        id="p4", size=4, owner="eve"
    )


def test_a_protobuf_source_is_read_the_same_every_time() -> None:
    messages = [pb.PartitionIpu(ipulink_domain_topology_id=n, topology_id=n + 1) for n in (1, 5)]
    assert [copy_fields(_Position, m) for m in messages] == [_Position(1, 2), _Position(5, 6)]
