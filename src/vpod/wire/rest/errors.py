"""The body of every error answer of the controller's and the cloud's HTTP APIs
(``{"error": {"code", "message", "details"}}``, docs/rest-api.md): one shape, so a script
reads both APIs' errors alike; :func:`vpod.wire.errors.error_body` writes it."""

from __future__ import annotations

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
