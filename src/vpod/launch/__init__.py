"""The server side's launchers and composition roots: ``vipu-server``, ``vipu-agent``,
``vpod-gpu-agent``, ``vpod up`` and ``vpod slurm up``.

They build and supervise the controller, the cloud, agents and Slurm; the client command
lines (:mod:`vpod.cli`) never import them (``vpod up`` names its launcher lazily).
"""
