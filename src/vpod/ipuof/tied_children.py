"""Children that end with the process that started them, however it ends.

``vpod-run`` forwards Ctrl-C and SIGTERM to its instances and stops them when
it exits, but a launcher killed with SIGKILL (or by the OOM killer) runs no
code at all. So each child asks Linux, between fork and exec, for SIGKILL
when its parent dies (``prctl(PR_SET_PDEATHSIG)``, the request
``vpod up`` makes for its daemons, see ``vpod/launch/parent_death.py``; that
module is not importable from this edge, hence the few lines here). SIGKILL,
not SIGTERM: the launcher that would have escalated a SIGTERM the instance
ignores is gone, and an instance that outlived it would hold the partition's
IPUs with nobody left to stop it.

Each child also runs in its own session, so it leads a process group: the
launcher signals the whole group (the instance's own children too), and a
Ctrl-C typed in the terminal reaches only the launcher, which forwards it.

Linux sends the signal when the *thread* that started the child ends, so
start children from the main thread. Elsewhere than Linux only the process
group is made.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

_PR_SET_PDEATHSIG = 1


def _dying_with(parent: int) -> Callable[[], None]:
    """A ``preexec_fn``: SIGKILL this child when ``parent`` (the caller) ends."""
    libc = ctypes.CDLL(None, use_errno=True)  # loaded before the fork: the child only calls it

    def arm() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: nobody would signal us
            os.kill(os.getpid(), signal.SIGKILL)

    return arm


def start_tied(argv: Sequence[str], **popen: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, **popen)`` in a new process group that Linux kills when
    this process ends (see the module's docstring). ``OSError`` when it cannot start."""
    setup = _dying_with(os.getpid()) if sys.platform.startswith("linux") else None
    return subprocess.Popen(list(argv), start_new_session=True, preexec_fn=setup, **popen)
