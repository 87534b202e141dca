"""The one-line help a group lists for each of its commands, never cut mid-word.

click makes a command's short help from its help text by cutting it to 45
characters and adding ``...``, which leaves lines like ``Show partition ID:
its spec, status and IPUs, or its...`` in ``--help``. Every group of vpod's
CLIs is a :class:`FittingGroup`: a command added without a ``short_help``
gets one made of whole words: the first sentence of its help when it is
short enough, else that sentence's first clause (up to ``:``, ``;`` or
``(``) when that says enough, else the whole sentence (the help formatter
wraps it onto a second line rather than cutting it).
"""

from __future__ import annotations

import re

import click

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
"""The context settings of every command and group: ``-h`` too, and help up to 100 columns."""

FITS = 60
"""Characters a short help may take on one line of an 80-column ``--help``."""
_MIN_CLAUSE = 16
"""A first clause shorter than this says too little to stand alone."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_CLAUSE_END = re.compile(r":\s|;\s|\s\(|\s—\s")


def fitting_short_help(help_text: str) -> str:
    """The short help made of whole words of ``help_text`` (see the module's docstring)."""
    paragraph = help_text.strip().split("\n\n", 1)[0]
    first = " ".join(paragraph.replace("\b", "").split())
    sentence = _SENTENCE_END.split(first, maxsplit=1)[0]
    if len(sentence) <= FITS:
        return sentence.removesuffix(".")
    clause = _CLAUSE_END.split(sentence, maxsplit=1)[0]
    if _MIN_CLAUSE <= len(clause) <= FITS:
        return clause.rstrip(",")
    return sentence.removesuffix(".")


def fit(command: click.Command) -> click.Command:
    """Give ``command`` a short help of whole words unless it has one."""
    if not command.short_help and command.help:
        command.short_help = fitting_short_help(command.help)
    return command


class FittingGroup(click.Group):
    """A group whose commands' short helps are whole words (see the module's docstring)."""

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        super().add_command(fit(cmd), name)
