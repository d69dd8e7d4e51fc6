"""The tuning loop end to end on this machine: `collkit tune` on each MPI, then
unmodified programs run three ways, alternating (A B C A B C) so that drift hits all alike:

  plain       the program alone (no collkit),
  native      under `collkit run` with an empty table: the library loaded, every call to the MPI
              (the control: the same interposition cost, the MPI's own algorithms),
  tuned       under `collkit run --tuning` with the table tune wrote.

Programs: mpi/examples/osu_loop.c (MPI_Allreduce, MPI_Reduce, MPI_Bcast 8 B .. 32 KiB and
MPI_Barrier, back-to-back loops as OSU times them) on every MPI found, and Debian's LAMMPS
(melt example, as shipped and with thermo output every step for 2500 steps) on Open MPI when
installed. The outputs must be identical (result hashes; LAMMPS's
thermo lines); the times are the program's own (per call, slowest rank) and the time in
collectives that COLLKIT_STATS counts on world rank 0 (calls x mean, every route), from runs of
their own (timing every call costs the call).

    .venv/bin/python benchmarks/tune_loop.py [--np 2] [--sizes 8,64,512,4KiB,32KiB] [--block 16]
        [--runs 5] [--iters 2000] [--mpi mpich,openmpi] [-o DIR]

Tuning is resumable (rerun to continue: tune measures nothing twice). Prints and writes
benchmarks/results/tune_loop.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from collkit.bench import machine_name
from collkit.mpi import MPI, find_mpi_of_kind, launch_command, launch_env, source_dir
from collkit.mpi.stats import read_stats, time_in_collectives_us

HERE = Path(__file__).resolve().parent
RESULT = HERE / "results" / "tune_loop.md"
COLLECTIVES = ["allreduce", "reduce", "bcast", "barrier"]
WAYS = ["plain", "native", "tuned"]
LINE = re.compile(r"^(\w+)\s+(\d+) B\s+result (\w+)\s+([\d.]+) us per call", re.M)


def collkit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collkit", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


def mpi_env(mpi: MPI) -> dict[str, str]:
    """What points `collkit` at this MPI."""
    return {"MPIEXEC": mpi.mpiexec, "MPICXX": mpi.mpicxx}


@contextlib.contextmanager
def hogs(n: int) -> Iterator[None]:
    """`n` niced CPU hogs (busy loops at nice 19) while the block runs: real nodes are never idle,
    and how a rank waits decides what such load costs it (docs/mpi.md)."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=lambda: os.nice(19))
        for _ in range(n)
    ]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def stats_us(path: Path) -> float:
    """Time in collectives on world rank 0: calls x mean over its COLLKIT_STATS rows."""
    return time_in_collectives_us(read_stats(path)).get(0, 0.0)


def run_way(
    way: str,
    mpi: MPI,
    np: int,
    cmd: list[str],
    tables: dict[str, Path],
    out: Path,
    stats: bool = False,
) -> tuple[str, float]:
    """One run of the program; its stdout and, with `stats`, the time in collectives (else
    NaN). Timing every call costs the call (two clock reads, a counter under a lock): the
    program's own times come from runs without it."""
    if way == "plain":
        env, _ = launch_env(mpi, np)
        p = subprocess.run(
            launch_command(mpi, np, cmd), env=env, capture_output=True, text=True, check=False
        )
        if p.returncode != 0:
            sys.exit(f"plain run failed: {p.stderr[-2000:]}")
        return p.stdout, float("nan")
    path = out / f"stats-{way}.jsonl"
    path.unlink(missing_ok=True)
    extra = ["--stats", str(path)] if stats else []
    p = collkit(
        "run", "-np", str(np), "--tuning", str(tables[way]), *extra, "--", *cmd,
        env=mpi_env(mpi),
    )  # fmt: skip
    if p.returncode != 0:
        sys.exit(f"collkit run ({way}) failed: {p.stderr[-2000:]}")
    return p.stdout, stats_us(path) if stats else float("nan")


def tune(
    mpi: MPI, args: argparse.Namespace, colls: list[str], sizes: str, out: Path
) -> dict[str, Any]:
    r = collkit(
        "tune", *colls, "-np", str(args.np), "--sizes", sizes, "--block", str(args.block),
        "--no-mpi-algos", "--iters", "100", "-o", str(out), env=mpi_env(mpi),
    )  # fmt: skip
    print(r.stdout)
    if r.returncode != 0:
        sys.exit(r.stderr[-3000:])
    table: dict[str, Any] = json.loads((out / "collkit-tuning.json").read_text())
    return table


def winners(table: dict[str, Any]) -> list[str]:
    lines = [f"Winners ({table['mpi']}, timed in blocks of {table.get('block', 1)} calls):", ""]
    lines += ["| collective | P | bytes | algorithm | speedup | 95% CI |"]
    lines += ["| --- | ---: | --- | --- | ---: | --- |"]
    for rule in table["rules"]:
        ci = rule["ci95"]
        sp = rule["speedup"]
        lines.append(
            f"| {rule['collective']} | {rule['P'][0]} | {rule['bytes'][0]}..{rule['bytes'][1]} | "
            f"{rule['algorithm']} | {'' if sp is None else f'{sp:.2f}'} | "
            f"{'' if ci[0] is None else f'{ci[0]:.2f}..{ci[1]:.2f}'} |"
        )
    return lines


def osu(mpi: MPI, args: argparse.Namespace, out: Path) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    table = tune(mpi, args, COLLECTIVES, args.sizes, out)
    tables = {"native": out / "native.json", "tuned": out / "collkit-tuning.json"}
    tables["native"].write_text('{"format": "collkit-tuning", "version": 1, "rules": []}\n')
    cc = Path(mpi.mpicxx).with_name(Path(mpi.mpicxx).name.replace("mpicxx", "mpicc"))
    app = out / "osu_loop"
    src = source_dir() / "mpi" / "examples" / "osu_loop.c"
    subprocess.run([str(cc), "-O2", str(src), "-o", str(app)], check=True)
    times: dict[str, dict[tuple[str, int], list[float]]] = {w: {} for w in WAYS}
    hashes: dict[str, set[str]] = {w: set() for w in WAYS}
    in_colls: dict[str, list[float]] = {w: [] for w in WAYS}
    for i in range(args.runs):
        for way in WAYS:
            text, _ = run_way(way, mpi, args.np, [str(app), str(args.iters)], tables, out)
            found = LINE.findall(text)
            if not found:
                sys.exit(f"no result lines from the {way} run:\n{text[-2000:]}")
            for coll, nbytes, _h, us in found:
                times[way].setdefault((coll, int(nbytes)), []).append(float(us))
            hashes[way].add(" ".join(f"{c}:{b}:{h}" for c, b, h, _ in found))
        for way in ("native", "tuned"):
            app_args = [str(app), str(args.iters)]
            _, coll_us = run_way(way, mpi, args.np, app_args, tables, out, stats=True)
            in_colls[way].append(coll_us)
            print(f"{mpi.kind} run {i + 1}/{args.runs} {way}: {coll_us / 1e3:.1f} ms in colls")
    same = len(set().union(*hashes.values())) == 1
    lines = [f"## {mpi.version}: osu_loop.c at P = {args.np}", ""]
    lines += winners(table)
    lines += [
        "",
        f"{args.runs} runs each way, alternating; {args.iters} calls per size (a quarter past "
        "8 KiB) after a tenth as warm-up; per call, slowest rank, median over runs.",
        f"Results identical all three ways (every rank's hash): {'yes' if same else 'NO'}.",
        "",
        "| collective | bytes | tuned rule | plain (µs) | native (µs) | tuned (µs) "
        "| tuned / native |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    from collkit.tune.table import load

    t = load(tables["tuned"])
    for coll, nbytes in sorted(times["plain"], key=lambda k: (COLLECTIVES.index(k[0]), k[1])):
        med = {w: statistics.median(times[w][(coll, nbytes)]) for w in WAYS}
        lines.append(
            f"| {coll} | {nbytes} | {t.lookup(coll, args.np, nbytes)} | {med['plain']:.3f} | "
            f"{med['native']:.3f} | {med['tuned']:.3f} | {med['tuned'] / med['native']:.2f} |"
        )
    n_us = statistics.median(in_colls["native"])
    t_us = statistics.median(in_colls["tuned"])
    lines += [
        "",
        "Times per call from runs without COLLKIT_STATS. Time in collectives on world rank 0 "
        f"from one more run each way per round with COLLKIT_STATS (every call timed, warm-up "
        f"and the first call's setup included), median of runs: native {n_us / 1e3:.2f} ms, "
        f"tuned {t_us / 1e3:.2f} ms (tuned / native {t_us / n_us:.2f}); per run: native "
        + ", ".join(f"{x / 1e3:.2f}" for x in in_colls["native"])
        + "; tuned "
        + ", ".join(f"{x / 1e3:.2f}" for x in in_colls["tuned"])
        + " ms.",
        "",
    ]
    return lines


def lammps(mpi: MPI, args: argparse.Namespace, out: Path) -> list[str]:
    """LAMMPS's melt example as Debian ships it (250 steps, thermo every 50: ~160 collective
    calls, too few to pay for collkit's setup of a communicator), and the same input with thermo
    output every step for 2500 steps (~12,600 calls): written beside the results, the example's
    file left alone."""
    lmp, melt = shutil.which("lmp"), Path("/usr/share/lammps/examples/melt/in.melt")
    if not (lmp and melt.exists()):
        return ["## LAMMPS: not installed (Debian's lammps), not run", ""]
    od = out / "lammps"
    od.mkdir(parents=True, exist_ok=True)
    table = tune(mpi, args, ["allreduce", "bcast"], "8B..4KiB", od)
    tables = {"native": od / "native.json", "tuned": od / "collkit-tuning.json"}
    tables["native"].write_text('{"format": "collkit-tuning", "version": 1, "rules": []}\n')
    long_melt = od / "in.melt-thermo1-2500"
    text = melt.read_text()
    long_melt.write_text(
        re.sub(r"(?m)^run\s+250$", "run\t\t2500", re.sub(r"(?m)^thermo\s+50$", "thermo\t\t1", text))
    )
    lines = [f"## LAMMPS melt (Debian's lammps, {mpi.version}) at P = {args.np}", ""]
    lines += winners(table)
    inputs = {
        "melt as shipped (250 steps, thermo every 50)": melt,
        "melt, thermo every step, 2500 steps (`in.melt` with those two lines changed)": long_melt,
    }
    for label, path in inputs.items():
        lines += lammps_input(mpi, args, [lmp, "-in", str(path), "-log", "none", "-nocite"],
                              tables, od, label)  # fmt: skip
    return lines


def lammps_input(
    mpi: MPI,
    args: argparse.Namespace,
    cmd: list[str],
    tables: dict[str, Path],
    od: Path,
    label: str,
) -> list[str]:
    loop: dict[str, list[float]] = {w: [] for w in WAYS}
    thermo: dict[str, set[str]] = {w: set() for w in WAYS}
    in_colls: dict[str, list[float]] = {w: [] for w in WAYS}
    for _ in range(args.runs):
        for way in WAYS:
            text, _ = run_way(way, mpi, args.np, cmd, tables, od)
            m = re.search(r"Loop time of ([\d.]+)", text)
            if m:
                loop[way].append(float(m.group(1)))
            thermo[way].add("\n".join(ln for ln in text.splitlines() if re.match(r"\s+\d+\s", ln)))
        for way in ("native", "tuned"):
            in_colls[way].append(run_way(way, mpi, args.np, cmd, tables, od, stats=True)[1])
    ident = len(set().union(*thermo.values())) == 1
    lines = [f"### {label}", ""]
    lines += [f"Thermo output identical all three ways: {'yes' if ident else 'NO'}.", ""]
    lines += [
        "Loop times from runs without COLLKIT_STATS; time in collectives (world rank 0, every "
        "call, the first call's setup included) from one more run each way per round with it.",
        "",
    ]
    lines += ["| way | loop time median (s) | time in collectives median (ms) | per run (ms) |"]
    lines += ["| --- | ---: | ---: | --- |"]
    for w in WAYS:
        c = statistics.median(in_colls[w]) if in_colls[w] else math.nan
        runs = ", ".join(f"{x / 1e3:.2f}" for x in in_colls[w])
        lines.append(
            f"| {w} | {statistics.median(loop[w]):.3f} | "
            f"{'' if c != c else f'{c / 1e3:.2f}'} | {runs} |"
        )
    return [*lines, ""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--sizes", default="8,64,512,4KiB,32KiB", help="tune sizes (osu_loop.c's)")
    ap.add_argument("--block", type=int, default=16, help="tune --block (16: loops)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--mpi", default="mpich,openmpi", help="MPIs to run (mpich, openmpi)")
    ap.add_argument("-o", "--out", type=Path, default=Path("tune-loop"))
    args = ap.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    load0 = os.getloadavg()[0]
    lines = [
        "# The tuning loop on this machine",
        "",
        f"{machine_name()}, {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC, load "
        f"{load0:.1f} at the start. Reproduce: `.venv/bin/python benchmarks/tune_loop.py --np "
        f"{args.np} --sizes {args.sizes} --block {args.block} --runs {args.runs} --iters "
        f"{args.iters} --mpi {args.mpi}`.",
        "",
    ]
    for kind in args.mpi.split(","):
        mpi = find_mpi_of_kind(kind)
        lines += osu(mpi, args, out / kind)
        if kind == "openmpi":
            lines += lammps(mpi, args, out / kind)
    lines.append(f"Load at the end: {os.getloadavg()[0]:.1f}.")
    text = "\n".join(lines) + "\n"
    print(text)
    RESULT.write_text(text)
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
