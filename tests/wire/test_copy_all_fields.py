"""copy_all_fields: a shape filled from a value whose fields share its names, every field from the
source or an explicit override (the cloud's conversions)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
from pydantic import BaseModel

from vpod.cloud.model.records import Volume
from vpod.cloud.model.statuses import VolumeStatus
from vpod.wire.field_copy import copy_all_fields, declared_fields
from vpod.wire.rest.cloud_volumes import VolumeOut

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Source:
    id: str
    name: str
    size: int
    secret: str = "kept out"


class Shape(BaseModel):
    id: str
    name: str
    size: int


@dataclass(frozen=True)
class Record:
    id: str
    size: int
    derived: int = field(init=False, default=0)


def test_a_pydantic_shape_takes_the_fields_it_declares_and_nothing_else() -> None:
    out = copy_all_fields(Shape, Source(id="a", name="n", size=3))
    assert out.model_dump() == {"id": "a", "name": "n", "size": 3}


def test_overrides_win_over_the_source() -> None:
    out = copy_all_fields(Shape, Source(id="a", name="n", size=3), name="renamed")
    assert (out.id, out.name, out.size) == ("a", "renamed", 3)


def test_a_dataclass_takes_only_its_init_fields() -> None:
    assert declared_fields(Record) == ("id", "size")
    assert copy_all_fields(Record, Source(id="a", name="n", size=3)) == Record(id="a", size=3)


def test_an_override_the_shape_does_not_declare_is_refused() -> None:
    with pytest.raises(TypeError, match="Shape declares no field colour"):
        copy_all_fields(Shape, Source(id="a", name="n", size=3), colour="red")


def test_a_field_the_source_lacks_is_an_error_not_a_default() -> None:
    @dataclass
    class Narrow:
        id: str

    with pytest.raises(AttributeError, match="name"):
        copy_all_fields(Shape, Narrow(id="a"))


def test_only_dataclasses_models_and_messages_are_shapes() -> None:
    with pytest.raises(TypeError, match="neither a dataclass, a pydantic model nor a protobuf"):
        copy_all_fields(dict, Source(id="a", name="n", size=3))


def test_a_volume_reads_as_the_api_always_wrote_it() -> None:
    volume = Volume(
        id="vol-1",
        project_id="p",
        name="data",
        size_gib=10,
        volume_type="ssd",
        boot=False,
        status=VolumeStatus.IN_USE,
        created_at=NOW,
        updated_at=NOW,
        cluster_id="c-1",
        server_id="s-1",
        active_task_id="task-1",
    )
    out = copy_all_fields(VolumeOut, volume, task_id=volume.active_task_id)
    assert out == VolumeOut(
        id="vol-1",
        name="data",
        size_gib=10,
        volume_type="ssd",
        boot=False,
        status="in-use",
        cluster_id="c-1",
        server_id="s-1",
        task_id="task-1",
        created_at=NOW,
    )
