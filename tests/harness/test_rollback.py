"""Rollback: an agent that fails mid-operation leaves no IPU held and the store as it was.

A 16-IPU partition spans all four machines; the scripted gateway makes one of
them fail its part (unreachable, refusing, or answering after the deadline
having acted). The create must release the partition on every agent, delete
the reservation, name the agent and the cause, and leave the IPUs free for
the next request. Removes and resets that fail keep the partition, in ERROR
with the cause, until a forced remove or a reset that works.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from vpod.agent.errors import AgentError, Reason
from vpod.controller import errors
from vpod.controller.caller import SYSTEM
from vpod.domain.partition_states import OperationState, ReadyState
from vpod.store.records import PartitionRecord

from .gateway import refused, unavailable
from .pod import Pod

pytestmark = pytest.mark.anyio


def _refusing(agent_id: str) -> AgentError:
    return refused(agent_id, f"agent {agent_id} refused: scripted", Reason.LINK_DOWN)


async def _partitions(pod: Pod) -> list[PartitionRecord]:
    ctx = pod.controller.ctx
    return await ctx.db(ctx.db.store.list_partitions)


@pytest.mark.parametrize(
    ("failing", "fail", "words"),
    [
        ("ag3", unavailable, "agent ag3 at harness is unavailable"),
        ("ag4", _refusing, "agent ag4 refused: scripted"),
    ],
    ids=["unavailable", "refused"],
)
async def test_a_failed_configure_releases_every_agent_and_leaves_the_store_as_it_was(
    pod: Pod, failing: str, fail: Callable[[str], AgentError], words: str
) -> None:
    bystander = await pod.create("bystander", 1)  # on ag1: "doomed" goes to ag3 and ag4
    before = await _partitions(pod)
    pod.gateway.on("configure", failing, fail=fail)
    with pytest.raises(errors.Unavailable) as failed:
        await pod.create("doomed", 8)
    message = str(failed.value)
    assert "partition doomed could not be created and its IPUs were released" in message
    assert words in message
    # Every agent the partition reached was told to release it, the failed one included.
    released = {c.agent_id for c in pod.gateway.calls_of("release", "doomed")}
    configured = {c.agent_id for c in pod.gateway.calls_of("configure", "doomed")}
    assert failing in configured
    assert released == configured
    assert pod.gateway.holders_of("doomed") == []
    assert await _partitions(pod) == before  # the bystander's row unchanged, version too
    assert pod.gateway.holders_of("bystander") != []
    outcomes = {e.outcome: e.detail for e in await pod.audit("create_partition", "doomed")}
    assert sorted(outcomes) == ["failed", "reserved"]
    assert failing in outcomes["failed"]
    # The IPUs are free again: the same request now succeeds on them.
    again = await pod.create("doomed", 8)
    assert again.state.ready is ReadyState.ACTIVE
    assert not set(again.slots) & set(bystander.slots)
    assert pod.disagreements() == []


async def test_a_configure_that_answers_after_the_deadline_is_undone_too(pod: Pod) -> None:
    """ag2 configures its part but answers past the agent timeout: the create fails with a
    timeout naming ag2, and ag2's part, which did land, is released with the rest."""
    timeout = pod.controller.settings.agent_timeout_s
    pod.gateway.on("configure", "ag2", slow_s=timeout * 2, acts=True)
    before = pod.clock.monotonic()
    with pytest.raises(errors.Unavailable, match="agent ag2 at harness did not answer in time"):
        await pod.create("late", 16)
    assert pod.clock.monotonic() - before == pytest.approx(timeout)  # one deadline, not two
    assert pod.gateway.holders_of("late") == []
    assert await pod.record("late") is None
    assert pod.disagreements() == []


async def test_a_slow_agent_within_the_deadline_does_not_fail_the_create(pod: Pod) -> None:
    timeout = pod.controller.settings.agent_timeout_s
    slow = pod.gateway.on("configure", "ag1", slow_s=timeout * 0.9)
    record = await pod.create("patient", 16)
    assert slow.matched == 1
    assert record.state.ready is ReadyState.ACTIVE
    assert pod.clock.monotonic() == pytest.approx(timeout * 0.9)
    assert pod.gateway.calls_of("release") == []
    assert sorted(pod.gateway.holders_of("patient")) == list(pod.agent_ids)


async def test_concurrent_failures_on_several_agents_are_all_named(pod: Pod) -> None:
    pod.gateway.on("configure", "ag1", fail=unavailable)
    pod.gateway.on("configure", "ag4", fail=_refusing)
    with pytest.raises(errors.Unavailable) as failed:
        await pod.create("twice", 16)
    message = str(failed.value)
    assert message.index("ag1") < message.index("ag4")  # in agent order
    assert pod.gateway.holders_of("twice") == []
    assert await _partitions(pod) == []


async def test_a_failed_remove_keeps_the_partition_in_error_until_forced(pod: Pod) -> None:
    await pod.create("stays", 8)
    pod.gateway.on("release", "ag2", fail=unavailable)
    with pytest.raises(errors.Unavailable, match=r"could not be removed: .*ag2.*use --force"):
        await pod.controller.partitions.remove(SYSTEM, "stays")
    record = await pod.record("stays")
    assert record is not None
    assert (record.state.ready, record.state.operation) == (
        ReadyState.ERROR,
        OperationState.FAILED,
    )
    assert any("ag2" in e for e in record.errors)
    pod.gateway.on("release", "ag2", fail=unavailable)
    await pod.controller.partitions.remove(SYSTEM, "stays", force=True)
    assert await pod.record("stays") is None
    removal = {e.outcome: e.detail for e in await pod.audit("remove_partition", "stays")}
    assert sorted(removal) == ["failed", "ok"]
    assert removal["ok"].startswith("ignored: ")
    # The forced remove gave the IPUs back even though ag2 never released its part; the
    # leader's reconciliation takes it off ag2 once ag2 answers.
    assert pod.gateway.holders_of("stays") == ["ag2"]
    assert pod.disagreements() == ["agent ag2 holds stays, which the store does not know"]
    failed = await pod.controller.fleet.reconcile_all(await pod.controller.inventory.list_agents())
    assert failed == {}
    assert pod.gateway.holders_of("stays") == []
    assert (await pod.create("next", 16)).state.ready is ReadyState.ACTIVE
    assert pod.disagreements() == []


async def test_a_failed_reset_leaves_error_with_the_cause_and_a_later_reset_recovers(
    pod: Pod,
) -> None:
    await pod.create("r", 4)
    (agent,) = pod.gateway.holders_of("r")
    pod.gateway.on("reset", agent, fail=unavailable)
    with pytest.raises(errors.Unavailable, match=f"partition r could not be reset: .*{agent}"):
        await pod.controller.partitions.reset(SYSTEM, "r")
    record = await pod.record("r")
    assert record is not None
    assert record.state.ready is ReadyState.ERROR
    await pod.controller.partitions.reset(SYSTEM, "r")
    record = await pod.record("r")
    assert record is not None
    assert (record.state.ready, record.state.operation) == (
        ReadyState.ACTIVE,
        OperationState.IDLE,
    )
    assert record.errors == ()
    assert pod.disagreements() == []
