"""A guided tour of collkit on this machine: list the algorithms, show a schedule, prove it
correct over a sweep of process counts, simulate it, run it on the local MPI against the
native collective, tune allreduce, check each chosen rule against native in one job per call
pattern tune measured (a line per pattern says whether the rules held in it; a rule that loses
in one is said to lose and not used) and run an unmodified MPI program with the rules that
held, calibrate the simulator on this machine and compare its predictions with measurements, and
leave the results (tables, pictures, trace files, tuning files) in one folder.

Each step prints the command that does the same on its own, so the tour teaches the CLI.

Examples:
  collkit tour                      everything, results in ./collkit-tour/
  collkit tour --out /tmp/t --quick a shorter sweep
  collkit tour --skip mpi --skip tune   without the MPI steps
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.rule import Rule

from collkit.cli import tour_cluster
from collkit.cli._common import output_dir
from collkit.cli.bench import parse_sizes
from collkit.mpi import MPI

if TYPE_CHECKING:
    from collkit.results import Row
    from collkit.tune.table import Rule as TuneRule

NAME = "tour"
HELP = "a guided tour on this machine: show, verify, simulate, run and tune algorithms"

STEPS = [
    "algorithms",
    "show",
    "verify",
    "export",
    "simulate",
    "nodes",
    "mpi",
    "tune",
    "validate",
    "cluster",
]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out",
        default="collkit-tour",
        metavar="DIR",
        help="results folder (made if its parent exists; default ./collkit-tour)",
    )
    p.add_argument("--quick", action="store_true", help="smaller sweeps")
    p.add_argument("--skip", action="append", default=[], choices=STEPS, help="skip a step")


def _run(console: Console, argv: list[str]) -> int:
    from collkit.cli import main

    console.print(f"[bold cyan]$ collkit {shlex.join(argv)}[/bold cyan]")
    code = main(argv)
    if code != 0:
        console.print(f"[red]exit status {code}[/red]")
    return code


def run(args: argparse.Namespace) -> int:
    console = Console(emoji=False)  # "allreduce:ring: ..." is a name, not an emoji code
    out: Path = output_dir(args.out, "--out")
    quick: bool = args.quick
    failures = 0

    def step(name: str, title: str, fn: Callable[[], int]) -> None:
        nonlocal failures
        if name in args.skip:
            return
        console.print(Rule(f"[bold]{title}"))
        t0 = time.perf_counter()
        code = fn()
        failures += code != 0
        console.print(f"[dim]({time.perf_counter() - t0:.1f} s)[/dim]\n")

    step("algorithms", "1. The algorithms collkit knows", lambda: _run(console, ["algorithms"]))
    step(
        "show",
        "2. One algorithm as a schedule: recursive doubling on 6 ranks",
        lambda: _run(console, ["show", "allreduce:rd", "-P", "6", "--count", "2", "--rank", "0"]),
    )
    sweep = "1..64" if quick else "1..256"
    step(
        "verify",
        f"3. Proved correct for every P in {sweep} (results, order, deadlock, hazards)",
        lambda: _run(console, ["verify", "allreduce:rd", "-P", sweep, "--count", "1,3"]),
    )
    step(
        "export",
        "4. Exported as text and JSON",
        lambda: max(
            _run(console, ["export", "allreduce:rd", "-P", "6", "--format", f, "-o", str(out / n)])
            for f, n in (("text", "rd-P6.txt"), ("json", "rd-P6.json"))
        ),
    )
    step(
        "simulate",
        "5. Simulated under the pipelining postal model (Ruefenacht et al. 2017's parameters), "
        "with a timeline",
        lambda: _run(
            console,
            [
                "simulate", "allreduce:rd", "-P", "8", "--bytes", "8",
                "--model", "pipelined-postal", "--alpha-p", "500ns", "--alpha-r", "100ns",
                "--beta", "0.4ns", "--reduce-base", "10ns",
                "--timeline", str(out / "rd-P8.perfetto.json"), "--plot", str(out / "rd-P8.png"),
            ],
        ),
    )  # fmt: skip
    # 128 ranks per node behind one NIC each, an ARCHER-like dragonfly (benchmarks/bench_hier.py
    # says where the parameters come from): the node-aware composition against the flat one.
    nodes = [
        "-P", "16384", "--rpn", "128", "--bytes", "8",
        "--alpha", "220ns", "--beta", "0.1ns", "--gamma", "0.1ns",
        "--topology", "dragonfly(p=4,a=16,hop=300ns,global=500ns,link=0.1ns)",
    ]  # fmt: skip
    step(
        "nodes",
        "6. Nodes: 16384 ranks, 128 per node; flat recursive doubling, then reduce in each node, "
        "recursive doubling across the nodes' leaders and bcast in each node",
        lambda: max(
            _run(console, ["simulate", a, *nodes])
            for a in ("allreduce:rd", "allreduce:hier(inter=allreduce:rd)")
        ),
    )
    step(
        "mpi",
        "7. Run on the local MPI (PyPI mpich by default) against the native MPI_Allreduce",
        lambda: _run(
            console,
            [
                "bench", "allreduce", "--algos", "rd,native", "-np", "2" if quick else "2,4",
                "--sizes", "8B..4KiB" if quick else "8B..64KiB", "--iters", "100",
                "-o", str(out / "bench-allreduce.jsonl"),
            ],
        ),
    )  # fmt: skip
    step(
        "tune",
        "8. Tune, and run an unmodified program with the winners",
        lambda: _tune(console, out, quick),
    )
    from collkit.cli.tour_validate import validate_step

    step(
        "validate",
        "9. The simulator against this machine: calibrate its parameters, predict, measure",
        lambda: validate_step(lambda argv: _run(console, argv), out, quick),
    )
    step(
        "cluster",
        "10. Two emulated nodes (root: network namespaces; docs/cluster.md)",
        lambda: tour_cluster.step(console, lambda argv: _run(console, argv), out, quick),
    )
    console.print(Rule())
    # the results folder as one page to look at (tables and pictures embedded)
    failures += _run(console, ["report", str(out)]) != 0
    console.print(f"results are in [bold]{out}/[/bold] (open {out / 'report.html'} in a browser)")
    for f in sorted(out.rglob("*")):
        if f.is_file():
            console.print(f"  {f}")
    return 1 if failures else 0


# The tour's program calls MPI_Allreduce in loops of 1000: tune times what it sees, back-to-back
# calls (OSU's way), 16 to a sample.
TOUR_BLOCK = 16


def _tune(console: Console, out: Path, quick: bool) -> int:
    """collkit tune, then an ordinary MPI program (mpi/examples/plain_allreduce.c) run plainly
    and under `collkit run --tuning`: the same results, collkit's algorithms where they won."""
    import subprocess

    from collkit.errors import CollkitError
    from collkit.mpi import find_mpi, launch_command, launch_env, source_dir

    tuned = out / "tune"
    size_text = "8B..4KiB" if quick else "8B..32KiB"
    code = _run(
        console,
        [
            "tune", "allreduce", "-np", "2", "--sizes", size_text, "--block", str(TOUR_BLOCK),
            "--iters", "50", "--max-ms", "200", "--top-k", "1", "-o", str(tuned),
        ],
    )  # fmt: skip
    sizes = parse_sizes(size_text)
    if code != 0:
        return code
    try:
        mpi = find_mpi()
        cc = Path(mpi.mpicxx).with_name(Path(mpi.mpicxx).name.replace("mpicxx", "mpicc"))
        app = out / "plain_allreduce"
        src = source_dir() / "mpi" / "examples" / "plain_allreduce.c"
        console.print(f"[bold cyan]$ {cc} {src} -o {app}[/bold cyan]")
        subprocess.run([str(cc), str(src), "-o", str(app)], check=True)
        env, _ = launch_env(mpi, 2)
        cmd = launch_command(mpi, 2, [str(app)])
        console.print(f"[bold cyan]$ {shlex.join(cmd)}[/bold cyan]   (without collkit)")
        plain = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
        console.print(plain)
    except (CollkitError, OSError, subprocess.CalledProcessError) as e:
        console.print(f"[red]cannot build or run the example program: {e}[/red]")
        return 1
    try:
        table = check_rules(console, mpi, tuned, sizes)
    except CollkitError as e:
        console.print(f"[red]cannot check the chosen rules against native: {e}[/red]")
        return 1
    code = _run(console, ["run", "-np", "2", "--tuning", str(table), "--verbose", "--", str(app)])
    if code != 0:
        return code
    return compare_runs(console, mpi, app, table, tuned)


PAIRS = 5  # runs of the program each way in the tour's last comparison


def compare_runs(console: Console, mpi: MPI, app: Path, table: Path, tuned: Path) -> int:
    """The program under `collkit run` with an empty table (every call to the MPI, the library
    loaded alike) and with the tuned table, alternating five times (A B A B ...): the same
    results, and the time per call each way as the program itself measures it; the ratio is the
    median over the pairs of runs of the pair's tuned / own (this machine's state can change
    between runs, less often within a pair)."""
    import re
    import statistics
    import subprocess
    import sys

    from rich.table import Table as RTable

    from collkit.mpi.stats import read_stats
    from collkit.tune.table import Table, load, save

    empty = tuned / "native-only.json"
    save(Table(mpi=mpi.version), empty)
    ways = {"MPI's own": empty, "tuned": table}
    times: dict[str, dict[int, list[float]]] = {w: {} for w in ways}
    results: dict[str, set[str]] = {w: set() for w in ways}
    console.print(
        f"[bold cyan]$ collkit run -np 2 --tuning {empty} -- {app}[/bold cyan]   and with "
        f"{table}, alternating, {PAIRS} times each"
    )
    env = {**os.environ, "MPIEXEC": mpi.mpiexec, "MPICXX": mpi.mpicxx}
    for _ in range(PAIRS):
        for way, path in ways.items():
            cmd = [sys.executable, "-m", "collkit", "run", "-np", "2", "--tuning", str(path)]
            p = subprocess.run(
                [*cmd, "--", str(app)], capture_output=True, text=True, check=False, env=env
            )
            if p.returncode != 0:
                console.print(f"[red]{way} run failed: {p.stderr[-1000:]}[/red]")
                return 1
            found = re.findall(r"(\d+) B\s+result (\w+)\s+([\d.]+) us", p.stdout)
            results[way].add(" ".join(f"{b}:{h}" for b, h, _ in found))
            for b, _, us in found:
                times[way].setdefault(int(b), []).append(float(us))
    same = len(results["MPI's own"] | results["tuned"]) == 1
    # Where the tuned run's calls went, from one more run with --stats (timing every call would
    # slow the timed runs): the library gives a communicator's first calls to the MPI until their
    # time pays for its setup (COLLKIT_SETUP_US, docs/mpi.md).
    stats = tuned / "tuned-calls.jsonl"
    stats.unlink(missing_ok=True)
    subprocess.run(
        [*cmd[:-1], str(table), "--stats", str(stats), "--", str(app)],
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip
    to_collkit: dict[int, list[int]] = {}
    for row in read_stats(stats) if stats.exists() else []:  # world rank 0's result rows
        if row.collective == "allreduce":
            counts = to_collkit.setdefault(row.bytes, [0, 0])
            counts[1] += row.iterations
            counts[0] += row.iterations if row.algorithm != "native" else 0
    rules = load(table)
    t = RTable(
        title=f"the program's time per call, µs (medians of {PAIRS} runs each way; tuned/own: "
        "the median of the pairs' ratios; lower: in how many pairs tuned was)"
    )
    for col in ("bytes", "tuned rule", "calls to it", "own", "tuned", "tuned/own", "lower"):
        t.add_column(col, justify="left" if col == "tuned rule" else "right", no_wrap=True)
    for b in sorted(times["tuned"]):
        own, tuned_us = times["MPI's own"][b], times["tuned"][b]
        a, c = statistics.median(own), statistics.median(tuned_us)
        pairs = [y / x for x, y in zip(own, tuned_us, strict=False) if x > 0]
        ratio = statistics.median(pairs) if pairs else math.nan
        lower = f"{sum(r < 1 for r in pairs)}/{len(pairs)}"
        k, n = to_collkit.get(b, [0, 0])
        rule = rules.lookup("allreduce", 2, b)
        t.add_row(
            str(b), rule, f"{k}/{n}" if n else "?", f"{a:.2f}", f"{c:.2f}", f"{ratio:.2f}", lower
        )
    console.print(t)
    console.print(
        "results identical both ways: "
        + ("[green]yes[/green]" if same else "[red]NO (a bug: please report it)[/red]")
    )
    console.print(
        "[dim]Times from separate runs on a shared machine move with its load; ratios below 1 "
        "are where the tuned table made the program's calls faster. The program times 1000 "
        "calls a size after 200 untimed ones, as OSU does. The library gives a communicator's "
        "first calls to the MPI until their time pays for collkit's setup of it (~0.4 ms; "
        "'calls to it' counts the rest; COLLKIT_SETUP_US, docs/mpi.md).[/dim]"
    )
    return 0 if same else 1


def split_by_size(rule: TuneRule, checked: list[int], lost: set[int]) -> list[TuneRule]:
    """`rule` cut at the sizes it was checked at: from each checked size up to the next (the
    rule's own ends outermost) it keeps its algorithm where the check held and is native where it
    did not; neighbouring parts alike are joined again."""
    cuts = sorted(s for s in checked if rule.bytes[0] <= s <= rule.bytes[1])
    starts = [rule.bytes[0], *cuts[1:]]
    ends = [*(s - 1 for s in cuts[1:]), rule.bytes[1]]
    parts: list[TuneRule] = []
    for lo, hi, size in zip(starts, ends, cuts, strict=True):
        holds = size not in lost
        if parts and (parts[-1].algorithm != "native") == holds:
            parts[-1].bytes = (parts[-1].bytes[0], hi)
            continue
        part = dataclasses.replace(rule, bytes=(lo, hi))
        if not holds:
            part.algorithm = "native"
            part.speedup = part.p_value = math.nan
            part.ci95 = (math.nan, math.nan)
            part.speedups = {}
        parts.append(part)
    return parts


def check_patterns_of(table_rules: list[TuneRule], block: int) -> list[str]:
    """The call patterns the tour checks its rules in: those tune measured them in (the rules'
    speedups), else tune's default for allreduce at the table's block."""
    from collkit.results import PATTERNS
    from collkit.tune.campaign import default_patterns, evict_seconds

    named = {p for r in table_rules for p in r.speedups}
    if named:
        return [p for p in PATTERNS if p in named]
    return default_patterns(["allreduce"], block, 50, 200, evict_seconds())


def check_rules(console: Console, mpi: MPI, tuned: Path, sizes: list[int]) -> Path:
    """Each collkit rule of the tuned table measured again against native in one job
    (interleaved, in rounds, collkit.drift), at the sizes it covers, in each call pattern tune
    measured (docs/tuning.md, "Patterns"). A rule that does not beat native in every compared
    round of every pattern, or whose comparison is suspect, is said to lose and is replaced by
    native in the table the program then runs with (collkit-tuning-checked.json): the tour never
    presents a losing rule as a win; nor one slower in the mean over ranks (what IMB reports),
    and "now" is the smaller of the two speedups. A line per pattern says whether the rules held
    in it."""
    from rich.table import Table as RTable

    from collkit.bench import BenchOptions, check_bench, run_bench
    from collkit.drift import rounds_won
    from collkit.tune.table import load, save

    table = load(tuned / "collkit-tuning.json")
    checked = tuned / "collkit-tuning-checked.json"
    ours = [
        i for i, r in enumerate(table.rules) if r.algorithm != "native" and r.source == "measured"
    ]
    if not ours:
        console.print(
            "tune chose no collkit algorithm on this machine now: the program runs with the "
            "MPI's own calls (the table routes every call to native)."
        )
        save(table, checked)
        return checked
    covered = {
        i: [s for s in sizes if table.rules[i].bytes[0] <= s <= table.rules[i].bytes[1]]
        for i in ours
    }
    check_sizes = sorted({s for ss in covered.values() for s in ss})
    algos = sorted({table.rules[i].algorithm for i in ours})
    patterns = check_patterns_of([table.rules[i] for i in ours], table.block)
    console.print(
        f"[bold cyan]$ collkit bench allreduce --algos native,{','.join(algos)} -np 2 "
        f"--sizes {','.join(map(str, check_sizes))} --block {table.block} --iters 50 "
        f"--rounds 3 --pattern PATTERN[/bold cyan]   for PATTERN in {', '.join(patterns)} "
        "(the chosen rules against native, interleaved in one job per pattern)"
    )
    (tuned / "check.jsonl").unlink(missing_ok=True)  # a fresh measurement each tour
    barrier = table.lookup("barrier", 2, 0)
    rows_of: dict[str, list[Row]] = {}
    normalize = None
    for pattern in patterns:
        opts = BenchOptions(
            "allreduce",
            ["native", *algos],
            P=[2],
            sizes=check_sizes,
            iterations=50,
            max_ms=200,
            rounds=3,
            block=table.block,  # timed as tune timed them
            pattern=pattern,
            # collkit's calls after the barrier the table routes a program's MPI_Barrier to
            barrier=barrier if pattern in ("barrier", "evict") else "",
            out=str(tuned / "check.jsonl"),
            plot=False,
        )
        plan = check_bench(opts, mpi=mpi)
        normalize = plan.campaign.normalize
        rows_of[pattern] = run_bench(plan).rows
    assert normalize is not None
    t = RTable(title="the chosen rules against native in the same job, per call pattern")
    for col in ("rule", "bytes", "pattern", "tune said", "now", "rounds won", "verdict"):
        t.add_column(col, justify="left" if col in ("rule", "pattern", "verdict") else "right")
    lost: dict[int, set[int]] = {}  # rule -> the checked sizes where it did not hold
    # pattern -> (speedup now, held) per (rule, checked size)
    held_in: dict[str, list[tuple[float, bool, int]]] = {p: [] for p in patterns}
    for i in ours:
        rule = table.rules[i]
        name = normalize(rule.algorithm)
        for nbytes in covered[i]:
            for pattern, rows in rows_of.items():
                native = next(
                    (x for x in rows if x.algorithm == "native" and x.bytes == nbytes), None
                )
                row = next((x for x in rows if x.algorithm == name and x.bytes == nbytes), None)
                ok, speedup = False, math.nan
                if row is None or native is None or row.error:
                    verdict, now, won_s = "[red]could not be measured: not used[/red]", "", ""
                else:
                    won = rounds_won(row)
                    speedup = native.median_us / row.median_us
                    # and in the mean over ranks (IMB's t_avg), where the rows have it
                    in_mean = (
                        native.rank_mean_median_us / row.rank_mean_median_us
                        if row.rank_mean_median_us > 0
                        else math.nan
                    )
                    if math.isfinite(in_mean):
                        speedup = min(speedup, in_mean)
                    now = f"{speedup:.2f}x"
                    won_s = f"{sum(won)}/{len(won)}"
                    if row.suspect:
                        verdict = f"[yellow]suspect ({row.suspect}): not used[/yellow]"
                    elif won and all(won) and math.isfinite(in_mean) and in_mean <= 1.0:
                        verdict = "[red]slower in the mean over ranks: not used[/red]"
                    elif won and all(won):
                        verdict, ok = "[green]holds[/green]", True
                    elif won and any(won):
                        # Faster in some rounds, not in all: not trusted with a program's calls.
                        verdict = (
                            f"[red]lost {len(won) - sum(won)} of {len(won)} rounds to native: "
                            "not used[/red]"
                        )
                    else:
                        verdict = "[red]LOSES to native here: not used[/red]"
                if not ok:
                    lost.setdefault(i, set()).add(nbytes)
                held_in[pattern].append((speedup, ok, nbytes))
                said = rule.speedups.get(pattern, rule.speedup)
                t.add_row(
                    rule.algorithm,
                    str(nbytes),
                    pattern,
                    "" if math.isnan(said) else f"{said:.2f}x",
                    now,
                    won_s,
                    verdict,
                )
    console.print(t)
    for pattern, results in held_in.items():
        console.print(pattern_line(pattern, results))
    table.rules = [
        part
        for i, r in enumerate(table.rules)
        for part in (split_by_size(r, covered[i], lost.get(i, set())) if i in lost else [r])
    ]
    save(table, checked)
    if lost:
        n = sum(len(v) for v in lost.values())
        console.print(
            f"{n} checked size(s) did not hold against native in the same job in every pattern: "
            f"{checked} routes the bytes from each of them up to the next checked size to native."
        )
    else:
        console.print(f"every chosen rule held in every pattern: {checked} is the table as tuned.")
    return checked


def pattern_line(pattern: str, results: list[tuple[float, bool, int]]) -> str:
    """One pattern's verdict over the checked (rule, size)s: the speedups now, held or not."""
    speedups = [x for x, _, _ in results if not math.isnan(x)]
    span = (
        f"{min(speedups):.2f}x" if len(set(speedups)) == 1 else
        f"{min(speedups):.2f}x..{max(speedups):.2f}x"
    ) if speedups else "not measured"  # fmt: skip
    failed = sorted({b for _, ok, b in results if not ok})
    if not failed:
        return f"pattern {pattern}: speedup {span}: [green]held[/green]"
    where = ", ".join(f"{b} B" for b in failed)
    return f"pattern {pattern}: speedup {span}: [red]did not hold[/red] (at {where})"
