"""How the CLIs report failures: one line and an exit status.

Calling the controller (channels, credentials, deadlines and the diagnosis of
gRPC failures) is :mod:`vpod.client`'s work; the CLIs map its exception tree
to exit codes once, here (docs/cli.md "Exit status"), for `vipu` and
`vipu-admin` (:mod:`.vipu_group`) and the `vpod` commands (:mod:`.errors`):

- :class:`~vpod.client.InvalidArgument` (the server's INVALID_ARGUMENT, bad
  settings, unreadable TLS files): exit 2, like a usage error, since the fix
  is in the command line;
- every other :class:`~vpod.client.VpodError`: exit 1 with its sentence.
"""

from __future__ import annotations

from vpod.client import InvalidArgument, VpodError
from vpod.client.errors import one_line

EXIT_FAILURE = 1
EXIT_USAGE = 2

__all__ = ["EXIT_FAILURE", "EXIT_USAGE", "CliError", "exit_code_of", "one_line"]


class CliError(Exception):
    """A failure the CLI itself finds, reported as one line on stderr with its exit status."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def exit_code_of(error: VpodError) -> int:
    """2 when the fix is in the command line or the settings, else 1."""
    return EXIT_USAGE if isinstance(error, InvalidArgument) else EXIT_FAILURE
