"""The scrape token ``vpod up`` writes for Prometheus: ``DATA_DIR/metrics.token``.

Under ``--secure`` the controller's ``/metrics`` answers only an
administrator or a bearer of this token (``vipu-server --metrics-token-file``),
since it names every tenant's partitions. ``vpod up`` makes the token once
(mode 0600) and passes the file to its controller at every start; Prometheus
reads the same file (``authorization: credentials_file:``, docs/security.md).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

TOKEN_FILE = "metrics.token"


def ensure_metrics_token(data_dir: Path) -> Path:
    """``DATA_DIR/metrics.token``, written with a new random token unless it holds one."""
    path = data_dir / TOKEN_FILE
    try:
        if path.read_text().strip():
            os.chmod(path, 0o600)
            return path
    except OSError:
        pass
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(secrets.token_urlsafe(32) + "\n")
    return path
