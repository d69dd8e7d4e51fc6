"""Time collectives on a real MPI: collkit's algorithms, the MPI's native call, and the MPI's own
algorithms forced one at a time, in one table and one results file.

  collkit bench allreduce --algos rd,native -P 4 --sizes 8B..1MiB
  collkit bench allreduce --algos rd,native,mpich:ring,mpich:recursive_doubling -P 2,4,8
  collkit bench allreduce --algos rd,native,all-mpi -P 4      # every algorithm of this MPI
  collkit bench multicast -P 4          # alpha_p, alpha_r (Ruefenacht et al. 2017 §5.1)

-P is the process counts as in every collkit command (-np is the same option, as in mpiexec).
Sizes are bytes per rank and must be whole elements of the datatype (8, 16, ... for double).

The MPI is the first mpiexec on PATH (a cluster's `module load openmpi`, or an activated
environment with the PyPI `mpich` wheel), else the `mpich` wheel of this Python environment;
--mpiexec / --mpi-prefix or the MPIEXEC and MPICXX environment variables select another
(docs/mpi.md). The first line says which MPI was chosen and why. collkit's MPI programs are built
for it once, into ~/.cache/collkit (COLLKIT_CACHE): cmake and a C++ compiler must be there.

Native and the collkit algorithms are measured interleaved in one job (--rounds rounds, native
re-measured around every candidate, a core-to-core probe around every block, the load in every
row: docs/tuning.md); --no-interleave measures them one job after another.

Each row is appended to OUT.jsonl the moment it is measured (OUT.csv is written at the end);
rerunning the same command skips rows already there, so an interrupted campaign resumes.
Oversubscribed runs (more ranks than cores) get MPICH's throttled progress or Open MPI's
yield-when-idle unless the environment already sets them; the settings go into each row.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from collkit.bench import BenchOptions, check_bench, run_bench, run_multicast
from collkit.cli._common import (
    add_json_argument,
    add_p_argument,
    check_launchable,
    console,
    counts_form,
    default_np,
    input_file,
    parse_bytes,
    parse_rank,
    print_json_lines,
    split_names,
    table,
)
from collkit.collectives import COLLECTIVES, ROOTED
from collkit.drift import rounds_won
from collkit.errors import InvalidArgumentError
from collkit.mpi import MPI, PROGRAMS, build, find_mpi
from collkit.progress import CampaignProgress
from collkit.results import Row

NAME = "bench"
HELP = "time collectives on a real MPI (collkit's algorithms, native, the MPI's own)"


def parse_sizes(text: str) -> list[int]:
    """'8B..1MiB' (powers of two between), '8,64,1KiB', or a mix."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise argparse.ArgumentTypeError(f"empty entry in sizes '{text}'")
        if ".." in part:
            lo_s, _, hi_s = part.partition("..")
            lo, hi = parse_bytes(lo_s), parse_bytes(hi_s)
            if hi < lo:
                raise argparse.ArgumentTypeError(f"empty size range '{part}'")
            s = max(lo, 1)
            if lo == 0:
                out.append(0)
            while s <= hi:
                out.append(s)
                s *= 2
        else:
            out.append(parse_bytes(part))
    if len(out) > 64:
        raise argparse.ArgumentTypeError(f"{len(out)} sizes: at most 64 per campaign")
    for s in out:
        if s > 1 << 34:
            raise argparse.ArgumentTypeError(f"size {s} B is more than 16 GiB per rank")
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "collective",
        choices=[*COLLECTIVES, "multicast"],
        help="the collective to time, or 'multicast' for alpha_p / alpha_r",
    )
    p.add_argument(
        "--algos",
        default="native",
        help="comma list: collkit names (rd or allreduce:rd), native, the MPI's own "
        "(mpich:ring, ompi:ring), or all-mpi for all of this MPI's (default native)",
    )
    add_p_argument(p, lists=True, required=False, aliases=("-np", "--np"))
    p.add_argument(
        "--sizes",
        type=parse_sizes,
        default=None,
        metavar="LIST",
        help="bytes per rank: 8B..1MiB (powers of two), 8,64,1KiB (default 8); for an "
        "irregular collective without --counts, bytes per block (or per pair), each size "
        "measured as the count vector equal(size / element size)",
    )
    p.add_argument(
        "--counts",
        type=counts_form,
        action="append",
        default=[],
        metavar="FORM",
        help="the count vector of a collective whose MPI call takes counts (`collkit "
        "algorithms` lists them), in elements, drawn for each P: 1,0,5 (P entries; P^2 for "
        "one with a count per pair), equal(n), random(seed,max), skewed(max[,seed]), "
        "zeros-but-one[(n[,k])]; "
        "repeat it to measure several, each in place of a size (not with --sizes). The rows "
        "say the form (`counts`) and, as `bytes`, the whole vector's bytes (per pair: the P x "
        "P matrix's)",
    )
    p.add_argument("--datatype", default="", help="double, float, int, char")
    p.add_argument("--iters", type=int, default=200, help="timed iterations per row (default 200)")
    p.add_argument("--warmup", type=int, default=20, help="untimed calls first (default 20)")
    p.add_argument("--block", type=int, default=1, help="operations per timed block (default 1)")
    p.add_argument(
        "--sync",
        choices=["barrier", "window"],
        default="barrier",
        help="synchronise iterations with a barrier or a start window (ReproMPI)",
    )
    p.add_argument(
        "--pattern",
        default="back_to_back",
        metavar="NAME",
        help="how the calls are made, as programs make them (docs/tuning.md, Patterns): "
        "back_to_back (the default: --block calls on one buffer), barrier (a barrier before "
        "each call, each timed alone: IMB's default), rotate_root (the root moves each call: "
        "IMB's -root_shift 1; rooted collectives), buffers (another buffer set each call, "
        "their total past the last-level cache), evict (caches evicted before each call, not "
        "timed: IMB's -off_cache -1); the rows record it",
    )
    p.add_argument(
        "--barrier",
        default="",
        metavar="ALGO",
        help="with --pattern barrier or evict: the barrier before each collkit call, a collkit "
        "barrier algorithm (barrier:tree ...), as a program's MPI_Barrier runs under a table "
        "that routes it; native keeps the MPI's own barrier (the default, and always native's)",
    )
    p.add_argument("--max-ms", type=int, default=2000, help="time budget per row (default 2000)")
    p.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rounds per size: the iterations split into blocks, native re-measured around "
        "every candidate in each round (default 3)",
    )
    p.add_argument(
        "--no-interleave",
        action="store_true",
        help="one job per algorithm, measured one after another (drift then hits them unequally)",
    )
    p.add_argument("--no-validate", action="store_true", help="skip checking results vs native")
    p.add_argument("--raw", action="store_true", help="keep every sample in the JSON lines")
    p.add_argument(
        "--root",
        type=parse_rank,
        default=0,
        metavar="R",
        help=f"root of {' / '.join(ROOTED)} (default 0)",
    )
    p.add_argument(
        "--map-by",
        default="",
        metavar="LIST",
        help="rank placements to sweep: core,socket,node (each rank bound to a core; "
        "default: the MPI's own); the rows' allocation records it",
    )
    p.add_argument("--mpiexec", default=None, help="the MPI's mpiexec / mpirun")
    p.add_argument("--mpi-prefix", default=None, help="the MPI's install prefix (bin/mpicxx ...)")
    p.add_argument("--hosts", default=None, help="host file, to run across nodes")
    p.add_argument(
        "-o",
        "--out",
        default="bench-results/COLLECTIVE.jsonl",
        help="results file (JSON lines; a .csv and a .png go beside it)",
    )
    p.add_argument("--no-plot", action="store_true", help="do not draw the plot")
    add_json_argument(p)


def _print_table(rows: list[Row]) -> None:

    t = table("latency per operation (µs): per-iteration maximum over ranks")
    for col in (
        "algorithm",
        "P",
        "bytes",
        "pattern",
        "min",
        "q1",
        "median",
        "q3",
        "p99",
        "max",
        "iters",
        "valid",
        "load",
        "probe ns",
        "beat native",
    ):
        t.add_column(col, justify="left" if col == "algorithm" else "right", no_wrap=True)
    for r in sorted(rows, key=lambda r: (r.P, r.bytes, r.algorithm)):
        if r.error:
            t.add_row(
                r.algorithm,
                str(r.P),
                str(r.bytes),
                r.pattern,
                f"[red]{r.error[:60]}[/red]",
                *[""] * 10,
            )
            continue
        won = rounds_won(r) if r.interleaved and r.algorithm != "native" else []
        beat = f"{sum(won)}/{len(won)} rounds" if won else ""
        t.add_row(
            r.algorithm,
            str(r.P),
            str(r.bytes),
            r.pattern,
            *(f"{getattr(r, f'{k}_us'):.2f}" for k in ("min", "q1", "median", "q3", "p99", "max")),
            str(r.iterations),
            "" if r.valid is None else ("yes" if r.valid else "NO"),
            "" if math.isnan(r.load_avg_1m) else f"{r.load_avg_1m:.1f}",
            ""
            if math.isnan(r.probe_rtt_ns_before)
            else f"{r.probe_rtt_ns_before:.0f}/{r.probe_rtt_ns_after:.0f}",
            "[yellow]suspect[/yellow]" if r.suspect else beat,
        )
    console().print(t)
    for r in rows:
        if r.suspect:
            print(f"suspect: {r.algorithm} P={r.P} {r.bytes} B: {r.suspect}", file=sys.stderr)


def options_of(args: argparse.Namespace) -> BenchOptions:
    """The benchmark the command line asks for (its checks are collkit.bench.check_bench's)."""
    default_np(args, 4, lists=True)
    if args.map_by and not all(x.strip() for x in args.map_by.split(",")):
        # an empty element would sweep the MPI's default placement too, without a word
        raise InvalidArgumentError(f"--map-by '{args.map_by}': empty entry (e.g. core,socket)")
    algos = split_names(args.algos)
    if not all(algos):
        raise InvalidArgumentError(f"empty entry in --algos '{args.algos}'")
    if args.counts and args.sizes is not None:
        raise InvalidArgumentError(
            "give --sizes or --counts, not both: each --counts form is a measured point"
        )
    return BenchOptions(
        collective=args.collective,
        algorithms=algos,
        P=args.P,
        sizes=[8] if args.sizes is None else args.sizes,
        counts=list(args.counts),
        datatype=args.datatype,
        iterations=args.iters,
        warmup=args.warmup,
        block=args.block,
        sync=args.sync,
        pattern=args.pattern,
        barrier=args.barrier,
        max_ms=args.max_ms,
        rounds=args.rounds,
        interleave=not args.no_interleave,
        validate=not args.no_validate,
        raw=args.raw,
        root=args.root,
        placements=[x.strip() for x in args.map_by.split(",")],
        hosts=args.hosts,
        mpiexec=args.mpiexec,
        mpi_prefix=args.mpi_prefix,
        out=args.out,
        plot=not args.no_plot,
    )


def _check_multicast(args: argparse.Namespace) -> None:
    """What the MPI would otherwise abort on, said before it starts."""
    default_np(args, 4, lists=True)
    if args.hosts is not None:
        input_file(args.hosts, "--hosts")
    check_launchable(args.P, args.hosts)
    if args.root != 0:
        raise InvalidArgumentError(f"{args.collective} has no root (--root {args.root})")


def _build(mpi: MPI, programs: Sequence[str] = PROGRAMS) -> None:
    """Build collkit's MPI programs (cached); a build (the first run) says so and shows a clock."""
    import threading
    import time

    from rich.console import Console

    done = threading.Event()
    failed: list[BaseException] = []

    def work() -> None:
        try:
            build(mpi, programs)
        except BaseException as e:  # re-raised in the caller's thread
            failed.append(e)
        done.set()

    threading.Thread(target=work, daemon=True).start()
    if not done.wait(1.0):
        t0 = time.monotonic()
        msg = f"building collkit's MPI programs for {mpi.version} (once per MPI; a few minutes)"
        err = Console(stderr=True)
        if err.is_terminal:
            with err.status(msg) as status:
                while not done.wait(1.0):
                    status.update(f"{msg}: {time.monotonic() - t0:.0f} s")
        else:
            print(msg, file=sys.stderr, flush=True)
            while not done.wait(30.0):
                print(
                    f"  still building: {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True
                )
        if not failed:
            print(f"built in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    if failed:
        raise failed[0]


def _multicast(args: argparse.Namespace) -> int:
    mpi = find_mpi(args.mpiexec, args.mpi_prefix)
    print(f"MPI: {mpi.describe()}", file=sys.stderr)
    _build(mpi, ["collkit_multicast"])
    P = args.P[0]
    recs = run_multicast(mpi, P, iterations=args.iters * 5)
    if args.json:
        print_json_lines(recs)
    else:
        print(f"multicast of 8 B from rank 0 to b peers, P = {P}, {mpi.version} (µs)")
        print(f"{'mode':<12} {'b':>3} {'min':>9} {'median':>9} {'q3':>9}")
        for r in recs:
            if r["kind"] == "multicast":
                print(
                    f"{r['mode']!s:<12} {r['b']!s:>3} {r['min']:>9.3f} {r['median']:>9.3f} "
                    f"{r['q3']:>9.3f}"
                )
        for r in recs:
            if r["kind"] == "fit":
                print(
                    f"{r['mode']}: alpha_p = {r['alpha_p_min']:.3f} (min) "
                    f"{r['alpha_p_median']:.3f} (median), alpha_r = {r['alpha_r_min']:.3f} (min) "
                    f"{r['alpha_r_median']:.3f} (median)   [fit on b = 1..{r['b_max']}]"
                )
    out = Path(args.out.replace("COLLECTIVE", "multicast"))
    out.parent.mkdir(parents=True, exist_ok=True)
    import json

    out.write_text("".join(json.dumps(r) + "\n" for r in recs))
    print(f"wrote {out}", file=sys.stderr if args.json else sys.stdout)
    return 0


def run(args: argparse.Namespace) -> int:
    if args.collective == "multicast":
        if args.map_by and not all(x.strip() for x in args.map_by.split(",")):
            raise InvalidArgumentError(f"--map-by '{args.map_by}': empty entry (e.g. core,socket)")
        _check_multicast(args)
        return _multicast(args)
    plan = check_bench(options_of(args))
    print(f"MPI: {plan.mpi.describe()}; results: {plan.out}", file=sys.stderr)
    _build(plan.mpi, ["collkit_bench"])
    result = run_bench(plan, progress=CampaignProgress)
    if args.json:
        print_json_lines(result.rows)
    else:
        _print_table(result.rows)
    if len(result.written) > 2:
        print(f"wrote {', '.join(map(str, [result.out, *result.written[1:]]))}", file=sys.stderr)
    return 0 if result.ok else 1
