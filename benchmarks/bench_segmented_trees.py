"""A segmented tree against the pipeline with the same segment on a large user-op reduce.

reduce:binomial(seg=1KiB) and reduce:pipeline(seg=1KiB), root 0, one MPI_Op_create sum of doubles
(tests/programs/seg_reduce.c through collkit's C API, each result checked against MPI_Reduce), at
P = 2 (fits the 2 cores) and P = 4 (oversubscribed: two ranks a core, so times there are the
scheduler's as much as collkit's). Each (P, algorithm) runs in pairs A B A B ...: A a build of
libcollkit_mpi.so given with --before (an older tree's), B this tree's (or --after's); one
process a run, CALLS calls each, the seconds a call of rank 0 reported. Alongside, from B's
COLLKIT_VERBOSE=3 line: rank 0's tries of a shared-memory message per message, and the most
messages it held started and unable to move at once (load-independent: the bound is the channels'
windows); "in turn" where rank 0's plan runs in turn (the root of a P = 2 reduce only receives),
which prints no counts. Without --before, B alone.

    .venv/bin/python benchmarks/bench_segmented_trees.py [--before DIR] [--after DIR] [--mb 25]
        [--pairs 3] [--calls 1] [-P 2,4]

Prints a table and writes benchmarks/results/segmented-trees.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from collkit.mpi import build, find_mpi_of_kind, launch_command, launch_env, source_dir

OUT = Path(__file__).resolve().parent / "results" / "segmented-trees.md"
ALGOS = ("reduce:binomial(seg=1KiB)", "reduce:pipeline(seg=1KiB)")
COUNTS = re.compile(
    r"rank 0: (\d+) shm messages, (\d+) tries in (\d+) passes, (\d+) waiting at most"
)


def compile_against(mpicc: Path, libdir: Path, exe: Path) -> None:
    src = source_dir() / "tests" / "programs" / "seg_reduce.c"
    cmd = [str(mpicc), "-std=c11", "-O2", str(src), f"-I{source_dir() / 'mpi' / 'include'}",
           f"-L{libdir}", "-lcollkit_mpi", f"-Wl,-rpath,{libdir}", "-o", str(exe)]  # fmt: skip
    subprocess.run(cmd, check=True)


def one(mpi: object, exe: Path, P: int, algo: str, nbytes: int, calls: int) -> dict[str, float]:
    env, _ = launch_env(mpi, P, {"COLLKIT_VERBOSE": "3"})  # type: ignore[arg-type]
    load = os.getloadavg()[0]
    cmd = launch_command(mpi, P, [str(exe), algo, str(nbytes), "user", str(calls)])  # type: ignore[arg-type]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800, check=False)
    m = re.search(r"ok P=\d+ .* us_per_call=([\d.]+)", r.stdout)
    if r.returncode != 0 or m is None:
        sys.exit(f"{algo} P={P} failed:\n{r.stdout}\n{r.stderr[-3000:]}")
    row: dict[str, float] = {"s": float(m.group(1)) / 1e6, "load": load}
    runs = COUNTS.findall(r.stderr)
    if runs:  # a build with the counts (COLLKIT_VERBOSE=3)
        msgs = sum(int(x[0]) for x in runs)
        row["tries"] = sum(int(x[1]) for x in runs) / max(msgs, 1)
        row["passes"] = sum(int(x[2]) for x in runs) / max(msgs, 1)
        row["most"] = max(int(x[3]) for x in runs)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", type=Path, help="a folder holding an older libcollkit_mpi.so")
    ap.add_argument("--after", type=Path, help="B's folder (default: this tree's build)")
    ap.add_argument("--mb", type=float, default=25.0, help="the reduced vector, MB (default 25)")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--calls", type=int, default=1, help="calls per run (default 1)")
    ap.add_argument("-P", default="2,4")
    args = ap.parse_args()
    mpi = find_mpi_of_kind("mpich")
    mpicc = Path(mpi.mpicxx).with_name("mpicc")
    nbytes = int(args.mb * 1e6) // 8 * 8
    tmp = Path(tempfile.mkdtemp(prefix="segtrees-"))
    after = args.after.resolve() if args.after else build(mpi, ["libcollkit_mpi.so"])
    builds = {"B": after}
    if args.before is not None:
        builds = {"A": args.before.resolve(), **builds}
    exes = {}
    for k, d in builds.items():
        exes[k] = tmp / f"seg_reduce_{k}"
        compile_against(mpicc, d, exes[k])
    start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows = []
    for P in (int(x) for x in args.P.split(",")):
        for algo in ALGOS:
            got: dict[str, list[dict[str, float]]] = {k: [] for k in builds}
            for _ in range(args.pairs):
                for k in builds:  # A B A B ...
                    got[k].append(one(mpi, exes[k], P, algo, nbytes, args.calls))
            rows.append((P, algo, got))
            print(P, algo, {k: [round(x["s"], 2) for x in v] for k, v in got.items()}, flush=True)

    def med(v: list[dict[str, float]], key: str) -> float:
        return statistics.median(x[key] for x in v)

    head = "| P | algorithm | " + " | ".join(f"{k} s/call (runs)" for k in builds)
    head += " | B / A |" if "A" in builds else " |"
    head += " B tries / msg | B passes / msg | B most waiting | load (min-max) |"
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for P, algo, got in rows:
        cells = [str(P) + (" (oversubscribed)" if P > 2 else ""), f"`{algo}`"]
        for k in builds:
            runs = ", ".join(f"{x['s']:.2f}" for x in got[k])
            cells.append(f"{med(got[k], 's'):.2f} ({runs})")
        if "A" in builds:
            ratios = [b["s"] / a["s"] for a, b in zip(got["A"], got["B"], strict=True)]
            cells.append(f"{statistics.median(ratios):.3f}")
        b = got["B"]
        if "tries" not in b[0]:
            cells += ["in turn"] * 3
            b = []
        cells += (
            []
            if not b
            else [
                f"{med(b, 'tries'):.1f}",
                f"{med(b, 'passes'):.2f}",
                f"{max(x['most'] for x in b):.0f}",
            ]
        )
        loads = [x["load"] for v in got.values() for x in v]
        cells.append(f"{min(loads):.1f}-{max(loads):.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print(table)
    cmd = "benchmarks/bench_segmented_trees.py " + " ".join(sys.argv[1:])
    OUT.write_text(
        "# Segmented tree against pipeline, large user-op reduce\n\n"
        f"- command: `.venv/bin/python {cmd.strip()}`\n"
        f"- machine: {platform.node()}, {os.cpu_count()} cores, "
        f"{platform.processor() or platform.machine()}; MPI: {mpi.kind} ({mpi.mpicxx})\n"
        f"- date: {start}; load (1-minute average) per run in the table\n"
        f"- {args.mb:g} MB of doubles, one MPI_Op_create sum, root 0, {args.calls} call(s) a run, "
        f"{args.pairs} runs each, interleaved "
        + ("A B A B (A: `--before`, a build whose loop tries every started message; B: this "
           "tree's, which tries at most the ring's window a channel)"
           if "A" in builds else "(B: this tree)")
        + "; B / A: median of the pairs' ratios; tries, passes: rank 0's per shared-memory "
        "message; most waiting: rank 0's most messages started and unable to move at once\n\n"
        + table + "\n"
    )  # fmt: skip
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
