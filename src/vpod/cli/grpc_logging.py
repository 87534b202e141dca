"""Keep gRPC core's own log lines off the CLIs' stderr.

gRPC's C core logs some connection failures itself (``I... Handshake
failed ...``), which would break the CLIs' promise of one error line on
stderr. It reads ``GRPC_VERBOSITY`` once, when ``grpc`` is first imported,
so the CLI entry modules import this module before anything that imports
``grpc`` (``tests/cli/test_console_scripts.py`` checks the result). A
``GRPC_VERBOSITY`` set by the user still wins, for troubleshooting.
"""

from __future__ import annotations

import os

os.environ.setdefault("GRPC_VERBOSITY", "NONE")
