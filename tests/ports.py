"""Ports for test servers: free now, and not one the kernel hands to outgoing connections.

A port from ``bind(0)`` lies in the kernel's ephemeral range, where any outgoing
connection on the host (other test workers make thousands) may take it between
the choice and the server's bind, or answer on a port a test expects closed.
Below that range only another listener can, and the random pick makes that rare.
The local Slurm picks its daemons' ports the same way.
"""

from __future__ import annotations

from vpod.integrations.slurm.local_cluster import free_port

closed_port = free_port
"""A port a test expects nothing to answer on: the same choice."""

__all__ = ["closed_port", "free_port"]
