"""Launching MPI programs: the mpiexec command line and environment for P ranks.

Where: this machine; an emulated cluster (`collkit cluster up`'s host file as --hosts); the
hosts of a host file; or, inside a Slurm allocation (SLURM_JOB_ID set, no --hosts), the
allocation's nodes, filled in turn with as few ranks per node as fit (collkit.slurm). In an
allocation the launcher is the MPI's mpiexec (which starts its proxies through Slurm) with the
hosts and ranks per node said, or with COLLKIT_LAUNCHER=srun, Slurm's srun with the PMI the MPI
was built for (SRUN_PMI).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from collkit import cluster, slurm
from collkit.errors import InvalidArgumentError, UnsupportedError
from collkit.mpi.base import MPI

LAUNCHERS = ("mpiexec", "srun")
# srun --mpi for each MPI, as measured on Debian's Slurm 22.05: the pip MPICH speaks PMI-2
# (its pmix fails: "unsupported PMI version PMIx"); Debian's Open MPI 4.1 speaks PMIx only
# (its pmi2 fails: "OMPI was not built with SLURM's PMI support"). SLURM_MPI_TYPE overrides.
SRUN_PMI = {"mpich": "pmi2", "openmpi": "pmix"}


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def placement_args(mpi: MPI, map_by: str) -> list[str]:
    """Launcher arguments that place consecutive ranks by core, socket or node."""
    return mpi.placement_args(map_by)


def launcher() -> str:
    """COLLKIT_LAUNCHER: "mpiexec" (the default) or "srun" (in a Slurm allocation)."""
    name = os.environ.get("COLLKIT_LAUNCHER", "").strip() or "mpiexec"
    if name not in LAUNCHERS:
        raise InvalidArgumentError(
            f"COLLKIT_LAUNCHER={name[:40]!r} must be one of {', '.join(LAUNCHERS)}"
        )
    return name


def slurm_allocation(hosts: str | None) -> slurm.Allocation | None:
    """The Slurm allocation to launch in: the environment's, unless a host file is given. An
    error for COLLKIT_LAUNCHER=srun outside one."""
    alloc = None if hosts else slurm.allocation_of_env()
    if alloc is None and launcher() == "srun":
        raise UnsupportedError(
            "COLLKIT_LAUNCHER=srun launches inside a Slurm allocation only (salloc, sbatch: "
            "SLURM_JOB_ID set)" + (", without --hosts" if hosts else "")
        )
    return alloc


def srun_command(
    mpi: MPI,
    alloc: slurm.Allocation,
    np: int,
    program: list[str],
    map_by: str,
    nodes: int | None = None,
) -> list[str]:
    """srun for `np` ranks in the allocation (on `nodes` of its nodes where given), with the
    MPI's PMI."""
    used, rpn = alloc.layout(np, nodes)
    pmi = os.environ.get("SLURM_MPI_TYPE") or SRUN_PMI.get(mpi.kind)
    if not pmi:
        raise UnsupportedError(
            f"collkit does not know which PMI {mpi.version} takes from srun: set SLURM_MPI_TYPE "
            "(`srun --mpi=list` lists them), or use its mpiexec (COLLKIT_LAUNCHER=mpiexec)"
        )
    srun = shutil.which("srun") or "srun"
    # An emulated cluster's nodes share the machine's cores: no binding (as with its mpiexec).
    bind = "none" if alloc.emulated() or not map_by else "cores"
    dist = "cyclic" if map_by == "node" else "block"
    return [
        srun, f"--mpi={pmi}", "-N", str(used), "--ntasks-per-node", str(rpn), "-n", str(np),
        f"--distribution={dist}", f"--cpu-bind={bind}", *program,
    ]  # fmt: skip


def allocation_mpiexec(
    mpi: MPI,
    alloc: slurm.Allocation,
    np: int,
    program: list[str],
    map_by: str,
    nodes: int | None = None,
) -> list[str]:
    """The MPI's mpiexec in the allocation, told its hosts and ranks per node (it starts its
    proxies or daemons through Slurm); the MPIs collkit does not know get -n alone."""
    from collkit.mpi import PLACEMENTS, Mpich, OpenMpi

    if map_by and map_by not in PLACEMENTS:
        raise InvalidArgumentError(f"placement '{map_by}' must be one of {', '.join(PLACEMENTS)}")
    used, rpn = alloc.layout(np, nodes)
    names = alloc.hosts[:used]
    emulated = alloc.emulated()
    args: list[str] = []
    if isinstance(mpi, Mpich):
        args = ["-hosts", ",".join(names if map_by == "node" else [f"{h}:{rpn}" for h in names])]
    elif isinstance(mpi, OpenMpi):
        args = ["--host", ",".join(f"{h}:{rpn}" for h in names)]
        if map_by == "node" or emulated or not map_by:
            args += ["--map-by", "node" if map_by == "node" else "slot", "--bind-to", "none"]
        if emulated:
            subnet = f"{cluster.SUBNET}.0/24"
            args += ["--mca", "oob_tcp_if_include", subnet, "--mca", "btl_tcp_if_include", subnet]
    if map_by in ("core", "socket") and not emulated:  # bound within each node
        args += mpi.placement_args(map_by)
    return [mpi.mpiexec, *mpi.launch_args, *args, "-n", str(np), *program]


def check_nodes(np: int, nodes: int | None, hosts: str | None) -> None:
    """An error where `nodes` (an exact shape: tune's --nodes) cannot be launched: more than one
    node needs an emulated cluster's host file or a Slurm allocation (another host file's
    placement is the MPI's)."""
    if nodes is None or cluster.from_hostfile(hosts) or slurm_allocation(hosts):
        return
    if hosts:
        raise InvalidArgumentError(
            f"{nodes} nodes: collkit places ranks on nodes on an emulated cluster "
            "(`collkit cluster up`'s host file) or in a Slurm allocation, not with the host file "
            f"{Path(hosts).name}"
        )
    if nodes != 1:
        raise InvalidArgumentError(
            f"{nodes} nodes: this machine is one node (give --hosts of an emulated cluster, or "
            "run in a Slurm allocation)"
        )
    if np < 1:
        raise InvalidArgumentError(f"-np {np} must be >= 1")


def launch_command(
    mpi: MPI,
    np: int,
    program: list[str],
    *,
    hosts: str | None = None,
    map_by: str = "",
    nodes: int | None = None,
) -> list[str]:
    """The mpiexec (or srun) command line for `np` ranks of `program` (on exactly `nodes`
    nodes where given: tune's shapes)."""
    check_nodes(np, nodes, hosts)
    if emulated := cluster.from_hostfile(hosts):  # `collkit cluster up`'s host file
        return emulated.launch_command(mpi, np, program, map_by, nodes)
    if alloc := slurm_allocation(hosts):
        if launcher() == "srun":
            return srun_command(mpi, alloc, np, program, map_by, nodes)
        return allocation_mpiexec(mpi, alloc, np, program, map_by, nodes)
    cmd = [mpi.mpiexec, *mpi.launch_args, *mpi.placement_args(map_by)]
    if np > cores() and hosts is None:
        cmd += mpi.oversubscribe_args()
    if hosts:
        cmd += mpi.hostfile_args(hosts)
    return [*cmd, "-n", str(np), *program]


def preload_command(
    mpi: MPI,
    np: int,
    program: list[str],
    library: Path,
    env: dict[str, str],
    hosts: str | None = None,
) -> list[str]:
    """The launcher command line that preloads `library` (before any LD_PRELOAD already set) and
    passes `env` to every rank by name: libcollkit_pmpi.so under `collkit run`, and tune's
    measurement of its routing."""
    cmd = launch_command(mpi, np, program, hosts=hosts)
    preload = str(library)
    if os.environ.get("LD_PRELOAD"):
        preload += ":" + os.environ["LD_PRELOAD"]
    if cmd[0] != mpi.mpiexec and Path(cmd[0]).name == "srun":
        # srun passes its own environment on; `env` sets these for the ranks alone (srun
        # itself must not run preloaded).
        start = len(cmd) - len(program)
        assigned = [f"{k}={v}" for k, v in {"LD_PRELOAD": preload, **env}.items()]
        return [*cmd[:start], "env", *assigned, *cmd[start:]]
    flags = mpi.env_args({"LD_PRELOAD": preload, **env})
    at = cmd.index(mpi.mpiexec) + 1  # an emulated cluster's command starts before mpiexec
    return [*cmd[:at], *flags, *cmd[at:]]


def launch_env(
    mpi: MPI, np: int, extra: dict[str, str] | None = None, *, hosts: str | None = None
) -> tuple[dict[str, str], str]:
    """The environment to launch with, and a short description of the settings that were added
    (it goes into the rows: settings change timings)."""
    env = dict(os.environ)
    added: dict[str, str] = {}
    emulated = cluster.from_hostfile(hosts)  # `collkit cluster up`'s host file, or None
    alloc = slurm_allocation(hosts)
    if alloc is not None:
        emulated = alloc.emulated()  # a Slurm job on an emulated cluster, or None
    if emulated:
        added.update({k: v for k, v in emulated.launch_env(mpi).items() if k not in env})
    # An emulated cluster's nodes share this machine's cores: its ranks can oversubscribe them.
    if np > cores() and ((hosts is None and alloc is None) or emulated):
        for k, v in mpi.oversubscribed_env.items():
            if k not in env:
                added[k] = v
    for k, v in (extra or {}).items():
        added[k] = v
    env.update(added)
    desc = " ".join(f"{k}={v}" for k, v in sorted(added.items()))
    return env, desc


def allocation(np: int, hosts: str | None = None, nodes: int | None = None) -> str:
    """The rows' allocation: where the ranks ran (nodes x ranks per node where known; on
    exactly `nodes` nodes where given)."""
    check_nodes(np, nodes, hosts)
    if emulated := cluster.from_hostfile(hosts):
        return emulated.allocation(np, nodes)
    if alloc := slurm_allocation(hosts):
        # Not the job id: a campaign resumed in the next job finds its rows by this text.
        where = f"Slurm, {launcher()}"
        if on := alloc.emulated():
            where += f"; emulated cluster {on.name}: namespaces on 1 machine, shared cores"
        return f"{alloc.shape(np, nodes)} ({where})"
    if hosts:
        return f"{np} ranks from hostfile {Path(hosts).name}"
    over = " (oversubscribed)" if np > cores() else ""
    return f"1 node x {np} ranks on {cores()} cores{over}"
