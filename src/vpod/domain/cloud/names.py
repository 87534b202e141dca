"""What tenants may name their clusters, volumes, keypairs and datasets. Pure."""

from __future__ import annotations

import re

NAME_RULE = "use 3 to 63 characters: a letter or digit first, then letters, digits, '.', '_' or '-'"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{2,62}")


def is_valid_name(name: str) -> bool:
    """Whether ``name`` follows :data:`NAME_RULE` (it is then a safe file name too)."""
    return _NAME.fullmatch(name) is not None


__all__ = ["NAME_RULE", "is_valid_name"]
