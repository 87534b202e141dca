"""Host-wide claims on `vpod up`'s loopback blocks (``vpod.launch.address_claims``).

Claims are ``flock``s: two descriptors of one file conflict even inside one
process, so two ``AddressClaims`` here stand for two ``vpod up`` processes.
"""

from __future__ import annotations

import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from vpod.cli.errors import CliFailure
from vpod.launch.address_claims import AddressClaims, block_of
from vpod.launch.up_state import choose_address_base, claim_block

BIN = Path(sys.executable).parent


def test_a_held_block_is_refused_to_another_and_free_again_once_released(tmp_path: Path) -> None:
    with closing(AddressClaims(tmp_path)) as first, closing(AddressClaims(tmp_path)) as second:
        assert first.take("127.40", "/data/one")
        assert first.take("127.40", "/data/one")  # holding it twice is holding it
        assert not second.take("127.40", "/data/two")
        assert "/data/one" in second.holder("127.40")
        first.release("127.40")
        assert second.take("127.40", "/data/two")


def test_choosing_passes_over_a_claimed_block_and_a_restart_names_the_holder(
    tmp_path: Path,
) -> None:
    claims_dir = tmp_path / "claims"
    data_dir = tmp_path / "pod"
    with closing(AddressClaims(claims_dir)) as probe:
        wanted = choose_address_base(data_dir, 4, probe)
    with closing(AddressClaims(claims_dir)) as other, closing(AddressClaims(claims_dir)) as mine:
        assert other.take(block_of(wanted), "/data/other")
        chosen = choose_address_base(data_dir, 4, mine)
        assert block_of(chosen) != block_of(wanted)
        with pytest.raises(CliFailure) as refused:
            claim_block(mine, wanted, data_dir, "stop it")
    assert "held by another vpod up (pid" in str(refused.value)
    assert "/data/other" in str(refused.value)


def test_a_claims_directory_that_cannot_be_used_is_one_clear_line(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "claims"
    not_a_directory.write_text("")
    with closing(AddressClaims(not_a_directory)) as claims, pytest.raises(CliFailure) as refused:
        choose_address_base(tmp_path / "pod", 4, claims)
    assert "cannot claim the emulated machines' block" in str(refused.value)
    assert str(not_a_directory) in str(refused.value)


@pytest.mark.parametrize(
    "base", ["../../etc", "", "127.1", "2130706433000", "::1", "10.0.0.1", "127.255.255.250"]
)
def test_vpod_up_refuses_an_address_base_it_cannot_use_in_one_line(
    tmp_path: Path, base: str
) -> None:
    """Not an IPv4 address, or machines beyond loopback: exit 2 before anything starts."""
    done = subprocess.run(
        [str(BIN / "vpod"), "up", "--data-dir", str(tmp_path / "pod"), "--address-base", base],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "--address-base" in done.stderr
    assert not (tmp_path / "pod" / "up.json").exists()
