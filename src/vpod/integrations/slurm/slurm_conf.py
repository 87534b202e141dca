"""The Slurm configuration the integration needs: slurm.conf lines, gres.conf, job_submit.lua.

Pure functions of the Slurm partitions and the sizes of the V-IPU allocations
they map to; ``vpod-slurm-config`` and the local cluster of ``vpod slurm up``
write their output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

from vpod.domain.sizes import DOMAIN_MAX_IPUS, SEGMENT_SIZES

GRES_NAME = "ipu"
STATIC_GRES_NAME = "vipu"
"""Static mode: ``vipu:<size>`` with a count of the static partitions of that size."""


@dataclass(frozen=True)
class IpuPartition:
    """A Slurm partition with IPUs: its node and the V-IPU allocation behind it."""

    name: str
    node: str
    allocation: str
    ipus: int
    """The allocation's size: the node's GRES count."""


def valid_sizes(allocation_ipus: int) -> list[int]:
    """Partition sizes an allocation of ``allocation_ipus`` IPUs can hold, smallest first."""
    sizes = [size for size in SEGMENT_SIZES if size <= allocation_ipus]
    multiple = 2 * DOMAIN_MAX_IPUS
    while multiple <= allocation_ipus:
        sizes.append(multiple)
        multiple += DOMAIN_MAX_IPUS
    return sizes


def _lua_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def job_submit_lua(
    partitions: list[IpuPartition],
    default_partition: str,
    *,
    mode: str = "dynamic",
    static: Sequence[tuple[int, int]] = (),
) -> str:
    """The job_submit.lua that refuses, at submission, what the mode cannot give: sizes
    V-IPU cannot make (dynamic), blocks the shared partition has not (reconfigurable,
    ``partitions`` sized as it), static partitions that do not exist (static)."""
    template = resources.files(__package__).joinpath("job_submit.lua").read_text()
    rows = [
        f"  [{_lua_string(p.name)}] = {{{', '.join(str(s) for s in valid_sizes(p.ipus))}}},"
        for p in partitions
    ]
    return (
        template.replace("-- @VALID_SIZES@", "\n".join(rows))
        .replace("@DEFAULT_PARTITION@", default_partition.replace('"', ""))
        .replace("@MODE@", mode)
        .replace("-- @STATIC_SIZES@", ", ".join(str(size) for size, _ in sorted(static)))
    )


def gres_conf(partitions: list[IpuPartition], *, static: Sequence[tuple[int, int]] = ()) -> str:
    """Count-only GRES: no device files, Slurm only counts IPUs (or, with ``static``, the
    static partitions of each size, all on the first partition's node)."""
    lines = ["# vpod: IPUs are counted, not bound to device files (V-IPU partitions hold them)"]
    if static:
        node = partitions[0].node
        lines += [
            f"NodeName={node} Name={STATIC_GRES_NAME} Type={size} Count={count}"
            for size, count in static
        ]
        return "\n".join(lines) + "\n"
    counts: dict[str, int] = {}
    for p in partitions:
        counts[p.node] = max(counts.get(p.node, 0), p.ipus)
    lines += [f"NodeName={node} Name={GRES_NAME} Count={count}" for node, count in counts.items()]
    return "\n".join(lines) + "\n"


def integration_lines(hooks: Mapping[str, str]) -> list[str]:
    """slurm.conf lines for the hooks (``prolog``, ``epilog``, ``task_prolog`` -> program path).

    ``AccountingStorageTRES=gres/ipu`` belongs with them when slurmdbd runs
    (slurmctld refuses it without: see :func:`accounting_lines`).
    """
    return [
        # Both names in every mode: a request for the other mode's GRES then reaches
        # job_submit.lua, which says what to ask instead (sbatch alone says "Invalid gres").
        f"GresTypes={GRES_NAME},{STATIC_GRES_NAME}",
        "JobSubmitPlugins=lua",
        f"PrologSlurmctld={hooks['prolog']}",
        f"EpilogSlurmctld={hooks['epilog']}",
        f"TaskProlog={hooks['task_prolog']}",
    ]


def accounting_lines(
    dbd_host: str, dbd_port: int, munge_socket: str = "", *, gres: str = GRES_NAME
) -> list[str]:
    """slurm.conf lines that put each job's IPUs in its AllocTRES (``sacct``).

    ``munge_socket``: for slurmctld's connection to slurmdbd Slurm takes the
    munge socket from AccountingStoragePass, not from AuthInfo.
    """
    return [
        "AccountingStorageType=accounting_storage/slurmdbd",
        f"AccountingStorageHost={dbd_host}",
        f"AccountingStoragePort={dbd_port}",
        *([f"AccountingStoragePass={munge_socket}"] if munge_socket else []),
        f"AccountingStorageTRES=gres/{gres}",
        "JobAcctGatherType=jobacct_gather/none",
    ]


def node_gres(
    partitions: list[IpuPartition], node: str, *, static: Sequence[tuple[int, int]] = ()
) -> str:
    """The ``Gres=ipu:N`` (static: ``Gres=vipu:1:4,vipu:4:2``) of a NodeName line."""
    if static:
        if partitions and partitions[0].node != node:
            return ""
        return "Gres=" + ",".join(f"{STATIC_GRES_NAME}:{s}:{c}" for s, c in static)
    count = max((p.ipus for p in partitions if p.node == node), default=0)
    return f"Gres={GRES_NAME}:{count}"
