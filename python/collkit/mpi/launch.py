"""Launching MPI programs: the mpiexec command line and environment for P ranks."""

from __future__ import annotations

import os
from pathlib import Path

from collkit import cluster
from collkit.mpi.base import MPI


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def placement_args(mpi: MPI, map_by: str) -> list[str]:
    """Launcher arguments that place consecutive ranks by core, socket or node."""
    return mpi.placement_args(map_by)


def launch_command(
    mpi: MPI, np: int, program: list[str], *, hosts: str | None = None, map_by: str = ""
) -> list[str]:
    """The mpiexec command line for `np` ranks of `program`."""
    if emulated := cluster.from_hostfile(hosts):  # `collkit cluster up`'s host file
        return emulated.launch_command(mpi, np, program, map_by)
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
    if emulated:
        added.update({k: v for k, v in emulated.launch_env(mpi).items() if k not in env})
    # An emulated cluster's nodes share this machine's cores: its ranks can oversubscribe them.
    if np > cores() and (hosts is None or emulated):
        for k, v in mpi.oversubscribed_env.items():
            if k not in env:
                added[k] = v
    for k, v in (extra or {}).items():
        added[k] = v
    env.update(added)
    desc = " ".join(f"{k}={v}" for k, v in sorted(added.items()))
    return env, desc


def allocation(np: int, hosts: str | None = None) -> str:
    if emulated := cluster.from_hostfile(hosts):
        return emulated.allocation(np)
    if hosts:
        return f"{np} ranks from hostfile {Path(hosts).name}"
    over = " (oversubscribed)" if np > cores() else ""
    return f"1 node x {np} ranks on {cores()} cores{over}"
