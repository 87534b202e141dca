"""Output that people read and scripts parse: plain tables, key/value details, JSON.

Tables (decision, see docs/cli.md "Output"): one header line with the
column names the V-IPU spec gives, a rule, then one line per row; cells are
padded to the column width and separated by `` | ``; trailing blanks are
cut; an empty cell prints ``-``; ``|`` and line breaks inside a cell become
``/`` and a space, so ``line.split("|")`` always yields the columns. No
colour, no box drawing, nothing that depends on the terminal width: the
output is the same on a tty and in a pipe.

JSON (``--json``): the wire reply as proto3 JSON, field names exactly as in
the ``.proto`` (``ipulink_routing_type``), every field present even when it
holds its default, enums by name, timestamps in RFC 3339.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # protobuf is loaded by the gRPC commands that print its messages
    from google.protobuf.message import Message
    from google.protobuf.timestamp_pb2 import Timestamp

EMPTY_CELL = "-"


def cell(value: object) -> str:
    """One table cell: text without separators or line breaks; ``-`` when empty."""
    if value is None:
        return EMPTY_CELL
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = " ".join(str(value).split()).replace("|", "/")
    return text or EMPTY_CELL


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A fixed-width table with `` | `` between columns (see the module docstring)."""
    cells = [[cell(value) for value in row] for row in rows]
    for row in cells:
        if len(row) != len(headers):
            raise ValueError(f"a row has {len(row)} cells for {len(headers)} columns")
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(values: Sequence[str]) -> str:
        return " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    rule = "-+-".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(row) for row in cells)])


def details(pairs: Sequence[tuple[str, object]]) -> str:
    """``Key: value`` lines with the values aligned, for one object."""
    width = max((len(key) for key, _ in pairs), default=0) + 1
    return "\n".join(f"{key + ':':<{width}} {cell(value)}" for key, value in pairs)


def message_dict(message: Message) -> dict[str, Any]:
    """A reply as plain data, the way ``--json`` prints it: fields in ``.proto`` order."""
    from google.protobuf import json_format

    data: dict[str, Any] = json_format.MessageToDict(
        message,
        preserving_proto_field_name=True,
        always_print_fields_with_no_presence=True,
    )
    return _in_field_order(message, data)


def _map_key(key: object) -> tuple[int, int | str]:
    return (0, key) if isinstance(key, int) else (1, str(key))


def _in_field_order(message: Message, data: dict[str, Any]) -> dict[str, Any]:
    """``MessageToDict`` puts set fields before defaulted ones; restore the declared order.

    Map entries are sorted by key so the output does not depend on insertion order.
    """
    ordered: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        if field.name not in data:
            continue
        value = data[field.name]
        nested = field.message_type
        if nested is not None and nested.GetOptions().map_entry:
            mapping = getattr(message, field.name)
            has_messages = nested.fields_by_name["value"].message_type is not None
            value = {
                str(key): _in_field_order(mapping[key], value[str(key)])
                if has_messages and isinstance(value[str(key)], dict)
                else value[str(key)]
                for key in sorted(mapping, key=_map_key)
            }
        elif nested is not None and isinstance(value, list):
            items = getattr(message, field.name)
            value = [
                _in_field_order(m, v) if isinstance(v, dict) else v
                for m, v in zip(items, value, strict=True)
            ]
        elif nested is not None and isinstance(value, dict):
            value = _in_field_order(getattr(message, field.name), value)
        ordered[field.name] = value
    return ordered


def json_text(data: object) -> str:
    """Indented JSON text, keys in the order given."""
    return json.dumps(data, indent=2, ensure_ascii=False)


def enum_label(name: str, prefix: str) -> str:
    """``IRT_DNC`` -> ``DNC``; an ``..._UNDEFINED``/``..._UNSPECIFIED`` value -> ``-``."""
    short = name.removeprefix(prefix)
    if short in ("UNDEFINED", "UNSPECIFIED") or name.endswith(("_UNDEFINED", "_UNSPECIFIED")):
        return EMPTY_CELL
    return short


def timestamp_text(stamp: Timestamp) -> str:
    """RFC 3339 in UTC, or ``-`` for an unset timestamp."""
    if stamp.seconds == 0 and stamp.nanos == 0:
        return EMPTY_CELL
    return stamp.ToDatetime().strftime("%Y-%m-%dT%H:%M:%SZ")


def joined(values: Iterable[str]) -> str:
    """A list in one cell: comma-separated, ``-`` when empty."""
    return ",".join(values) or EMPTY_CELL
