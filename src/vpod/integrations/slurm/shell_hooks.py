"""The hooks Slurm runs for every job, as bash scripts: no Python start on a job's path.

A Python hook costs 25-30 ms of CPU to start even when it imports only the
standard library, and Slurm runs three per job (PrologSlurmctld,
EpilogSlurmctld, TaskProlog); on a busy head node those starts, not V-IPU,
set how fast a queue of short jobs drains. These scripts use bash builtins
only (``/dev/tcp``, ``read``, ``[[ =~ ]]``), plus ``squeue`` in the
TaskProlog, and do what :mod:`.hooks` does:

- ``prolog`` / ``epilog`` read the bridge's ``PORT TOKEN`` file (beside its
  socket, 0600, SlurmUser's) and send the job to ``vpod-slurm-bridge`` on
  127.0.0.1 with the token; when the bridge is not there they ``exec`` the
  Python hook, which does the work itself;
- ``task-prolog`` reads the settings' simple ``key = value`` lines and the
  job's GRES with ``squeue`` and prints the ``export IPUOF_VIPU_API_*`` lines;
  a settings file it cannot read that way goes to the Python hook.

``vpod slurm hooks DIR --config FILE`` writes them (slurm.conf names a
program without arguments, so the settings path is written into each).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

HOOK_FILES = {"prolog": "vpod-slurm-prolog", "epilog": "vpod-slurm-epilog"}
TASK_PROLOG_FILE = "task-prolog"
TASK_PROLOG_PROGRAM = "vpod-slurm-task-prolog"
BRIDGE_TIMEOUT_S = 600
"""As the Python hooks: the longest wait for the bridge's answer."""

_HEAD = """#!/bin/bash
# {program} for Slurm's {role}, written by `vpod slurm hooks`: {what}
# Bash builtins only, so a job never waits for a Python start; without the
# bridge it runs {fallback}, which does the work itself.
config={config}
fallback={fallback}
prog={program}
fall_back() {{ exec "$fallback" --config "$config"; }}
if [[ ${{1-}} == -h || ${{1-}} == --help ]]; then
  printf 'usage: %s (Slurm runs it; settings: %s)\\n' "$0" "$config"; exit 0
fi
if ! [[ ${{SLURM_JOB_ID-}} =~ ^[0-9]+$ ]]; then
  echo "$prog: SLURM_JOB_ID is not set: Slurm runs this program" >&2; exit 2
fi
[[ -r $config ]] || fall_back
"""

_BRIDGE_BODY = r"""partition=${SLURM_JOB_PARTITION-}
[[ $partition =~ ^[A-Za-z0-9_.-]*$ ]] || fall_back
socket=/run/vpod-slurm/bridge.sock
key='^[[:space:]]*socket[[:space:]]*='
quoted='=[[:space:]]*"([^"\\]*)"[[:space:]]*(#.*)?$'
while IFS= read -r line; do
  [[ $line =~ ^[[:space:]]*\[ ]] && break
  if [[ $line =~ $key ]]; then
    [[ $line =~ $quoted ]] || fall_back
    socket=${BASH_REMATCH[1]}
  fi
done < "$config"
{ read -r port token < "$socket.tcp"; } 2>/dev/null || fall_back
[[ $port =~ ^[0-9]+$ && $token =~ ^[0-9a-f]+$ ]] || fall_back
{ exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || fall_back
uid=${SLURM_JOB_UID-}
[[ $uid =~ ^[0-9]*$ ]] || uid=
printf '{"op": "%s", "job_id": "%s", "partition": "%s", "uid": "%s", "token": "%s"}\n' \
  "$op" "$SLURM_JOB_ID" "$partition" "$uid" "$token" >&3
if ! IFS= read -r -t @TIMEOUT@ answer <&3; then
  echo "$prog: job $SLURM_JOB_ID: no answer from vpod-slurm-bridge on port $port" >&2; exit 1
fi
exec 3<&-
text=$answer
said='"(message|error)": "(.*)"\}$'
[[ $answer =~ $said ]] && text=${BASH_REMATCH[2]}
echo "$prog: job $SLURM_JOB_ID: $text" >&2
[[ $answer == '{"ok": true,'* ]]
"""

_TASK_BODY = r"""declare -A v=([partition_prefix]=slurm_ [ipuof_api_host]=localhost
  [ipuof_api_port]=8090 [ipuof_timeout_s]=120 [slurm_bin_dir]= [slurm_conf]=
  [credentials_dir]=/run/vpod-slurm/jobs [mode]=dynamic)
simple='^[[:space:]]*([A-Za-z0-9_]+)[[:space:]]*=[[:space:]]*("([^"\\]*)"|([0-9]+(\.[0-9]+)?))[[:space:]]*$'
while IFS= read -r line; do
  [[ $line =~ ^[[:space:]]*(#.*)?$ ]] && continue
  [[ $line =~ ^[[:space:]]*\[ ]] && break
  [[ $line =~ $simple ]] || fall_back
  v[${BASH_REMATCH[1]}]=${BASH_REMATCH[3]}${BASH_REMATCH[4]}
done < "$config"
ipus=0
partition=${v[partition_prefix]}$SLURM_JOB_ID
device=
if [[ ${v[mode]} != dynamic ]]; then
  # static / reconfigurable: the bridge wrote what the job holds (the job user's file).
  assigned=${v[credentials_dir]}/$partition.assigned
  if [[ -r $assigned ]]; then
    while IFS='=' read -r name value; do
      [[ $value =~ ^[A-Za-z0-9_.-]+$ ]] || continue
      case $name in
        partition) partition=$value ;;
        ipus) [[ $value =~ ^[0-9]+$ ]] && ipus=$value ;;
        device) [[ $value =~ ^[0-9]+$ ]] && device=$value ;;
      esac
    done < "$assigned"
  fi
else
  squeue=squeue
  [[ -n ${v[slurm_bin_dir]} ]] && squeue=${v[slurm_bin_dir]}/squeue
  [[ -n ${v[slurm_conf]} ]] && export SLURM_CONF=${v[slurm_conf]}
  if ! tres=$("$squeue" --noheader --jobs "$SLURM_JOB_ID" --format %b 2>&1); then
    # "print" lines go to the task's output: the task runs, without the variables.
    echo "print $prog: cannot read job $SLURM_JOB_ID: ${tres//[$'\n\r']/ }"; exit 0
  fi
  rest=${tres//[[:space:]]/},
  while [[ -n $rest ]]; do
    item=${rest%%,*}; rest=${rest#*,}
    case $item in
      gres:ipu:*|gres/ipu:*)
        count=${item##*:}; colons=${item//[^:]/}
        [[ $count =~ ^[0-9]+$ && ${#colons} -le 3 ]] && ipus=$((ipus + 10#$count)) ;;
    esac
  done
fi
if ((ipus > 0)); then
  echo "export IPUOF_VIPU_API_HOST=${v[ipuof_api_host]}"
  echo "export IPUOF_VIPU_API_PORT=${v[ipuof_api_port]}"
  echo "export IPUOF_VIPU_API_PARTITION_ID=$partition"
  echo "export IPUOF_VIPU_API_GCD_ID=0"
  echo "export IPUOF_VIPU_API_TIMEOUT=${v[ipuof_timeout_s]}"
  [[ -n $device ]] && echo "export VPOD_IPU_DEVICE_ID=$device"
  # The job's partition key (secure controllers): only the job's user reads the file.
  keyfile=${v[credentials_dir]}/${v[partition_prefix]}$SLURM_JOB_ID.vipu-cli.hcl
  if [[ -r $keyfile ]]; then
    echo "export VIPU_CLI_CONFIG=$keyfile"
    pair='^(api-user-id|api-access-key)="([A-Za-z0-9_.-]+)"$'
    while IFS= read -r line; do
      [[ $line =~ $pair ]] || continue
      name=${BASH_REMATCH[1]^^}
      echo "export VIPU_CLI_${name//-/_}=${BASH_REMATCH[2]}"
    done < "$keyfile"
  fi
fi
exit 0
"""


def bridge_hook(op: str, program: str, config: str, bin_dir: str) -> str:
    """The PrologSlurmctld (``op`` start) or EpilogSlurmctld (``op`` end) script."""
    role, what = {
        "start": ("PrologSlurmctld", "has the bridge make the job's partition."),
        "end": ("EpilogSlurmctld", "has the bridge remove the job's partition."),
    }[op]
    head = _HEAD.format(
        program=program,
        role=role,
        what=what,
        config=shlex.quote(config),
        fallback=shlex.quote(str(Path(bin_dir) / program)),
    )
    body = _BRIDGE_BODY.replace("@TIMEOUT@", str(BRIDGE_TIMEOUT_S))
    return f"{head}op={op}\n{body}"


def task_prolog(config: str, bin_dir: str) -> str:
    """The TaskProlog script: ``export IPUOF_VIPU_API_*`` lines for jobs with IPUs."""
    head = _HEAD.format(
        program=TASK_PROLOG_PROGRAM,
        role="TaskProlog",
        what="the IPUOF_VIPU_API_* variables of a job with IPUs.",
        config=shlex.quote(config),
        fallback=shlex.quote(str(Path(bin_dir) / TASK_PROLOG_PROGRAM)),
    )
    return head + _TASK_BODY


def write_hooks(directory: Path, config: Path, bin_dir: Path) -> dict[str, Path]:
    """Write ``prolog``, ``epilog`` and ``task-prolog`` into ``directory`` (mode 0755).

    ``bin_dir`` holds the Python hooks they fall back to. Returns
    ``{"prolog": path, "epilog": path, "task_prolog": path}``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    texts = {
        "prolog": bridge_hook("start", HOOK_FILES["prolog"], str(config), str(bin_dir)),
        "epilog": bridge_hook("end", HOOK_FILES["epilog"], str(config), str(bin_dir)),
        "task_prolog": task_prolog(str(config), str(bin_dir)),
    }
    written = {}
    for hook, text in texts.items():
        path = directory / (TASK_PROLOG_FILE if hook == "task_prolog" else hook)
        new = path.with_name(path.name + ".new")
        new.write_text(text)
        os.chmod(new, 0o755)
        os.replace(new, path)  # slurmctld may be running the old one right now
        written[hook] = path
    return written
