"""What ``vpod up`` (or ``vpod slurm up``) is doing while it starts, for a person at a
terminal.

A large pod takes a while to come up (a pod1024's 256 machines register in
about ten seconds on two cores, a pod4096 takes a minute): on a terminal,
stderr shows a spinner with the step under way and how many machines have
registered, and clears it before the ready lines. Elsewhere (a script, a
service's log) nothing is added: the output stays the ready lines alone.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.live import Live
    from rich.spinner import Spinner


class StartProgress:
    """The step under way, shown on ``stream`` only when it is a terminal, after ``program``
    (the command starting: ``vpod up``, ``vpod slurm up``)."""

    def __init__(self, stream: TextIO | None = None, *, program: str = "vpod up") -> None:
        stream = stream if stream is not None else sys.stderr
        self._program = program
        self._live: Live | None = None
        self._spinner: Spinner | None = None
        if stream.isatty():
            # Imported only for a terminal: a script's `vpod up` does not load rich.
            from rich.console import Console
            from rich.live import Live
            from rich.spinner import Spinner

            self._spinner = Spinner("dots", text=f"{program}: starting", style="green")
            console = Console(file=stream, highlight=False)
            self._live = Live(self._spinner, console=console, transient=True)
            self._live.start()

    def step(self, text: str) -> None:
        if self._live is not None and self._spinner is not None:
            self._spinner.update(text=f"{self._program}: {text}")
            self._live.refresh()  # at once: a short step must show too

    def registered(self, count: int, wanted: int) -> None:
        """``count`` of the ``wanted`` machines have registered with the controller."""
        self.step(f"{count} of {wanted} machines registered with the controller")

    def close(self) -> None:
        """Clear the spinner (before the ready lines, or on failure); again is harmless."""
        if self._live is not None:
            self._live.stop()
            self._live = None
