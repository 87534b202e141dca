"""Ids of agents, clusters, allocations, partitions and users."""

import pytest

from vpod.domain.errors import InvalidSpec
from vpod.domain.naming import ID_KINDS, check_id, check_unique_ids, is_valid_id, natural_key


@pytest.mark.parametrize(
    "value",
    ["a", "0", "p1", "slurm_12345", "ipu-job.7", "A" * 63, "x-", "9_.-z"],
)
def test_valid_ids_are_returned_unchanged(value: str) -> None:
    """An id of 1-63 letters, digits, '.', '_', '-' starting alphanumeric is accepted as is."""
    assert check_id("partition", value) == value
    assert is_valid_id(value)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "is empty"),
        ("A" * 64, "64 characters long"),
        ("-p", "is not valid"),
        (".p", "is not valid"),
        ("_p", "is not valid"),
        ("my job", "is not valid"),
        ("p/1", "is not valid"),
        ("p1\n", "is not valid"),
        ("café", "is not valid"),
    ],
)
def test_invalid_ids_are_refused_with_the_rule(value: str, reason: str) -> None:
    """The message names the kind, says what is wrong and states the rule."""
    with pytest.raises(InvalidSpec, match=reason) as caught:
        check_id("allocation", value)
    message = str(caught.value)
    assert message.startswith("allocation id")
    assert "1 to 63 characters" in message
    assert not is_valid_id(value)


@pytest.mark.parametrize("kind", ID_KINDS)
def test_every_kind_is_named_in_the_message(kind: str) -> None:
    with pytest.raises(InvalidSpec, match=f"^{kind} id"):
        check_id(kind, "bad id")


def test_non_string_ids_are_refused() -> None:
    with pytest.raises(InvalidSpec, match="must be a string, not int"):
        check_id("user", 7)  # type: ignore[arg-type]


def test_unique_ids_refuse_a_repeat() -> None:
    """A list of ids may not name the same entity twice."""
    assert check_unique_ids("agent", ["a1", "a2"]) == ("a1", "a2")
    with pytest.raises(InvalidSpec, match="agent 'a1' is listed twice"):
        check_unique_ids("agent", ["a1", "a2", "a1"])


def test_ids_sort_with_their_numbers_by_value() -> None:
    """ag2 before ag10 (not as text), digits before letters, ties kept in a total order."""
    ids = ["ag10", "ag2", "ag1", "ag11", "cag1", "Ag3", "pod128", "pod16", "a", "a1", "ag01"]
    assert sorted(ids, key=natural_key) == [
        "a",
        "a1",
        "ag01",
        "ag1",
        "ag2",
        "Ag3",
        "ag10",
        "ag11",
        "cag1",
        "pod16",
        "pod128",
    ]
    assert natural_key("ag01") != natural_key("ag1")
