"""Bounded quotes of what a caller sent, for error messages.

An error that repeats a field it was given grows with the field: a 10,000
character link id in an agent's refusal made the answer larger than gRPC's
metadata limit between controller and agent, and the caller got UNAVAILABLE
or RESOURCE_EXHAUSTED at random instead of INVALID_ARGUMENT. So a message
quotes input through :func:`excerpt` (its first characters and its length),
and every transport passes whatever it answers through :func:`bounded` as
a last guard, for the messages that quote input without it.
"""

from __future__ import annotations

import re

EXCERPT_CHARS = 60
"""How much of a value an error quotes."""
LONG_WORD_CHARS = 120
"""A run without spaces longer than this in a message is input quoted in full: excerpt it."""
MAX_MESSAGE_CHARS = 1000
"""No error message is longer than this (plus the note of how long it was)."""

_HUGE_BITS = 200
"""A whole number longer than this is quoted by its size: its digits would say nothing more."""

_LONG_WORD = re.compile(rf"\S{{{LONG_WORD_CHARS + 1},}}")


def excerpt(value: object, *, quote: bool = False, chars: int = EXCERPT_CHARS) -> str:
    """``value`` as text, cut to its first ``chars`` characters plus its length when longer.

    ``quote``: as ``repr`` would quote it (``'abc'``), the length outside the quotes.
    """
    if isinstance(value, int) and value.bit_length() > _HUGE_BITS:
        # str() of such a number is slow, and refused past 4,300 digits
        return f"a {'negative ' if value < 0 else ''}number of {value.bit_length()} bits"
    text = value if isinstance(value, str) else str(value)
    if len(text) <= chars:
        return repr(text) if quote else text
    head = repr(text[:chars]) if quote else text[:chars]
    return f"{head}... ({len(text)} characters)"


def bounded(message: str, *, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``message`` with every overlong word excerpted and at most ``limit`` characters."""
    if len(message) <= LONG_WORD_CHARS:
        return message
    message = _LONG_WORD.sub(lambda word: excerpt(word.group(0)), message)
    if len(message) <= limit:
        return message
    return f"{message[:limit]}... ({len(message)} characters)"


__all__ = ["EXCERPT_CHARS", "MAX_MESSAGE_CHARS", "bounded", "excerpt"]
