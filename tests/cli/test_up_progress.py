"""``vpod up``'s start-up progress: shown on a terminal, nothing added anywhere else."""

from __future__ import annotations

import io
import os
import pty
from collections.abc import Callable

from vpod.launch.up_progress import StartProgress


def test_nothing_is_added_when_stderr_is_not_a_terminal() -> None:
    stream = io.StringIO()
    progress = StartProgress(stream)
    progress.step("starting the controller")
    progress.registered(3, 16)
    progress.close()
    progress.close()
    assert stream.getvalue() == ""


def test_a_terminal_sees_each_step_and_the_spinner_is_cleared() -> None:
    text = _on_a_terminal(lambda progress: progress.registered(3, 16))
    assert "vpod up: starting the controller" in text  # each step at once, however short
    assert "vpod up: 3 of 16 machines registered with the controller" in text
    assert text.rstrip().endswith("\x1b[2K")  # the spinner's line is cleared at the end


def test_the_steps_name_the_program_starting() -> None:
    text = _on_a_terminal(lambda progress: progress.step("starting Slurm"), "vpod slurm up")
    assert "vpod slurm up: starting Slurm" in text


def _on_a_terminal(steps: Callable[[StartProgress], None], program: str = "vpod up") -> str:
    """What a terminal shows of a start that runs ``steps`` after starting the controller."""
    primary, secondary = pty.openpty()
    with os.fdopen(secondary, "w") as terminal:
        progress = StartProgress(terminal, program=program)
        progress.step("starting the controller")
        steps(progress)
        progress.close()
        progress.close()  # again: harmless
    shown = b""
    while chunk := _read(primary):
        shown += chunk
    os.close(primary)
    return shown.decode(errors="replace")


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # the terminal's other end is closed and drained
        return b""
