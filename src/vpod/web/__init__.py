"""The web console: a live pod map for operators and a console for tenants.

An edge like the command lines: the browser calls the public REST API (with
the session the console keeps, see :mod:`.sessions`); the Python side only
serves the pages and their assets and turns a session into credentials.
``WebConsole()`` is handed to :func:`vpod.controller.server.serve` as an
extension by ``vipu-server`` (and so by ``vpod up``). docs/web.md.
"""

from .extension import WebConsole, WebExtension

__all__ = ["WebConsole", "WebExtension"]
