"""The one mapping from service errors to HTTP statuses, and the error body."""

from __future__ import annotations

import inspect
import json

import pytest

from vpod.controller import errors
from vpod.controller.transports.rest_errors import (
    HTTP_STATUS,
    FieldProblem,
    service_error_response,
    status_of,
    validation_message,
)

EXPECTED = {
    errors.InvalidArgument: (400, "INVALID_ARGUMENT"),
    errors.NotFound: (404, "NOT_FOUND"),
    errors.AlreadyExists: (409, "ALREADY_EXISTS"),
    errors.NoCapacity: (409, "RESOURCE_EXHAUSTED"),
    errors.FailedPrecondition: (409, "FAILED_PRECONDITION"),
    errors.Unauthenticated: (401, "UNAUTHENTICATED"),
    errors.PermissionDenied: (403, "PERMISSION_DENIED"),
    errors.Unavailable: (503, "UNAVAILABLE"),
}


def service_error_classes() -> list[type[errors.ServiceError]]:
    return [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, errors.ServiceError) and cls is not errors.ServiceError
    ]


def test_every_service_error_has_a_status() -> None:
    """Each class of the exception tree is mapped, so none can become a 500."""
    assert set(service_error_classes()) == set(HTTP_STATUS)


@pytest.mark.parametrize(("kind", "expected"), list(EXPECTED.items()))
def test_status_and_code_of_each_error(
    kind: type[errors.ServiceError], expected: tuple[int, str]
) -> None:
    """The statuses are those of the table in vpod.controller.errors (409 for no capacity)."""
    assert status_of(kind("x")) == expected


def test_a_subclass_maps_like_its_parent() -> None:
    class PartitionGone(errors.NotFound):
        pass

    assert status_of(PartitionGone("gone")) == (404, "NOT_FOUND")


def test_the_body_carries_code_and_message() -> None:
    response = service_error_response(errors.NotFound("partition p1 does not exist"))
    assert response.status_code == 404
    assert json.loads(bytes(response.body)) == {
        "error": {"code": "NOT_FOUND", "message": "partition p1 does not exist", "details": []}
    }


def test_unauthenticated_carries_a_bearer_challenge() -> None:
    response = service_error_response(errors.Unauthenticated("who are you"))
    assert response.headers["www-authenticate"] == 'Bearer realm="vpod"'


def test_validation_message_names_the_first_five_problems() -> None:
    problems = [FieldProblem(location=f"body.f{i}", message="bad") for i in range(7)]
    message = validation_message(problems)
    assert message.startswith("invalid request: body.f0: bad; body.f1: bad")
    assert "body.f4: bad (and 2 more)" in message
    assert "body.f5" not in message
