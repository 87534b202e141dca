"""Secrets ``vpod up`` keeps in its data directory (each 0600, made once, reused).

- ``DATA_DIR/metrics.token``: under ``--secure`` the controller's ``/metrics``
  answers only an administrator or a bearer of this token
  (``vipu-server --metrics-token-file``), since it names every tenant's
  partitions; Prometheus reads the same file (``authorization:
  credentials_file:``, docs/security.md).
- ``DATA_DIR/agent.key``: the key its emulated agents answer to
  (``vipu-agent --key-file``; they tell the controller at registration), so
  an operator's tools can ask an agent directly what it holds.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

METRICS_TOKEN_FILE = "metrics.token"
AGENT_KEY_FILE = "agent.key"


def _ensure_secret(path: Path) -> Path:
    """``path``, written with a new random secret unless it holds one; mode 0600."""
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


def ensure_metrics_token(data_dir: Path) -> Path:
    return _ensure_secret(data_dir / METRICS_TOKEN_FILE)


def ensure_agent_key(data_dir: Path) -> Path:
    return _ensure_secret(data_dir / AGENT_KEY_FILE)
