"""Schemathesis over the cloud API's own OpenAPI document, against a live secure cloud.

Every operation under ``/api/cloud/v1`` gets generated requests (positive:
valid by the schema; negative: invalid), sent over real HTTP with the token
the route wants (the cloud administrator's for ``/admin``, a project's for
the rest). No answer may be a server error; each must have a documented
status and body. The same two checks as the V-IPU API's run are left out
(see ``tests/rest/test_openapi_fuzz.py``): the schema does not encode every
domain rule, and authentication is covered by the refusal tests. A third,
``negative_data_rejection``, is left out too: the generator counts a query
parameter given twice (the last one wins) and the bearer token the test
always sends as schema violations, which are not errors of the API.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import (
    ignored_auth,
    negative_data_rejection,
    not_a_server_error,
    positive_data_acceptance,
)
from schemathesis.core.result import Err

from .live import LiveCloud, start_cloud, stop_cloud

pytestmark = pytest.mark.fuzz

MAX_EXAMPLES = 20


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCloud]:
    live = start_cloud(Path(tmp_path_factory.mktemp("cloud-fuzz")))
    try:
        yield live
    finally:
        stop_cloud(live)


def _fuzz(
    operation: Any, mode: schemathesis.GenerationMode, url: str, headers: dict[str, str]
) -> Any:
    """A hypothesis test sending generated requests for ``operation`` with ``headers``."""

    @settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def answers_well(case: schemathesis.Case[Any]) -> None:
        case.call_and_validate(
            base_url=url,
            headers=headers,
            additional_checks=[not_a_server_error],
            excluded_checks=[ignored_auth, positive_data_acceptance, negative_data_rejection],
        )

    return answers_well


@pytest.mark.slow
@pytest.mark.parametrize(
    "mode", [schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE]
)
def test_generated_cloud_requests_never_get_a_5xx(
    fuzzed: LiveCloud, mode: schemathesis.GenerationMode
) -> None:
    """Generated requests to every cloud operation get documented, non-5xx answers."""
    schema = schemathesis.openapi.from_url(f"{fuzzed.url}/api/cloud/v1/openapi.json")
    tenant = {"Authorization": f"Bearer {fuzzed.project('fuzzed')}"}
    admin = {"Authorization": f"Bearer {fuzzed.admin_token}"}
    failures: list[str] = []
    tried: list[str] = []
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            failures.append(f"the OpenAPI document is invalid: {result.err()}")
            continue
        operation = result.ok()
        tried.append(operation.label)
        headers = admin if operation.path.startswith("/api/cloud/v1/admin") else tenant

        answers_well = _fuzz(operation, mode, fuzzed.url, headers)
        try:
            answers_well()
        except Unsatisfiable:
            assert mode is schemathesis.GenerationMode.NEGATIVE, operation.label
        except Exception as exc:
            failures.append(f"{operation.label}: {exc}")
    assert len(tried) >= 30, tried
    assert not failures, "\n\n".join(failures)[:20000]
