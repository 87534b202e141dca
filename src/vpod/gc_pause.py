"""The cyclic garbage collector paused while a process starts.

Importing vpod's server side builds a few hundred thousand objects that live as long as the
process (pydantic shapes, FastAPI routes, SQLAlchemy tables, gRPC descriptors), and almost
none of them are garbage. With the collector running, every few hundred allocations it walks
the young ones again, and ever more of them as they age: a sixth to a fifth of the CPU of
importing the controller and the cloud. So vpod's entry points pause it while they import
and build, then *freeze* what start-up made (the collector never walks it again, which also
keeps later full collections of a serving controller small) and let it run as usual.

Only what a process runs at its start is paused, never a library user's code: the pauses are
scoped (:func:`collector_paused`) or end at a server's ready line, and a pause inside another
one leaves the outer one in charge.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


class CollectorPause:
    """The collector paused from now until :meth:`end`; a pause inside another one is a
    no-op (the outer one resumes it)."""

    def __init__(self) -> None:
        self._paused = gc.isenabled()
        gc.disable()

    def end(self) -> None:
        """Freeze what exists now and run the collector again (once; later calls do nothing)."""
        if self._paused:
            self._paused = False
            gc.freeze()
            gc.enable()


@contextmanager
def collector_paused() -> Iterator[CollectorPause]:
    """The collector paused for the ``with`` block, or until the block ends the pause."""
    pause = CollectorPause()
    try:
        yield pause
    finally:
        pause.end()
