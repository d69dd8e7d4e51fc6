"""Run an unmodified MPI program with collkit's algorithms where a tuning table says so.

  collkit run -np 4 --tuning tune-results/collkit-tuning.json -- ./app args
  collkit run -np 4 --tuning table.json --verbose -- python3 script.py
  collkit run -np 4 --tuning table.json --stats calls.jsonl -- lmp -in in.lj

Wraps the MPI's launcher: libcollkit_pmpi.so (built for this MPI into collkit's cache) is
preloaded into every rank, and COLLKIT_TUNING points at the table, which is validated first.
The nine collectives collkit implements (MPI_Allreduce, MPI_Reduce, MPI_Bcast, MPI_Alltoall,
MPI_Barrier, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Gather, MPI_Scatter) then run the
table's algorithm for (communicator size, bytes); everything else goes to the MPI. --verbose
logs each decision once per (collective, size class) and prints at the end how many calls went
where and their time; --stats FILE writes every rank's calls as collkit result rows. A
communicator the program makes (MPI_Comm_dup, _split, _split_type, _create) whose size a rule
covers is set up by the call that makes it;
MPI_COMM_WORLD's calls go to the MPI until their time pays for collkit's setup of it (~0.4 ms on
a 2-core VM; COLLKIT_SETUP_US=0: from the first call; COLLKIT_EARLY_SETUP=0: every communicator
so; docs/tuning.md); COLLKIT_SHM=0, COLLKIT_SHM_MAX, COLLKIT_SHM_IN_TURN=0 (every plan through
the executor's general loop), COLLKIT_SETUP_US, COLLKIT_EARLY_SETUP and COLLKIT_SPIN_US (poll this
long, then yield; unset: poll while the job's ranks fit the cores, docs/mpi.md) are passed to
every rank. The program
must use the same MPI (MPICH ABI: the pip `mpich` wheel or a system MPICH; Open MPI:
MPIEXEC=mpirun.openmpi MPICXX=mpicxx.openmpi).
The MPI is chosen as for `collkit bench` (the first mpiexec on PATH, else the `mpich` wheel); the
first line on stderr says which and why.
The exit status is the program's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from collkit.cli._common import check_launchable, default_np, input_file, parse_p
from collkit.errors import InvalidArgumentError
from collkit.mpi import build, find_mpi, launch_env
from collkit.mpi.launch import preload_command
from collkit.tune.table import load

NAME = "run"
# COLLKIT_SHM=0 (no shared memory), COLLKIT_SHM_MAX (its largest message), COLLKIT_SHM_IN_TURN=0
# (no plan run in turn: docs/mpi.md), COLLKIT_SETUP_US (what a communicator's setup is taken to
# cost; 0: collkit's route from the first call), COLLKIT_EARLY_SETUP (0: no setup as a
# communicator is made), COLLKIT_SPIN_US (how long a waiting rank polls before it yields).
FORWARDED = (
    "COLLKIT_SHM",
    "COLLKIT_SHM_MAX",
    "COLLKIT_SHM_IN_TURN",
    "COLLKIT_SETUP_US",
    "COLLKIT_EARLY_SETUP",
    "COLLKIT_SPIN_US",
)
HELP = "run an unmodified MPI program with a tuning table (LD_PRELOAD libcollkit_pmpi.so)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-P",
        "-np",
        "--np",
        dest="P",
        type=parse_p,
        default=None,
        metavar="N",
        help="number of ranks (in a Slurm allocation without --hosts, default its SLURM_NTASKS)",
    )
    p.add_argument(
        "--tuning",
        default=None,
        metavar="TABLE",
        help="collkit tuning table (collkit tune writes collkit-tuning.json); "
        "without it every call goes to the MPI (useful for --verbose counts)",
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="log each decision once per size class and the call counts at the end",
    )
    p.add_argument(
        "--stats",
        default=None,
        metavar="FILE.jsonl",
        help="write calls per route and their time as result rows, one set per rank",
    )
    p.add_argument(
        "--hosts",
        default=None,
        metavar="FILE",
        help="host file, to run across nodes (`collkit cluster up` writes one)",
    )
    p.add_argument("--mpiexec", default=None, help="the MPI's mpiexec / mpirun")
    p.add_argument("--mpi-prefix", default=None, help="the MPI's install prefix")
    p.add_argument(
        "program",
        nargs=argparse.REMAINDER,
        metavar="-- PROGRAM ARGS",
        help="the program and its arguments, after --",
    )


def run(args: argparse.Namespace) -> int:
    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    if not program:
        raise InvalidArgumentError("no program to run: collkit run -np 4 --tuning T -- ./app")
    default_np(args, 0, lists=False)
    if not args.P:
        raise InvalidArgumentError("-np N: how many ranks to run (outside a Slurm allocation)")
    check_launchable([args.P], args.hosts)
    env: dict[str, str] = {}
    if args.tuning:
        table = load(args.tuning)  # a clear error before anything starts
        env["COLLKIT_TUNING"] = str(Path(args.tuning).resolve())
        if args.verbose:
            print(f"collkit run: {args.tuning}: {len(table.rules)} rules", file=sys.stderr)
        for note in table.notes:  # calls the rule covers that its algorithm cannot take
            print(f"collkit run: warning: {args.tuning}: {note}", file=sys.stderr)
    if args.verbose:
        env["COLLKIT_VERBOSE"] = "1"
    # The library's switches must be alike on every rank (each decides alone, all must agree):
    # passed by name to every node, not left to what each node's environment holds.
    for k in FORWARDED:
        if k in os.environ:
            env[k] = os.environ[k]
    if args.hosts is not None:
        input_file(args.hosts, "--hosts")
    if args.stats:
        try:  # can it be written? said now, not after the program ran (its rows would be lost)
            with open(args.stats, "a"):
                pass
        except OSError as e:
            raise InvalidArgumentError(f"--stats {args.stats}: {e.strerror or e}") from None
        env["COLLKIT_STATS"] = str(Path(args.stats).resolve())
    mpi = find_mpi(args.mpiexec, args.mpi_prefix)
    print(f"collkit run: MPI: {mpi.describe()}", file=sys.stderr)
    library = build(mpi, ["libcollkit_pmpi.so"]) / "libcollkit_pmpi.so"
    base_env, _ = launch_env(mpi, args.P, hosts=args.hosts)
    cmd = preload_command(mpi, args.P, program, library, env, args.hosts)
    if args.verbose:
        print("+ " + " ".join(cmd), file=sys.stderr)
    try:
        return subprocess.run(cmd, env=base_env, check=False).returncode
    except OSError as e:
        raise InvalidArgumentError(f"cannot run {cmd[0]}: {e.strerror}") from None
