"""Trace-replay simulator over the real placement engine."""
