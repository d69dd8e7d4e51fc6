"""The tuning loop end to end on this machine, longer than the tests: `collkit tune` on the pip
MPICH (resumable: rerun to continue), then unmodified programs with and without the table,
alternating runs so that drift hits both alike:

  - mpi/examples/plain_allreduce.c (MPI_Allreduce 8 B .. 32 KiB) on the pip MPICH,
  - LAMMPS from Debian (Open MPI) running its melt example, when installed (the table is
    re-tuned on Open MPI first, into OUT/openmpi/).

    .venv/bin/python benchmarks/tune_loop.py [--np 2] [--sizes 8B..1MiB] [--runs 3] [-o DIR]

Prints and writes benchmarks/results/tune_loop.md with the winners, the per-size times of the
plain program both ways, LAMMPS's loop time both ways, and whether the outputs were identical.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from collkit.bench import machine_name
from collkit.mpi import find_mpi, find_mpi_of_kind, launch_command, launch_env, source_dir

HERE = Path(__file__).resolve().parent
RESULT = HERE / "results" / "tune_loop.md"


def collkit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collkit", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--sizes", default="8B..32KiB")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("-o", "--out", type=Path, default=Path("tune-loop"))
    args = ap.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        "# The tuning loop on this machine",
        "",
        f"{machine_name()}, {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC. Reproduce: "
        f"`.venv/bin/python benchmarks/tune_loop.py --np {args.np} --sizes {args.sizes} "
        f"--runs {args.runs}`.",
        "",
    ]
    # 1. tune on the pip MPICH.
    r = collkit("tune", "allreduce", "-np", str(args.np), "--sizes", args.sizes, "-o", str(out))
    print(r.stdout)
    if r.returncode != 0:
        sys.exit(r.stderr[-3000:])
    table = json.loads((out / "collkit-tuning.json").read_text())
    lines += [f"## Winners ({table['mpi']})", "", "| P | bytes | algorithm | speedup | 95% CI |"]
    lines += ["| ---: | --- | --- | ---: | --- |"]
    for rule in table["rules"]:
        ci = rule["ci95"]
        lines.append(
            f"| {rule['P'][0]} | {rule['bytes'][0]}..{rule['bytes'][1]} | {rule['algorithm']} | "
            f"{rule['speedup'] or ''} | {'' if ci[0] is None else f'{ci[0]:.2f}..{ci[1]:.2f}'} |"
        )
    # 2. the plain program both ways, alternating.
    mpi = find_mpi()
    cc = Path(mpi.mpicxx).with_name(Path(mpi.mpicxx).name.replace("mpicxx", "mpicc"))
    app = out / "plain_allreduce"
    src = source_dir() / "mpi" / "examples" / "plain_allreduce.c"
    subprocess.run([str(cc), str(src), "-o", str(app)], check=True)
    env, _ = launch_env(mpi, args.np)
    times: dict[str, dict[int, list[float]]] = {"plain": {}, "collkit run": {}}
    results: dict[str, set[str]] = {"plain": set(), "collkit run": set()}
    for _ in range(args.runs):
        for how in times:
            if how == "plain":
                p = subprocess.run(
                    launch_command(mpi, args.np, [str(app)]), env=env, capture_output=True,
                    text=True, check=True,
                )  # fmt: skip
            else:
                p = collkit("run", "-np", str(args.np), "--tuning",
                            str(out / "collkit-tuning.json"), "--", str(app))  # fmt: skip
            for m in re.finditer(r"(\d+) B\s+result (\w+)\s+([\d.]+) us", p.stdout):
                times[how].setdefault(int(m.group(1)), []).append(float(m.group(3)))
            results[how].add(re.sub(r"\s+[\d.]+ us per call", "", p.stdout))
    same = results["plain"] == results["collkit run"] and len(results["plain"]) == 1
    lines += ["", f"## plain_allreduce at P = {args.np}, {args.runs} alternating runs each", ""]
    lines += [f"Results identical with and without the library: {'yes' if same else 'NO'}.", ""]
    lines += ["| bytes | plain median (µs) | collkit run median (µs) | plain / collkit |"]
    lines += ["| ---: | ---: | ---: | ---: |"]
    for size in sorted(times["plain"]):
        a = statistics.median(times["plain"][size])
        b = statistics.median(times["collkit run"].get(size, [float("nan")]))
        lines.append(f"| {size} | {a:.2f} | {b:.2f} | {a / b:.2f} |")
    # 3. LAMMPS on Open MPI, when installed.
    lmp, melt = shutil.which("lmp"), Path("/usr/share/lammps/examples/melt/in.melt")
    if lmp and melt.exists() and shutil.which("mpirun.openmpi"):
        oenv = {"MPIEXEC": "mpirun.openmpi", "MPICXX": "mpicxx.openmpi"}
        od = out / "openmpi"
        r = collkit("tune", "allreduce", "bcast", "-np", str(args.np), "--sizes", "8B..4KiB",
                    "--iters", "50", "--top-k", "1", "-o", str(od), env=oenv)  # fmt: skip
        ok = r.returncode == 0
        loop: dict[str, list[float]] = {"plain": [], "collkit run": []}
        thermo: dict[str, set[str]] = {"plain": set(), "collkit run": set()}
        ompi = find_mpi_of_kind("openmpi")
        cmd = [lmp, "-in", str(melt), "-log", "none", "-nocite"]
        for _ in range(args.runs if ok else 0):
            for how in loop:
                if how == "plain":
                    full, _ = launch_env(ompi, args.np)
                    p = subprocess.run(launch_command(ompi, args.np, cmd), env=full,
                                       capture_output=True, text=True, check=False)  # fmt: skip
                else:
                    p = collkit("run", "-np", str(args.np), "--tuning",
                                str(od / "collkit-tuning.json"), "--", *cmd, env=oenv)  # fmt: skip
                m = re.search(r"Loop time of ([\d.]+)", p.stdout)
                if m:
                    loop[how].append(float(m.group(1)))
                thermo[how].add(
                    "\n".join(ln for ln in p.stdout.splitlines() if re.match(r"\s+\d+\s", ln))
                )
        lines += ["", f"## LAMMPS melt (Debian, Open MPI) at P = {args.np}", ""]
        if not ok or not loop["plain"]:
            lines.append(f"not run: {r.stderr[-300:]}")
        else:
            ident = thermo["plain"] == thermo["collkit run"]
            lines.append(f"Thermo output identical: {'yes' if ident else 'NO'}.")
            lines.append("")
            lines.append("| | loop time median (s) | runs |")
            lines.append("| --- | ---: | ---: |")
            for how, ts in loop.items():
                lines.append(f"| {how} | {statistics.median(ts):.3f} | {len(ts)} |")
    text = "\n".join(lines) + "\n"
    print(text)
    RESULT.write_text(text)
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
