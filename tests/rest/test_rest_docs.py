"""docs/rest-api.md stays complete: every endpoint, error code and metric is documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vpod.controller import metrics
from vpod.controller.transports.rest_errors import HTTP_STATUS

from .live import LivePod

DOC = Path(__file__).resolve().parents[2] / "docs" / "rest-api.md"


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text(encoding="utf-8")


def test_every_endpoint_is_documented(pod: LivePod, doc: str) -> None:
    """Each operation of /openapi.json appears in the doc as `METHOD /path`."""
    operations = [
        f"`{method.upper()} {path}`"
        for path, entries in pod.app.openapi()["paths"].items()
        for method in entries
    ]
    missing = [op for op in operations if op not in doc]
    assert not missing, f"add to docs/rest-api.md: {', '.join(missing)}"


def test_every_documented_endpoint_exists(pod: LivePod, doc: str) -> None:
    """No endpoint in the doc's headings is one the app does not serve."""
    served = {
        f"{method.upper()} {path}"
        for path, entries in pod.app.openapi()["paths"].items()
        for method in entries
    }
    headed = set(re.findall(r"`((?:GET|POST|PUT|DELETE|PATCH) /[^`]*)`", doc))
    # /openapi.json and /docs are served but not described in the document itself.
    assert headed - served == {"GET /openapi.json", "GET /docs"}
    with pod.client() as http:
        assert http.get("/openapi.json").status_code == 200
        assert http.get("/docs").status_code == 200


def test_every_error_code_is_documented(doc: str) -> None:
    for status, code in HTTP_STATUS.values():
        assert f"| {status} | `{code}` |" in doc


def test_every_metric_is_documented(doc: str) -> None:
    """The metric names listed in vpod.controller.metrics are the doc's table rows."""
    assert metrics.__doc__ is not None
    names = set(re.findall(r"^\s+(vpod_\w+)", metrics.__doc__, flags=re.MULTILINE))
    assert len(names) == 9
    assert {n for n in names if f"| `{n}` |" not in doc} == set()
