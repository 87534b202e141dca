"""The in-process harness: the controller's use-cases over SQLite, a fake clock and scripted
agents, with no process, socket or sleep (see docs/testing.md)."""
