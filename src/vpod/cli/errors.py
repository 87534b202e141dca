"""One-line errors and exit codes for the commands that run a body of their own (``vpod``'s
cloud commands, and the launchers of :mod:`vpod.launch`: ``vipu-server``, ``vpod up``).

Exit codes: 0 success, 1 a failure at run time (a port in use, a child process
that died, a :class:`vpod.client.VpodError` other than InvalidArgument, a
:class:`~vpod.domain.errors.Fault` of any other kind), 2 bad input (Click's usage
errors use 2 as well).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NoReturn

from vpod.client import VpodError
from vpod.client.command_line import os_error_text
from vpod.domain.errors import Fault, Kind
from vpod.domain.excerpts import bounded

from .exit_status import exit_code_of


class CliFailure(Exception):
    """A failure to report as one line, with an exit code."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def fail(message: str, exit_code: int = 1) -> NoReturn:
    raise CliFailure(message, exit_code)


def run_cli(body: Callable[[], object]) -> None:
    """Run ``body``; turn known failures into one line on stderr and an exit code."""
    try:
        body()
    except KeyboardInterrupt:
        sys.exit(130)
    except CliFailure as exc:
        _error(exc)
        sys.exit(exc.exit_code)
    except VpodError as exc:
        _error(exc)
        sys.exit(exit_code_of(exc))
    except Fault as exc:
        _error(exc)
        sys.exit(2 if exc.kind is Kind.INVALID_ARGUMENT else 1)
    except OSError as exc:
        _error(os_error_text(exc))
        sys.exit(1)


def _error(exc: BaseException | str) -> None:
    """One line on stderr, quoting at most an excerpt of what the command was given."""
    print(f"error: {bounded(str(exc))}", file=sys.stderr)
