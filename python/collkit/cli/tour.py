"""A guided tour of collkit on this machine: list the algorithms, show a schedule, prove it
correct over a sweep of process counts, simulate it, run it on the local MPI against the
native collective, tune allreduce and run an unmodified MPI program with the winners, and leave
the results (tables, pictures, trace files, tuning files) in one folder.

Each step prints the command that does the same on its own, so the tour teaches the CLI.

Examples:
  collkit tour                      everything, results in ./collkit-tour/
  collkit tour --out /tmp/t --quick a shorter sweep
  collkit tour --skip mpi --skip tune   without the MPI steps
"""

from __future__ import annotations

import argparse
import shlex
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.rule import Rule

from collkit.cli._common import output_dir

NAME = "tour"
HELP = "a guided tour on this machine: show, verify, simulate, run and tune algorithms"

STEPS = ["algorithms", "show", "verify", "export", "simulate", "nodes", "mpi", "tune"]


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
    console = Console()
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
        "5. Simulated under the pipelining postal model (Ruefenacht et al. 2017's parameters), with a timeline",
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
    console.print(Rule())
    console.print(f"results are in [bold]{out}/[/bold]")
    for f in sorted(out.rglob("*")):
        if f.is_file():
            console.print(f"  {f}")
    return 1 if failures else 0


def _tune(console: Console, out: Path, quick: bool) -> int:
    """collkit tune, then an ordinary MPI program (mpi/examples/plain_allreduce.c) run plainly
    and under `collkit run --tuning`: the same results, collkit's algorithms where they won."""
    import subprocess

    from collkit.errors import CollkitError
    from collkit.mpi import find_mpi, launch_command, launch_env, source_dir

    tuned = out / "tune"
    code = _run(
        console,
        [
            "tune", "allreduce", "-np", "2", "--sizes", "8B..4KiB" if quick else "8B..32KiB",
            "--iters", "50", "--max-ms", "200", "--top-k", "1", "-o", str(tuned),
        ],
    )  # fmt: skip
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
    table = str(tuned / "collkit-tuning.json")
    return _run(console, ["run", "-np", "2", "--tuning", table, "--verbose", "--", str(app)])
