"""A V-IPU user's shapes: creating one (its access key shown once), and the user."""

from __future__ import annotations

from pydantic import BaseModel, Field

from .fields import MAX_LIST, AllocationId, StrictBody, UserId


class CreateUserBody(StrictBody):
    id: UserId
    allocation_ids: list[AllocationId] = Field(default_factory=list, max_length=MAX_LIST)
    admin: bool = False


class UserOut(BaseModel):
    id: str
    allocation_ids: list[str]
    admin: bool


class UserList(BaseModel):
    users: list[UserOut]


class CreatedUser(BaseModel):
    user: UserOut
    access_key: str = Field(
        description="Shown once: the controller keeps only a hash. Put it in vipu-cli.hcl."
    )
