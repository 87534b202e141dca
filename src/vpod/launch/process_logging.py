"""How a server process logs: ``--log-level`` and, for ``vipu-server``, a rotated file.

``vipu-server``, ``vipu-agent`` and ``vpod-gpu-agent`` log the same way (one format, to
stderr unless given a file); each chooses its default level.
"""

from __future__ import annotations

import logging
import logging.handlers
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

LOG_LEVELS = ("debug", "info", "warning", "error")


def log_level_option(default: str) -> Callable[[F], F]:
    """``--log-level`` (any case), ``default`` shown in ``--help``."""
    return click.option(
        "--log-level",
        default=default,
        show_default=True,
        type=click.Choice(LOG_LEVELS, case_sensitive=False),
    )


def log_file_options(command: F) -> F:
    """``--log-file`` and how it rotates (``--log-max-bytes``, ``--log-backups``)."""
    for option in reversed(
        (
            click.option(
                "--log-file",
                type=click.Path(dir_okay=False, path_type=Path),
                default=None,
                help="Log to FILE instead of stderr, rotated by size (--log-max-bytes,"
                " --log-backups).",
            ),
            click.option(
                "--log-max-bytes",
                type=click.IntRange(4096, 1 << 40),
                default=10 << 20,
                show_default=True,
                help="Rotate --log-file at this size.",
            ),
            click.option(
                "--log-backups",
                type=click.IntRange(1, 1000),
                default=5,
                show_default=True,
                help="Rotated files of --log-file to keep (FILE.1 ... FILE.N).",
            ),
        )
    ):
        command = option(command)
    return command


def configure_logging(
    level: str, log_file: Path | None = None, max_bytes: int = 0, backups: int = 0
) -> None:
    """Log to stderr, or to ``log_file`` rotated at ``max_bytes`` keeping ``backups`` old ones."""
    handler: logging.Handler = logging.StreamHandler(sys.stderr)
    if log_file is not None:
        handler = logging.handlers.RotatingFileHandler(
            log_file, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
        )
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=[handler],
    )
