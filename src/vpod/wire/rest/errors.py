"""The body of every error answer of the controller's and the cloud's HTTP APIs
(``{"error": {"code", "message", "details"}}``, docs/rest-api.md): one shape, so a script
reads both APIs' errors alike; :func:`vpod.wire.errors.error_body` writes it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class FieldProblem(BaseModel):
    location: str = Field(description="Where: `body.size`, `query.gcd`, `header.x-vipu-user-id`.")
    message: str


class ErrorDetail(BaseModel):
    code: str = Field(description="The gRPC status name of the failure, e.g. `NOT_FOUND`.")
    message: str = Field(description="What went wrong and what to do, as one sentence.")
    details: list[FieldProblem] = Field(
        default_factory=list, description="For invalid requests: one entry per bad field."
    )


class ErrorResponse(BaseModel):
    """The body of every error response."""

    error: ErrorDetail


_COMPONENT = "#/components/schemas/{model}"


def documented_error(description: str) -> dict[str, Any]:
    """A route's ``responses=`` entry for an error status: the description, and the body as a
    reference to :class:`ErrorResponse` in the document's components.

    Given as ``{"model": ErrorResponse}`` instead, FastAPI builds a response field (a pydantic
    TypeAdapter) for every error status of every route, about 900 of them for the two APIs:
    a third of a controller's start-up CPU, for a document that says the same.
    :func:`error_components` puts the referenced schemas in the document, once."""
    return {
        "description": description,
        "content": {
            "application/json": {"schema": {"$ref": _COMPONENT.format(model="ErrorResponse")}}
        },
    }


def error_components() -> dict[str, Any]:
    """The schemas the error answers reference, by component name, as FastAPI lists a
    response model's (:class:`ErrorResponse` and the models inside it)."""
    schema = ErrorResponse.model_json_schema(ref_template=_COMPONENT, mode="serialization")
    nested: dict[str, Any] = schema.pop("$defs", {})
    return {**nested, "ErrorResponse": schema}
