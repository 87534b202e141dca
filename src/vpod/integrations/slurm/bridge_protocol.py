"""How the hooks talk to ``vpod-slurm-bridge``, and how they read a job's IPU request.

Standard library only: the hooks import this on every job's path.
Protocol: one JSON object per line each way over the bridge's Unix socket.
"""

from __future__ import annotations

import json
import socket
from typing import Any

BRIDGE_TIMEOUT_S = 600.0
"""Longest wait for the bridge's answer (its own create deadline is shorter)."""
GRES_PREFIXES = ("gres:ipu:", "gres/ipu:")
STATIC_GRES_PREFIXES = ("gres:vipu:", "gres/vipu:")


class BridgeUnreachable(Exception):
    """Nothing listens on the bridge's socket."""


def ask_bridge(socket_path: str, request: dict[str, Any]) -> dict[str, Any]:
    """One request to the bridge; BridgeUnreachable when nothing listens on its socket."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(BRIDGE_TIMEOUT_S)
        try:
            conn.connect(socket_path)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise BridgeUnreachable(f"{socket_path}: {exc.strerror}") from None
        conn.sendall(json.dumps(request).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = conn.recv(65536)
            if not chunk:
                # It may have done part of the work: fail (the job goes back) rather than redo it.
                return {"ok": False, "error": f"the bridge at {socket_path} closed the connection"}
            data += chunk
    answer: dict[str, Any] = json.loads(data)
    return answer


def ipus_in_tres(tres_per_node: str) -> int:
    """IPUs in a TresPerNode value (``gres:ipu:4``, ``gres/ipu:bow:4`` ...); 0 if none."""
    total = 0
    for item in tres_per_node.split(","):
        item = item.strip()
        if item.startswith(GRES_PREFIXES):
            count = item.rsplit(":", 1)[1]
            if count.isdigit() and item.count(":") <= 3:
                total += int(count)
    return total


def static_in_tres(tres_per_node: str) -> list[tuple[int, int]]:
    """(size, count) of each ``gres:vipu:<size>:<count>`` in a TresPerNode value (static mode);
    an untyped ``gres:vipu:N`` reads as size 0 (job_submit.lua refuses it)."""
    found = []
    for item in tres_per_node.split(","):
        item = item.strip()
        if item.startswith(STATIC_GRES_PREFIXES):
            parts = item[len(STATIC_GRES_PREFIXES[0]) :].split(":")
            if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
                found.append((int(parts[0]), int(parts[1])))
            elif len(parts) == 1 and parts[0].isdigit():
                found.append((0, int(parts[0])))
    return found
