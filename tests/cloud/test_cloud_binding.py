"""The cloud's routes find the cloud they serve in the HTTP application's state, so a call
made in-process on the application (the console's login) finds it as a served one does."""

from __future__ import annotations

import asyncio

from fastapi import FastAPI
from starlette.requests import Request

from vpod.cloud.api.deps import cloud_of
from vpod.cloud.extension import CloudExtension
from vpod.controller.server import KeepsHttpState


def test_a_request_on_the_application_finds_the_cloud_kept_in_its_state() -> None:
    app = FastAPI()
    cloud = object()
    app.state.cloud = cloud
    request = Request({"type": "http", "app": app, "method": "GET", "path": "/", "headers": []})
    assert asyncio.run(cloud_of(request)) is cloud


def test_the_cloud_extension_is_given_the_applications_state() -> None:
    """``serve`` hands the application's state to the extensions that keep something there."""
    assert issubclass(CloudExtension, KeepsHttpState)
    state = FastAPI().state
    extension = CloudExtension.__new__(CloudExtension)
    extension.cloud = object()  # type: ignore[assignment]
    extension.keep_http_state(state)
    assert state.cloud is extension.cloud
