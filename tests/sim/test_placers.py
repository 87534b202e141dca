"""The three placers on their own: where jobs go, and what the head may reserve."""

from __future__ import annotations

import pytest

from vpod.domain.errors import InvalidSpec
from vpod.sim.compare import pod_for_ipus
from vpod.sim.first_fit import FirstFitPlacer
from vpod.sim.jobs import Job, make_job
from vpod.sim.placers import BoundPlacer, CountReservation, NeverFitsError


def job(index: int, gpus: int, duration: float = 10) -> Job:
    return make_job(index, 0, duration, gpus)


def slots(mask: int) -> list[int]:
    return [s for s in range(mask.bit_length()) if mask >> s & 1]


def test_first_fit_takes_the_lowest_aligned_free_block() -> None:
    """After a 1-IPU job at slot 0, a 2-IPU job goes to 2-3 (aligned), not 1-2."""
    placer = FirstFitPlacer(pod_for_ipus(16))
    one, two, four = job(0, 1), job(1, 2), job(2, 4)
    for j in (one, two, four):
        grant = placer.propose(j)
        assert grant is not None
        placer.commit(j, grant)
    assert slots(placer.state) == [0, 2, 3, 4, 5, 6, 7]
    placer.release(two)
    grant = placer.propose(job(3, 1))
    assert grant is not None
    assert slots(grant) == [1]


def test_first_fit_finds_no_block_when_free_ipus_are_scattered() -> None:
    """Eight free IPUs in two separate halves of 8-blocks hold no 8-IPU job."""
    placer = FirstFitPlacer(pod_for_ipus(16))
    jobs = [job(i, 4) for i in range(4)]
    for j in jobs:
        grant = placer.propose(j)
        assert grant is not None
        placer.commit(j, grant)
    placer.release(jobs[0])
    placer.release(jobs[3])
    assert placer.free == 8
    assert placer.propose(job(9, 8)) is None


def test_first_fit_gives_a_64_job_a_whole_domain_and_128_two_domains() -> None:
    """In a pod of 256 IPUs (4 domains of 64), large jobs take the lowest whole free domains."""
    placer = FirstFitPlacer(pod_for_ipus(256))
    small = job(0, 1)
    grant = placer.propose(small)
    assert grant is not None
    placer.commit(small, grant)
    sixty_four = placer.propose(job(1, 64))
    assert sixty_four is not None
    assert slots(sixty_four) == list(range(64, 128))
    pair = placer.propose(job(2, 128))
    assert pair is not None
    assert slots(pair) == list(range(64, 192))


def test_first_fit_never_crosses_a_domain_boundary() -> None:
    """A 16-IPU block starts at a multiple of 16, so blocks stay inside one 64-IPU domain."""
    placer = FirstFitPlacer(pod_for_ipus(128))
    taken = []
    for index in range(8):
        j = job(index, 16)
        grant = placer.propose(j)
        assert grant is not None
        placer.commit(j, grant)
        taken.append(slots(grant)[0])
    assert taken == [0, 16, 32, 48, 64, 80, 96, 112]
    assert placer.propose(job(9, 1)) is None


def test_first_fit_reservation_names_the_ipus_the_head_will_get() -> None:
    """The head reserves the block first-fit would give it once enough jobs have ended."""
    placer = FirstFitPlacer(pod_for_ipus(16))
    running = [job(0, 4, 10), job(1, 4, 30), job(2, 4, 30), job(3, 4, 10)]
    for j in running:
        grant = placer.propose(j)
        assert grant is not None
        placer.commit(j, grant)
    placer.release(running[0])
    placer.release(running[3])
    reservation = placer.reserve(job(4, 8), [(30.0, running[1]), (30.0, running[2])])
    assert reservation.start == 30
    assert slots(reservation.slots) == list(range(8))
    assert not reservation.admits(job(5, 1), 1 << 0)
    assert reservation.admits(job(5, 1), 1 << 12)
    assert placer.free == 8, "a reservation changes nothing"


def test_bound_counts_ipus_and_ignores_where_they_are() -> None:
    """The bound places any job that fits the free count."""
    placer = BoundPlacer(16)
    for index in range(3):
        j = job(index, 4)
        grant = placer.propose(j)
        assert grant is not None
        placer.commit(j, grant)
    assert placer.propose(job(5, 8)) is None
    placer.release(job(0, 4))
    assert placer.propose(job(5, 8)) == 8


def test_bound_reservation_keeps_spare_ipus_for_backfill() -> None:
    """Spare IPUs at the reservation time are spent by jobs that outlive it, then refused."""
    placer = BoundPlacer(16)
    placer.free = 6
    reservation = placer.reserve(job(9, 8), [(10.0, job(0, 2)), (20.0, job(1, 8))])
    assert reservation == CountReservation(start=10.0, spare=0)
    later = placer.reserve(job(9, 8), [(10.0, job(0, 1)), (20.0, job(1, 8))])
    assert later == CountReservation(start=20.0, spare=7)
    assert later.admits(job(2, 4), 4)
    assert not later.admits(job(3, 4), 4)
    assert later.spare == 3


def test_bound_reservation_waits_for_every_job_ending_at_the_same_time() -> None:
    """Jobs ending together are released together: the reservation counts all of them."""
    placer = BoundPlacer(16)
    placer.free = 0
    reservation = placer.reserve(job(9, 8), [(5.0, job(0, 8)), (5.0, job(1, 8))])
    assert reservation == CountReservation(start=5.0, spare=8)


def test_a_head_that_never_fits_is_a_bug() -> None:
    """Reservations are only asked for jobs that fit an empty pod."""
    with pytest.raises(NeverFitsError):
        BoundPlacer(16).reserve(job(0, 64), [])


@pytest.mark.parametrize(
    ("ipus", "message"),
    [(6, "multiple of 4"), (0, "multiple of 4"), (100, "use a multiple of 64, e.g. 128")],
)
def test_pod_sizes_are_checked(ipus: int, message: str) -> None:
    """A pod is whole machines, and beyond one domain whole 64-IPU domains."""
    with pytest.raises(InvalidSpec, match=message):
        pod_for_ipus(ipus)


@pytest.mark.parametrize(("ipus", "domains"), [(4, 1), (16, 1), (64, 1), (128, 2), (256, 4)])
def test_pods_have_one_domain_up_to_64_ipus(ipus: int, domains: int) -> None:
    """N IPUs are N/4 machines, in one domain up to 64 IPUs, else domains of 16 machines."""
    pod = pod_for_ipus(ipus)
    assert (pod.num_ipus, len(pod.domains)) == (ipus, domains)
