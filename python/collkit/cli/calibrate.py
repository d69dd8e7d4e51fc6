"""Measure this machine's model parameters on the MPI in use and write them as a profile.

Between two ranks on this node (or, with --hosts, on two nodes) it measures, in rounds and
size by size with every kernel in turn: ping-pong and back-to-back sends at growing sizes, the
time MPI_Send and MPI_Recv block (LogGP by Netgauge's method: Hoefler, Lichei, Rehm, IPDPS
2007), the same through collkit's shared-memory slots (the executor's path on one node up to
their size, the profile's "shm" regime), whether a send waits for a late receiver (the eager /
rendezvous threshold S), the
multicast benchmark (alpha_p, alpha_r; Ruefenacht, Bull, Booth 2017, §5.1), collkit's local
reductions per datatype and op (gamma) and memcpy (copy_beta; both taken at a prediction's
message size), and a few collkit schedules through the executor, 300 calls a case (its
per-call and per-op costs, fitted per regime: through the slots (once more with the slots'
two copies as ops of their own, what validate predicts with), through MPI, and from half the
L2 cache up; --no-executor leaves them out). It fits the postal, pipelined postal, LogP,
LogGP and LogGOPS parameters from the minima and the medians, on each side of S, and the
executor's costs, and writes them with the machine,
MPI, date, load and the quality of every fit:

  collkit calibrate -o this-machine.json
  collkit simulate allreduce:ring -P 2 --bytes 1MiB --model loggops --profile this-machine.json
  collkit tune allreduce -np 64 --simulate loggops --profile this-machine.json
  collkit validate --profile this-machine.json -P 2 --collectives allreduce,bcast

On a shared machine keep the load in mind: the minima are what the fits are best for.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from collkit.errors import InvalidArgumentError

NAME = "calibrate"
HELP = "measure the simulator's model parameters (LogGOPS, postal, gamma, S) on this MPI"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from collkit.cli.bench import parse_sizes

    p.add_argument(
        "-o", "--out", default="profile.json", metavar="FILE.json", help="profile to write"
    )
    p.add_argument("--name", default=None, help="the profile's name (default: the host's name)")
    p.add_argument(
        "--sizes",
        type=parse_sizes,
        default=None,
        metavar="LIST",
        help="message sizes: 1B..1MiB (powers of two), 8,64,1KiB "
        "(default 1,8,64,512,4KiB,16KiB,64KiB,256KiB,1MiB)",
    )
    p.add_argument("--iters", type=int, default=30, help="samples per size and round (30)")
    p.add_argument("--rounds", type=int, default=3, help="rounds over all sizes (3)")
    p.add_argument("--quick", action="store_true", help="few sizes and samples (for the tour)")
    p.add_argument("--hosts", default=None, help="host file: measure between its first two hosts")
    p.add_argument(
        "--sync",
        choices=("barrier", "window"),
        default="barrier",
        help="how measured iterations start: after an MPI_Barrier (barrier, the default) or at "
        "one instant on aligned clocks (window, as the simulator starts every rank at 0; "
        "iterations a rank starts late are dropped)",
    )
    p.add_argument(
        "--executor-sizes",
        type=parse_sizes,
        default=None,
        metavar="LIST",
        help="sizes of the executor's calibration schedules (default 64,512,4KiB,12KiB,96KiB,"
        "256KiB,512KiB,1.5MiB,3MiB: none of validate's)",
    )
    p.add_argument(
        "--executor-rounds",
        type=int,
        default=5,
        metavar="N",
        help="rounds of the executor's calibration schedules (5: with --executor-iters 60, the "
        "300 calls a case of validate's measurement)",
    )
    p.add_argument(
        "--executor-iters",
        type=int,
        default=60,
        metavar="N",
        help="calls per round and executor calibration case (60)",
    )
    p.add_argument(
        "--no-executor",
        action="store_true",
        help="leave out the executor's calibration (small collkit schedules through the bench "
        "driver, fitting its per-call and per-op costs)",
    )
    p.add_argument("--mpiexec", default=None, help="the MPI's mpiexec / mpirun")
    p.add_argument("--mpi-prefix", default=None, help="the MPI's install prefix")
    from collkit.cli._common import add_json_argument

    add_json_argument(p, "the profile written to --out, on one line (its summary goes to stderr)")


def run(args: argparse.Namespace) -> int:
    from collkit.bench import machine_name
    from collkit.cli._common import input_file
    from collkit.cli.bench import _build
    from collkit.mpi import find_mpi
    from collkit.profile import DEFAULT_SIZES, calibrate

    if min(args.iters, args.rounds, args.executor_iters, args.executor_rounds) < 1:
        raise InvalidArgumentError(
            "--iters, --rounds, --executor-iters and --executor-rounds must be >= 1"
        )
    if args.hosts is not None:
        input_file(args.hosts, "--hosts")
    out = Path(args.out)
    if out.is_dir() or not (out.parent if str(out.parent) else Path(".")).is_dir():
        raise InvalidArgumentError(f"--out {args.out}: not a file in an existing folder")
    sizes = args.sizes or list(DEFAULT_SIZES)
    if any(s < 1 for s in sizes) or len(set(sizes)) < 2:
        raise InvalidArgumentError("--sizes: at least two distinct sizes of 1 B or more")
    iters, rounds = args.iters, args.rounds
    ex_iters, ex_rounds = args.executor_iters, args.executor_rounds
    executor_sizes = args.executor_sizes
    if executor_sizes is not None and (any(s < 1 for s in executor_sizes) or not executor_sizes):
        raise InvalidArgumentError("--executor-sizes: sizes of 1 B or more")
    if args.quick:
        sizes = args.sizes or [8, 1024, 65536, 1048576]
        iters, rounds = min(iters, 10), min(rounds, 2)
        ex_iters, ex_rounds = min(ex_iters, 20), min(ex_rounds, 2)
        executor_sizes = executor_sizes or [64, 4096, 98304, 262144]
    mpi = find_mpi(args.mpiexec, args.mpi_prefix)
    _build(mpi, ["collkit_calibrate"])
    name = args.name or machine_name().split(" ")[0]
    print(
        f"calibrating '{name}' on {mpi.version}: {len(sizes)} sizes x {rounds} rounds x "
        f"{iters} samples",
        file=sys.stderr,
    )
    prof = calibrate(
        mpi,
        name=name,
        hosts=args.hosts,
        sizes=sizes,
        iterations=iters,
        rounds=rounds,
        executor=not args.no_executor,
        executor_sizes=executor_sizes,
        executor_rounds=ex_rounds,
        executor_iterations=ex_iters,
        sync=args.sync,
        progress=lambda m: print(m, file=sys.stderr),
        command=shlex.join(
            ["collkit", "calibrate", "-o", str(out), "--name", name]
            + ["--sizes", ",".join(map(str, sizes)), "--iters", str(iters), "--rounds", str(rounds)]
            + (["--hosts", args.hosts] if args.hosts else [])
            + (["--no-executor"] if args.no_executor else [])
            + ["--sync", args.sync]
            + (["--executor-sizes", ",".join(map(str, executor_sizes))] if executor_sizes else [])
            + (
                ["--executor-rounds", str(ex_rounds), "--executor-iters", str(ex_iters)]
                if not args.no_executor
                else []
            )
        ),
    )
    prof.save(out)
    if args.json:
        import json

        print(prof.summary(), file=sys.stderr)
        print(json.dumps(json.loads(prof.to_json())), flush=True)
        print(f"wrote {out}", file=sys.stderr)
    else:
        print(prof.summary())
        print(f"wrote {out}")
    return 0
