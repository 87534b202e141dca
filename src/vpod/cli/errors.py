"""One-line errors and exit codes for the long-running commands (``vipu-server``, ``vpod up``).

Exit codes: 0 success, 1 a failure at run time (a port in use, a child process
that died, a :class:`vpod.client.VpodError` other than InvalidArgument), 2 bad
input (Click's usage errors use 2 as well).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NoReturn

from vpod.client import VpodError
from vpod.cloud.model import errors as cloud_errors
from vpod.controller import errors as service_errors
from vpod.domain.errors import DomainError

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
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except VpodError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exit_code_of(exc))
    except (service_errors.InvalidArgument, cloud_errors.InvalidArgument, DomainError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except (OSError, service_errors.ServiceError, cloud_errors.CloudError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
