"""What every vpod program does with a command line it cannot parse: one short error.

click and argparse repeat a bad value in full ("Invalid value for '--size':
'xxx...' is not a valid integer", "invalid int value: 'xxx...'"), so a
10,000-character argument made a 10,000-character error. Every vpod program
parses its command line through :func:`run_click` (a :class:`BoundedCommand`, or a
group with it as a base, calls it when run as a console script) or
:class:`BoundedArgumentParser`,
which keep click's and argparse's answers (usage, exit status 2) but quote at
most an excerpt of what they were given (:func:`vpod.domain.excerpts.bounded`),
as every other error of vpod does.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import click

from vpod.domain.excerpts import bounded

if TYPE_CHECKING:
    from _typeshed import SupportsWrite


def bound_click_error(exc: click.ClickException) -> click.ClickException:
    """``exc`` with its message bounded (a group's help shown for no arguments is kept)."""
    if not isinstance(exc, click.exceptions.NoArgsIsHelpError):
        # A plain attribute that click's type hints mark final: format_message() reads it.
        exc.__dict__["message"] = bounded(exc.message)
    return exc


def os_error_text(exc: OSError) -> str:
    """``/path: No such file or directory`` (the file and the reason, as coreutils say it), or
    the reason alone (``No space left on device``) for an error about no file, rather than
    Python's ``[Errno 2] No such file or directory: '/path'``."""
    if not exc.strerror:
        return str(exc)
    paths = " -> ".join(str(p) for p in (exc.filename, exc.filename2) if p is not None)
    return f"{paths}: {exc.strerror}" if paths else exc.strerror


def run_click(
    command: click.Command, argv: Sequence[str] | None = None, prog_name: str | None = None
) -> int:
    """Run ``command`` as click's standalone mode does and return the exit status: usage
    errors shown with their usage line and status 2, their message bounded."""
    try:
        result = command.main(args=argv, prog_name=prog_name, standalone_mode=False)
    except click.ClickException as exc:
        bound_click_error(exc).show()
        return exc.exit_code
    except click.Abort:
        click.echo("Aborted!", err=True)
        return 1
    except OSError as exc:  # stdout itself, say (a full disk): one line, not a traceback
        name = prog_name or os.path.basename(sys.argv[0]) or command.name
        click.echo(f"{name}: error: {bounded(os_error_text(exc))}", err=True)
        return 1
    # standalone_mode=False hands back what ctx.exit() was given (--help, --version: 0)
    # or what the command returned; a command that returns nothing succeeded.
    return result if isinstance(result, int) and not isinstance(result, bool) else 0


class FiniteFloatRange(click.FloatRange):
    """click's ``FloatRange`` without ``nan`` and the infinities, which it lets through (no
    comparison with ``nan`` is true, and an open end takes ``inf``): a deadline or an
    interval of ``nan`` seconds is a usage error, not a setting."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{number} is not a finite number: give {self._describe_range()}", param, ctx)
        return number


class BoundedCommand(click.Command):
    """Called without arguments (a console script's entry), runs through :func:`run_click`;
    ``main()`` itself (as click's test runner calls it) is click's own. A group takes it as
    a base beside its own group class."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            return super().__call__(*args, **kwargs)
        sys.exit(run_click(self))


class BoundedArgumentParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose usage errors quote at most an excerpt, and
    whose help or usage that cannot be written is an error."""

    def error(self, message: str) -> NoReturn:
        super().error(bounded(message))

    def print_result(self, line: str) -> None:
        """Print ``line`` on standard output: a reader that left or a full disk ends the
        program as an unwritable help does, never in a traceback."""
        self._print_message(line + "\n", sys.stdout)

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        # argparse drops a failed write, so `--help > full-disk` exited 0 having printed
        # nothing: one line and status 1, as the click programs say it.
        if not message:
            return
        out = file or sys.stderr
        try:
            out.write(message)
            if isinstance(out, io.IOBase):
                out.flush()
        except BrokenPipeError:  # the reader left (`| head`): quietly, as click does
            if isinstance(out, io.IOBase):
                os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
            sys.exit(1)
        except OSError as exc:
            sys.stderr.write(f"{self.prog}: error: {bounded(os_error_text(exc))}\n")
            sys.exit(1)


__all__ = [
    "BoundedArgumentParser",
    "BoundedCommand",
    "bound_click_error",
    "run_click",
]
