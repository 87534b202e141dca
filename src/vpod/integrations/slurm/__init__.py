"""Slurm integration: every job that asks for IPUs (``--gres=ipu:N``) gets its own V-IPU partition.

An edge: it reaches V-IPU only through its public API. See docs/slurm.md.
"""
