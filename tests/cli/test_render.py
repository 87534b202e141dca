"""Plain tables and JSON that scripts can rely on."""

from __future__ import annotations

import pytest

from vpod.cli.render import cell, details, enum_label, message_dict, table
from vpod.wire import virmgrpc_pb2 as pb


def test_table_pads_columns_and_separates_them_with_bars() -> None:
    """Header, a rule, then rows; columns padded, ' | ' between, no trailing blanks."""
    text = table(("Name", "Size"), [["p1", 4], ["partition-two", 16]])
    assert text.splitlines() == [
        "Name          | Size",
        "--------------+-----",
        "p1            | 4",
        "partition-two | 16",
    ]


def test_empty_table_is_the_header_and_rule() -> None:
    """No rows: still the header, so scripts can recognise the output."""
    assert table(("A", "B"), []) == "A | B\n--+--"


@pytest.mark.parametrize(
    ("value", "text"),
    [("", "-"), (None, "-"), (True, "yes"), (False, "no"), ("a|b", "a/b"), ("x\n y", "x y")],
)
def test_cells_never_break_the_layout(value: object, text: str) -> None:
    """Empty cells print '-', separators and line breaks inside a cell are replaced."""
    assert cell(value) == text


def test_row_of_the_wrong_width_is_a_bug() -> None:
    """A row with a missing cell is refused rather than silently shifted."""
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        table(("A", "B", "C"), [["x", "y"]])


def test_details_align_values() -> None:
    """Key: value pairs line up."""
    assert details([("State", "ACTIVE"), ("Errors", "")]).splitlines() == [
        "State:  ACTIVE",
        "Errors: -",
    ]


def test_enum_labels_drop_prefix_and_undefined() -> None:
    assert enum_label("IRT_RINGSWNC", "IRT_") == "RINGSWNC"
    assert enum_label("GRT_UNDEFINED", "GRT_") == "-"


def test_json_keeps_proto_names_defaults_and_declared_order() -> None:
    """--json prints every field, with the .proto names, in the .proto order; maps sorted."""
    partition = pb.Partition(id="p1", ready_state=pb.PS_ACTIVE)
    partition.spec.num_gcds = 2
    data = message_dict(partition)
    assert list(data) == ["id", "spec", "ready_state", "ipuof_server_version"]
    assert data["ready_state"] == "PS_ACTIVE"
    assert data["spec"]["cluster_id"] == ""
    assert list(data["spec"])[:3] == ["cluster_id", "ipus", "ipulink_routing_type"]
    reply = pb.ListIPUAttributesReply()
    entry = reply.entries.add(agent="a")
    entry.ipu_attributes[10].attributes["x"] = "1"
    entry.ipu_attributes[2].attributes["y"] = "2"
    entries = message_dict(reply)["entries"]
    assert list(entries[0]["ipu_attributes"]) == ["2", "10"]
    assert entries[0]["ipu_attributes"]["10"] == {"attributes": {"x": "1"}}
