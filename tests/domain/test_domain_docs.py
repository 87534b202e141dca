"""docs/domain.md stays in step with the code: its generated sections are recomputed here."""

import re
from pathlib import Path

import pytest

from vpod.domain.partition_states import Event, render_transition_table
from vpod.domain.routing import (
    SUPPORTED_SYNC_TYPES,
    GwRouting,
    IpuLinkRouting,
    SyncType,
    default_gw_routing,
    default_ipulink_routing,
)
from vpod.domain.sizes import SEGMENT_SIZES
from vpod.domain.topology import GwTopology, IldTopology

DOC = Path(__file__).resolve().parents[2] / "docs" / "domain.md"


def section(name: str) -> str:
    match = re.search(
        rf"<!-- generated:{name} -->\n(.*?)<!-- /generated:{name} -->", DOC.read_text(), re.S
    )
    assert match is not None, f"docs/domain.md has no generated:{name} section"
    return match.group(1)


def default_routing_section() -> str:
    lines = ["| segment size | torus domain | mesh domain |", "|---|---|---|"]
    for size in SEGMENT_SIZES:
        torus = default_ipulink_routing(size, IldTopology.TORUS).name
        mesh = default_ipulink_routing(size, IldTopology.MESH).name
        lines.append(f"| {size} | {torus} | {mesh} |")
    lines += ["", "| GW topology | GW routing |", "|---|---|"]
    lines += [f"| {t.value} | {default_gw_routing(t).name} |" for t in GwTopology]
    return "\n".join(lines) + "\n"


def cli_spellings_section() -> str:
    lines = ["| CLI string | member | wire number | accepted |", "|---|---|---|---|"]
    members: list[IpuLinkRouting | GwRouting | SyncType] = [
        *IpuLinkRouting,
        *GwRouting,
        *SyncType,
    ]
    for member in members:
        refused = isinstance(member, SyncType) and member not in SUPPORTED_SYNC_TYPES
        accepted = "no: unsupported" if refused else "yes"
        lines.append(
            f"| `{member.cli_name}` | `{type(member).__name__}.{member.name}` | {member.value}"
            f" | {accepted} |"
        )
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("name", "render"),
    [
        ("transition-table", render_transition_table),
        ("default-routing", default_routing_section),
        ("cli-spellings", cli_spellings_section),
    ],
)
def test_generated_sections_match_the_code(name: str, render: object) -> None:
    """Regenerate the section from the code; the document must hold exactly that text."""
    assert section(name) == render()  # type: ignore[operator]


def test_every_event_is_explained() -> None:
    """Each event appears in the prose, not only in the generated table."""
    prose = re.sub(r"<!-- generated:.*?<!-- /generated:[^>]*-->", "", DOC.read_text(), flags=re.S)
    missing = [e.value for e in Event if f"`{e.value}`" not in prose]
    assert missing == []
