"""The one field every record of an API reply has: ``raw``, what it was read from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RawRecord:
    """A record read from an API's reply, keeping in ``raw`` the wire form it came from (the
    protobuf message over gRPC, the JSON object over HTTP) for tools that print it, such as
    ``--json``; not compared, not shown by ``repr``, and keyword-only, so a record's own
    fields keep their places."""

    raw: Any = field(default=None, repr=False, compare=False, kw_only=True)
