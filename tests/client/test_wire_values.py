"""What the client's gRPC calls send is checked before a request is built: a number beyond
its field or a time outside years 1 to 9999 in UTC raises ``OutOfRange`` (an
``InvalidArgument``, and a ``ValueError`` as Python's own refusals are) naming the argument,
and nothing is sent. Protobuf's own refusal of a value no check caught is turned into the same
error by the methods' one wrapper (``api_methods``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from vpod.client import InvalidArgument, OutOfRange, VpodError
from vpod.client import admin_calls as admin
from vpod.client import user_calls as user
from vpod.client.admin_records import Fault, FaultKind
from vpod.client.api_methods import Blocking, api_call
from vpod.client.grpc_transport import Rpc
from vpod.client.wire_values import UINT32_MAX, UINT64_MAX, stamp, whole
from vpod.wire import virmgrpc_pb2 as pb

BAD_NUMBERS = [-1, UINT32_MAX + 1, 2**70, 10**5000]

# (what is built, the argument that names the value) for every number a builder sends
NUMBER_BUILDERS: list[tuple[str, Callable[[int], object], str]] = [
    ("create_partition size", lambda n: user.create_partition("p", n), "size"),
    ("create_partition num_gcds", lambda n: user.create_partition("p", 4, num_gcds=n), "num_gcds"),
    (
        "create_partition num_replicas",
        lambda n: user.create_partition("p", 4, num_replicas=n),
        "num_replicas",
    ),
    ("create_partition num_ilds", lambda n: user.create_partition("p", 4, num_ilds=n), "num_ilds"),
    ("ipuof_config gcd", lambda n: user.ipuof_config("p", gcd=n), "gcd"),
    ("create_agent port", lambda n: admin.create_agent("a", "h", n), "port"),
    ("create_cluster num_ilds", lambda n: admin.create_cluster("c", ["a"], num_ilds=n), "num_ilds"),
    ("create_allocation size", lambda n: admin.create_allocation("a", "c", size=n), "size"),
    ("list_events limit", lambda n: admin.list_events(limit=n), "limit"),
    (
        "inject_fault delay_ms",
        lambda n: admin.inject_fault("a", Fault(FaultKind.AGENT_SLOW, delay_ms=n)),
        "delay_ms",
    ),
    (
        "clear_fault device_id",
        lambda n: admin.clear_fault("a", Fault(FaultKind.IPU, device_id=n)),
        "device_id",
    ),
]


@pytest.mark.parametrize("value", BAD_NUMBERS, ids=["-1", "uint32+1", "2^70", "10^5000"])
@pytest.mark.parametrize(
    ("build", "name"),
    [(b, n) for _, b, n in NUMBER_BUILDERS],
    ids=[i for i, _, _ in NUMBER_BUILDERS],
)
def test_a_number_beyond_its_field_is_out_of_range(
    build: Callable[[int], object], name: str, value: int
) -> None:
    with pytest.raises(OutOfRange) as refused:
        build(value)
    assert isinstance(refused.value, InvalidArgument)
    assert isinstance(refused.value, ValueError)
    message = str(refused.value)
    assert message.startswith(f"{name} ")
    assert "out of range: use 0 to" in message
    assert len(message) < 200


@pytest.mark.parametrize(
    ("build", "name"),
    [(b, n) for _, b, n in NUMBER_BUILDERS],
    ids=[i for i, _, _ in NUMBER_BUILDERS],
)
def test_numbers_at_the_edges_of_the_field_are_sent(
    build: Callable[[int], object], name: str
) -> None:
    for value in (0, 1, UINT32_MAX):
        assert isinstance(build(value), Rpc), (name, value)


def test_the_event_pages_take_64_bit_ids() -> None:
    request = admin.events_request({"before_id": UINT64_MAX})
    assert request.before_id == UINT64_MAX
    with pytest.raises(OutOfRange, match="before_id"):
        admin.events_request({"before_id": UINT64_MAX + 1})


BEFORE_YEAR_1 = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14)))
AFTER_YEAR_9999 = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-14)))


@pytest.mark.parametrize("moment", [BEFORE_YEAR_1, AFTER_YEAR_9999], ids=["year0", "year10000"])
@pytest.mark.parametrize("name", ["since", "until"])
def test_an_event_filter_time_outside_years_1_to_9999_is_out_of_range(
    name: str, moment: datetime
) -> None:
    with pytest.raises(OutOfRange, match=rf"^{name} \(.*\) is out of range: give a time between"):
        admin.list_events(**{name: moment})  # type: ignore[misc]


@pytest.mark.parametrize(
    "moment",
    [datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)],
    ids=["first", "last"],
)
def test_the_first_and_last_moments_are_sent(moment: datetime) -> None:
    sent = stamp(moment, "since").ToDatetime(UTC)
    assert sent == moment.replace(tzinfo=UTC)


def test_whole_returns_what_it_was_given() -> None:
    assert whole(7, "size") == 7
    assert whole(UINT64_MAX, "before_id", maximum=UINT64_MAX) == UINT64_MAX


class _Never:
    """A transport that fails the test if anything reaches it."""

    def invoke(self, call: Any) -> Any:
        raise AssertionError(f"sent: {call}")

    def close(self) -> None:
        pass


def _unchecked(size: int) -> Rpc[str]:
    # a builder that forgot its checks: protobuf itself refuses the value
    request = pb.CreatePartitionRequest(requirements=pb.PartitionRequirements(id="p", size=size))
    return user.USER_SERVICE.call("CreatePartition", request, lambda reply: "p")


class _Client(Blocking):
    create = api_call(_unchecked)

    def __init__(self) -> None:
        self._transport = _Never()


def test_a_value_protobuf_refuses_is_out_of_range_and_nothing_is_sent() -> None:
    with pytest.raises(OutOfRange, match=r"^cannot send create: Value out of range") as refused:
        _Client().create(2**70)
    assert isinstance(refused.value, VpodError)
