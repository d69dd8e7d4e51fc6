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

from collkit.algorithms import parse_row_name
from collkit.bench import DATATYPES, Campaign, planned_rows, plot, run_campaign, run_multicast
from collkit.cli._common import (
    add_json_argument,
    add_p_argument,
    check_launchable,
    console,
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
from collkit.results import ResultStore, Row

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
    add_p_argument(p, lists=True, default=[4], aliases=("-np", "--np"))
    p.add_argument(
        "--sizes",
        type=parse_sizes,
        default=[8],
        metavar="LIST",
        help="bytes per rank: 8B..1MiB (powers of two), 8,64,1KiB (default 8)",
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
            t.add_row(r.algorithm, str(r.P), str(r.bytes), f"[red]{r.error[:60]}[/red]", *[""] * 10)
            continue
        won = rounds_won(r) if r.interleaved and r.algorithm != "native" else []
        beat = f"{sum(won)}/{len(won)} rounds" if won else ""
        t.add_row(
            r.algorithm,
            str(r.P),
            str(r.bytes),
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


def _check(args: argparse.Namespace) -> None:
    """What the MPI would otherwise abort on, said before it starts."""
    if args.hosts is not None:
        input_file(args.hosts, "--hosts")
    check_launchable(args.P, args.hosts)
    if args.map_by and not all(x.strip() for x in args.map_by.split(",")):
        # an empty element would sweep the MPI's default placement too, without a word
        raise InvalidArgumentError(f"--map-by '{args.map_by}': empty entry (e.g. core,socket)")
    if args.collective in ROOTED:
        for P in args.P:
            if args.root >= P:
                raise InvalidArgumentError(f"--root {args.root} is not a rank of P = {P}")
    elif args.root != 0:
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
    _check(args)
    if args.collective == "multicast":
        return _multicast(args)
    mpi = find_mpi(args.mpiexec, args.mpi_prefix)
    algos: list[str] = []
    for a in split_names(args.algos):
        if not a:
            raise InvalidArgumentError(f"empty entry in --algos '{args.algos}'")
        if a != "all-mpi":
            algos.append(a)
            continue
        own = mpi.native_algorithms(args.collective)
        if not own:
            raise InvalidArgumentError(
                f"--algos all-mpi: collkit knows no algorithms of this MPI ({mpi.describe()}) "
                f"for {args.collective} to force (it knows MPICH's, Open MPI's and Intel MPI's)"
            )
        algos.extend(own)
    campaign = Campaign(
        collective=args.collective,
        algorithms=algos,
        P=args.P,
        sizes=args.sizes,
        datatype=args.datatype,
        iterations=args.iters,
        warmup=args.warmup,
        block=args.block,
        sync=args.sync,
        max_ms=args.max_ms,
        validate=not args.no_validate,
        raw=args.raw,
        root=args.root,
        hosts=args.hosts,
        placements=[x.strip() for x in args.map_by.split(",")],
        interleave=not args.no_interleave,
        rounds=args.rounds,
    )
    elem = DATATYPES[campaign.datatype]
    for size in campaign.sizes:  # fail before measuring anything
        if size % elem:
            raise InvalidArgumentError(
                f"size {size} B is not a whole number of {elem}-byte {campaign.datatype} "
                f"elements: give a multiple of {elem} (or --datatype char)"
            )
    for a in campaign.algorithms:
        if parse_row_name(a).kind == "mpi":
            mpi.force_env(campaign.collective, a)
    out = Path(args.out.replace("COLLECTIVE", args.collective))
    store = ResultStore(out)
    print(f"MPI: {mpi.describe()}; results: {out}", file=sys.stderr)
    _build(mpi, ["collkit_bench"])

    # rows done of rows planned, with an ETA: a bar on a terminal, a line every 10 s otherwise
    with CampaignProgress("bench", planned_rows(campaign)) as ticker:

        def progress(msg: str, row: Row | None) -> None:
            if row is None:
                ticker.message(msg)
            elif row.error:
                ticker.message(f"  {row.bytes:>9} B  error: {row.error}")
            else:
                ticker.message(
                    f"  {row.algorithm} {row.bytes:>9} B  median {row.median_us:10.2f} µs"
                )

        run_campaign(campaign, mpi, store, progress, ticker)
    sizes = {campaign.count(s) * DATATYPES[campaign.datatype] for s in campaign.sizes}
    rows = [
        r
        for r in store
        if r.collective == campaign.collective
        and r.P in campaign.P
        and r.algorithm in campaign.algorithms
        and r.bytes in sizes
        and r.datatype == campaign.datatype
        and r.mpi == mpi.version
    ]
    if args.json:
        print_json_lines(sorted(rows, key=lambda r: (r.P, r.bytes, r.algorithm)))
    else:
        _print_table(rows)
    if not args.no_plot and rows:
        png = out.with_suffix(".png")
        plot(rows, png, title=f"{campaign.collective}, {mpi.version}")
        print(f"wrote {out}, {out.with_suffix('.csv')}, {png}", file=sys.stderr)
    return 0 if all(not r.error and r.valid is not False for r in rows) else 1
