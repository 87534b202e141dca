"""Routes that answer ``204 No Content`` (a removal, a reset): status and response class said once.

The handler returns None. The response class must be the plain ``Response``:
FastAPI's default JSON response would render None as ``null`` and announce
its length on an answer that has no body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import Response, status

from .rest_errors import error_responses

Handler = TypeVar("Handler", bound=Callable[..., Any])
RouteMethod = Callable[..., Callable[[Handler], Handler]]


def no_content(
    method: RouteMethod[Handler], path: str, *errors: int, tags: list[str] | None = None
) -> Callable[[Handler], Handler]:
    """``method`` (a router's ``delete`` or ``post``) at ``path``, answering 204 with no body;
    ``errors`` the error statuses it documents (:func:`.rest_errors.error_responses`)."""
    return method(
        path,
        tags=tags,
        status_code=status.HTTP_204_NO_CONTENT,
        response_class=Response,
        responses=error_responses(*errors),
    )
