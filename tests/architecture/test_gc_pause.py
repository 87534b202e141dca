"""vpod's processes start with the cyclic garbage collector paused (``vpod.gc_pause``), and a
library user's collector is left as it was found."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator

import pytest

from vpod.gc_pause import CollectorPause, collector_paused

ENTRY_MODULES = ("vpod.launch.server_main", "vpod.launch.agent_main", "vpod.launch.gpu_agent_main")


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    gc.unfreeze()
    (gc.enable if was else gc.disable)()


def test_a_pause_ends_with_what_exists_frozen_and_the_collector_running() -> None:
    gc.unfreeze()
    pause = CollectorPause()
    assert not gc.isenabled()
    kept = [[] for _ in range(1000)]
    pause.end()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(kept)
    pause.end()  # a second end changes nothing
    assert gc.isenabled()


def test_a_pause_inside_another_leaves_the_outer_one_in_charge() -> None:
    outer = CollectorPause()
    with collector_paused():
        pass
    assert not gc.isenabled(), "the inner pause resumed the collector of the outer one"
    outer.end()
    assert gc.isenabled()


def test_a_pause_over_a_collector_already_off_leaves_it_off() -> None:
    gc.disable()
    with collector_paused() as pause:
        pause.end()
    assert not gc.isenabled()


def test_a_failing_block_still_resumes_the_collector() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("start-up failed")
    assert gc.isenabled()


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _collections_importing_the_entry_modules(paused: bool) -> tuple[int, bool, bool]:
    """Collections run while importing the entry modules, whether the collector runs
    afterwards, and whether anything was frozen; ``paused=False``: with the pause undone."""
    undo = (
        ""
        if paused
        else "import contextlib\n"
        "vpod.gc_pause.collector_paused = contextlib.nullcontext\n"
        "vpod.gc_pause.CollectorPause.__init__ = lambda self: setattr(self, '_paused', False)\n"
    )
    out = _run(
        "import gc, vpod.gc_pause\n" + undo + "runs = []\n"
        "gc.callbacks.append(lambda phase, info: phase == 'stop' and runs.append(1))\n"
        f"for name in {ENTRY_MODULES!r}:\n"
        "    __import__(name)\n"
        "print(len(runs), gc.isenabled(), gc.get_freeze_count() > 0)"
    )
    runs, enabled, frozen = out.split()
    return int(runs), enabled == "True", frozen == "True"


def test_importing_an_entry_module_pauses_the_collector_and_leaves_it_on() -> None:
    """What a process imports at its start is not walked again and again by the collector
    (what runs is the module code after the imports); a library user who imports the
    module keeps a running collector."""
    runs, enabled, frozen = _collections_importing_the_entry_modules(paused=True)
    runs_unpaused, _, _ = _collections_importing_the_entry_modules(paused=False)
    assert runs_unpaused >= 20, f"only {runs_unpaused} collections without the pause"
    assert runs * 5 <= runs_unpaused, f"{runs} collections paused, {runs_unpaused} not"
    assert enabled, "the collector stays off after the imports"
    assert frozen, "nothing the imports made was frozen"


def test_importing_an_entry_module_leaves_a_stopped_collector_stopped() -> None:
    out = _run(
        "import gc\n"
        "gc.disable()\n"
        f"for name in {ENTRY_MODULES!r}:\n"
        "    __import__(name)\n"
        "print(gc.isenabled())"
    )
    assert out == "False"
