"""Processes started by ``vpod up`` die with it, even when it is killed with SIGKILL.

``vpod up`` puts its own pid in ``VPOD_PARENT_PID`` when it starts
``vipu-server`` and ``vipu-agent``. Their entry points call
:func:`die_with_parent` first thing: it asks Linux (``prctl(PR_SET_PDEATHSIG)``,
through ctypes) to send this process SIGTERM when the process that started it
ends, and checks the parent is still the one named, since it may have died
before the request was made. Without the variable (a process started by hand
or by systemd) nothing changes.

Programs that are not vpod's (munged, slurmctld, slurmd, MariaDB, slurmdbd
under ``vpod slurm up``) cannot call that, so a supervisor starts them with
:func:`dying_with_this_process` as ``preexec_fn``: the same request, made in
the child between fork and exec. Each runs in the foreground (``-F``, ``-D``)
so the process signalled is the daemon itself, not a parent that forked it
and left. Linux sends the signal when the *thread* that started the child
ends, so supervisors start their children from their main thread.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
from collections.abc import Callable

PARENT_PID_ENV = "VPOD_PARENT_PID"
_PR_SET_PDEATHSIG = 1

log = logging.getLogger("vpod.cli")


def die_with_parent() -> bool:
    """Ask for SIGTERM when the parent named in the environment dies; True if armed."""
    raw = os.environ.pop(PARENT_PID_ENV, "")  # our own children have another parent
    if not raw.isdigit() or not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        log.warning("prctl(PR_SET_PDEATHSIG) failed: %s", os.strerror(ctypes.get_errno()))
        return False
    if os.getppid() != int(raw):  # the parent died before prctl: nobody would signal us
        os.kill(os.getpid(), signal.SIGTERM)
    return True


def dying_with_this_process(sig: int = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn`` for ``subprocess.Popen``: the child gets ``sig`` when this process
    ends, however it ends (SIGKILL included). Linux only; elsewhere it does nothing."""
    if not sys.platform.startswith("linux"):
        return lambda: None
    parent = os.getpid()
    libc = ctypes.CDLL(None, use_errno=True)  # loaded here: the child only calls into it

    def arm() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: nobody would signal us
            os.kill(os.getpid(), sig)

    return arm
