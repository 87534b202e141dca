"""Where the console may send a browser after login: paths of its own site only.

``/login?next=...`` comes from a link anyone can craft, so the target must be
read exactly as the browser will read it (the WHATWG URL standard), not as
it looks: a browser strips leading and trailing C0 controls and spaces,
removes tabs and newlines anywhere, and takes a backslash for a slash in
``http``/``https`` URLs. ``/\\evil.example`` and ``/<TAB>/evil.example`` are
therefore ``//evil.example``: another site. :func:`same_site_path` applies
those rules first and accepts only what is then a path of this site; the
page's script does the same with the browser's own parser (``new URL``).
"""

from __future__ import annotations

_STRIPPED = "".join(chr(c) for c in range(0x21))
"""C0 controls and space: stripped from both ends of a URL."""
_REMOVED = str.maketrans("", "", "\t\n\r")
"""ASCII tab and newline: removed from anywhere in a URL."""


def same_site_path(target: str | None) -> str | None:
    """``target`` as the browser would navigate to it, if that is a path of this site
    (``/...``, not ``//...``); None for anything else (another host, a scheme, garbage)."""
    if not target:
        return None
    cleaned = target.strip(_STRIPPED).translate(_REMOVED).replace("\\", "/")
    if not cleaned.startswith("/") or cleaned.startswith("//"):
        return None
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in cleaned):
        return None
    return cleaned
