"""Error messages quote bounded excerpts of what they were given, on every edge."""

from __future__ import annotations

import json

import pytest

from vpod.client.errors import InvalidArgument as ClientInvalidArgument
from vpod.cloud.api.errors import cloud_error_response
from vpod.cloud.model import errors as cloud_errors
from vpod.controller import errors
from vpod.controller.transports.rest_errors import service_error_response
from vpod.domain.excerpts import EXCERPT_CHARS, MAX_MESSAGE_CHARS, bounded, excerpt

HUGE = "q" * 10_000


def test_an_excerpt_keeps_the_start_and_says_how_long_the_value_was() -> None:
    assert excerpt("ipulink3") == "ipulink3"
    assert excerpt("ipulink3", quote=True) == "'ipulink3'"
    shown = excerpt(HUGE, quote=True)
    assert shown == f"'{'q' * EXCERPT_CHARS}'... (10000 characters)"
    assert excerpt(12345678, chars=4) == "1234... (8 characters)"


@pytest.mark.parametrize(
    "message",
    [
        f"agent ag1 has no link {HUGE!r}: use one of ipulink0",
        " ".join(["word"] * 5_000),
        f"{HUGE} and {HUGE}",
    ],
)
def test_a_bounded_message_is_short_and_keeps_what_it_says(message: str) -> None:
    shown = bounded(message)
    assert len(shown) <= MAX_MESSAGE_CHARS + 40
    assert shown.startswith(message[:EXCERPT_CHARS])


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (2**70, "1180591620717411303424"),
        (10**5000, "a number of 16610 bits"),  # str() refuses it: past 4,300 digits
        (-(10**5000), "a negative number of 16610 bits"),
    ],
    ids=["2^70", "10^5000", "-10^5000"],
)
def test_a_whole_number_of_any_size_is_quoted_short(number: int, text: str) -> None:
    assert excerpt(number) == text


def test_a_short_message_is_left_alone() -> None:
    text = "partition p1 is ACTIVE: remove it first (vipu remove partition p1)"
    assert bounded(text) == text


def _message(body: bytes) -> str:
    return str(json.loads(body)["error"]["message"])


def test_every_edge_bounds_what_it_answers() -> None:
    long = f"no such partition {HUGE}"
    assert len(_message(service_error_response(errors.NotFound(long)).body)) < 200
    cloud = cloud_error_response(cloud_errors.NotFound(long))
    assert len(_message(cloud.body)) < 200
    assert len(str(ClientInvalidArgument(long))) < 200  # what the CLIs print
