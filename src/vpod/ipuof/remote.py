"""Starting an instance on another host over ``ssh``, as poprun does over MPI.

The instance's command line and environment travel as arguments of a small
POSIX ``sh`` script (:data:`WRAPPER`), every word quoted with
:func:`shlex.quote`, so no host name, variable or argument is ever read as
shell syntax on either side (host names are checked in :mod:`.hosts`, and
ssh is given ``--`` before the host). The script:

- goes to the launcher's working directory if the host has it (else the
  home directory, as ``mpirun`` does);
- runs the command with the instance's variables (``env NAME=VALUE ...``)
  and its standard input closed;
- watches its own standard input, which is the launcher's pipe into ssh:
  a line names a signal to send the instance (Ctrl-C and SIGTERM are
  forwarded that way), and the end of it (the launcher closed it, died, or
  the connection dropped) sends SIGTERM; so no instance outlives its
  launcher, which a plain ``ssh host cmd`` does not ensure (without a
  terminal, sshd signals nothing when the client goes away);
- exits with the instance's exit status, which ssh passes on.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

WRAPPER = """\
cd -- "$1" 2>/dev/null || cd
shift
trap 'stopping=1' INT TERM HUP
exec 3<&0
{ trap '' INT TERM HUP
  while IFS= read -r sig; do
    case "$sig" in INT|TERM|HUP) kill -s "$sig" 0;; esac
  done
  kill -s TERM 0; } <&3 >/dev/null 2>&1 &
watcher=$!
env "$@" </dev/null 3<&-
status=$?
kill -s KILL "$watcher" 2>/dev/null
exit "$status"
"""
DEFAULT_OPTIONS = ("BatchMode=yes",)
"""ssh never prompts: its standard input is the launcher's, not a terminal's."""
PROBE_TIMEOUT_S = 60.0


def ssh_argv(
    ssh_command: Sequence[str],
    options: Sequence[str],
    host: str,
    remote_command: str,
) -> list[str]:
    """``ssh [-o OPTION]... -T -- HOST REMOTE_COMMAND``; the caller's options come before
    the defaults, so theirs win (ssh takes the first value of an option it is given)."""
    opts = [word for option in (*options, *DEFAULT_OPTIONS) for word in ("-o", option)]
    return [*ssh_command, *opts, "-T", "--", host, remote_command]


def remote_command(command: Sequence[str], env: Mapping[str, str], cwd: str) -> str:
    """The line the remote login shell runs: :data:`WRAPPER` with the working directory, the
    instance's variables and its command as quoted arguments."""
    words = [
        "sh",
        "-c",
        WRAPPER,
        "vpod-run-instance",
        cwd,
        "--",
        *(f"{name}={value}" for name, value in env.items()),
        *command,
    ]
    return "exec " + " ".join(shlex.quote(word) for word in words)


def unreachable(
    ssh_command: Sequence[str], options: Sequence[str], hosts: Sequence[str]
) -> dict[str, str]:
    """Host -> why ``ssh HOST true`` failed, for the hosts that cannot be reached (tried at
    once, before anything is started)."""

    def probe(host: str) -> str | None:
        argv = ssh_argv(ssh_command, options, host, "true")
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"no answer within {PROBE_TIMEOUT_S:g} s"
        except OSError as exc:
            return f"cannot start {argv[0]}: {exc.strerror}"
        if done.returncode == 0:
            return None
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else f"{argv[0]} exited with status {done.returncode}"

    if not hosts:
        return {}
    with ThreadPoolExecutor(max_workers=min(16, len(hosts))) as pool:
        results = dict(zip(hosts, pool.map(probe, hosts), strict=True))
    return {host: why for host, why in results.items() if why is not None}


__all__ = ["WRAPPER", "remote_command", "ssh_argv", "unreachable"]
