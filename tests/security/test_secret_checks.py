"""Concurrent checks of one secret cost one scrypt: the 16 machines of an agent process
register together with one token, a client opens with many calls at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from vpod.controller.agent_grpc import GrpcAgentGateway
from vpod.controller.app import build_controller
from vpod.controller.caller import SYSTEM
from vpod.controller.credentials import SecretChecks, hash_key
from vpod.controller.settings import Settings


def test_concurrent_checks_of_one_pair_share_one_scrypt(scrypt_checks: list[str]) -> None:
    stored = hash_key("right")

    async def scenario() -> tuple[list[bool], list[bool], bool]:
        checks = SecretChecks()
        right = await asyncio.gather(*(checks.matches("right", stored) for _ in range(16)))
        wrong = await asyncio.gather(*(checks.matches("wrong", stored) for _ in range(16)))
        return right, wrong, await checks.matches("right", stored)

    right, wrong, again = asyncio.run(scenario())
    assert right == [True] * 16
    assert again
    assert wrong == [False] * 16
    assert scrypt_checks == ["right", "wrong"]  # one check per pair; a match is remembered


def test_a_caller_giving_up_does_not_cancel_the_check_others_wait_for(
    scrypt_checks: list[str],
) -> None:
    stored = hash_key("right")

    async def scenario() -> bool:
        checks = SecretChecks()
        impatient = asyncio.create_task(checks.matches("right", stored))
        patient = asyncio.create_task(checks.matches("right", stored))
        await asyncio.sleep(0)
        impatient.cancel()
        return await patient

    assert asyncio.run(scenario())
    assert scrypt_checks == ["right"]


def test_a_remembered_secret_is_checked_again_against_a_new_hash(scrypt_checks: list[str]) -> None:
    """What is remembered is the hash a secret matched: a new key (a new hash) for the same
    secret text, or another secret against the old hash, is checked afresh."""
    first, second = hash_key("right"), hash_key("right")

    async def scenario() -> list[bool]:
        checks = SecretChecks()
        return [
            await checks.matches("right", first),
            await checks.matches("right", second),
            await checks.matches("other", second),
            await checks.matches("right", first),
        ]

    assert asyncio.run(scenario()) == [True, True, False, True]
    assert scrypt_checks == ["right", "right", "other", "right"]


def test_many_remembered_secrets_forget_the_oldest(scrypt_checks: list[str]) -> None:
    hashes = {f"s{i}": hash_key(f"s{i}") for i in range(3)}

    async def scenario() -> None:
        checks = SecretChecks(capacity=2)
        for secret, stored in hashes.items():
            assert await checks.matches(secret, stored)
        assert await checks.matches("s2", hashes["s2"])  # remembered
        assert await checks.matches("s0", hashes["s0"])  # forgotten: checked again

    asyncio.run(scenario())
    assert scrypt_checks == ["s0", "s1", "s2", "s0"]


def test_machines_registering_together_with_one_token_cost_one_check(
    tmp_path: Path, scrypt_checks: list[str]
) -> None:
    controller = build_controller(Settings(data_dir=tmp_path, secure=True), GrpcAgentGateway())

    async def scenario() -> list[str | None]:
        issued = await controller.agent_tokens.issue(SYSTEM, "rack 1")
        tokens = controller.agent_tokens
        return await asyncio.gather(*(tokens.token_of(issued.token) for _ in range(16)))

    try:
        ids = asyncio.run(scenario())
    finally:
        controller.close()
    assert len(set(ids)) == 1
    assert ids[0] is not None
    assert len(scrypt_checks) == 1


def test_a_made_up_agent_token_id_costs_no_check(tmp_path: Path, scrypt_checks: list[str]) -> None:
    """Token ids are 64 random bits: refusing an unknown one at once hides nothing, and a
    slow check per made-up token would let anyone spend the controller's CPU."""
    controller = build_controller(Settings(data_dir=tmp_path, secure=True), GrpcAgentGateway())

    async def scenario() -> str | None:
        return await controller.agent_tokens.token_of("vat_0123456789abcdef." + "s" * 43)

    try:
        assert asyncio.run(scenario()) is None
    finally:
        controller.close()
    assert scrypt_checks == []
