"""Scheduler integrations (Slurm, Kubernetes)."""
