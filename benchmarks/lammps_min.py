"""LAMMPS's minimization example under `collkit run --tuning` on Open MPI: does an
unmodified program spend less time in collectives than with the MPI's own calls?

The input is Debian's `examples/min/in.min` (a 2-d Lennard-Jones melt, then a minimization) with
its dynamics run for --steps steps instead of 1000 (10,000: ~16,000 allreduces, 70 % of them the
4-byte MPI_INT MPI_MAX of the neighbour-list check; as shipped, ~3,400 calls do not pay back
collkit's setup of the communicator). `collkit tune allreduce bcast --sizes 4B..64B` writes the
table (resumable: tune measures nothing twice), then native (an empty table: the library loaded,
every call to the MPI) and tuned runs alternate, --rounds rounds. Per run: the time in
collectives summed over the ranks (COLLKIT_STATS: each rank's calls x mean, every call, the setup
included; a rank that waits for the slower one counts its wait), world rank 0's alone beside it,
LAMMPS's loop times and a hash of its thermo output, which must be the same every run. Runs are
appended to DIR/runs.jsonl as they finish: rerun the command to continue. The comparison is
paired by round, the order alternating (A B B A: the machine's load moves between rounds): the
ratio tuned / native per round, its median and quartiles, and a Wilcoxon signed-rank test of the
differences.

    .venv/bin/python benchmarks/lammps_min.py [--np 2] [--steps 10000] [--rounds 60] [-o DIR]

Prints and writes benchmarks/results/lammps-min.md.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

from scipy.stats import wilcoxon

from collkit.bench import machine_name
from collkit.mpi import find_mpi_of_kind
from collkit.mpi.stats import read_stats, time_in_collectives_us
from tune_loop import hogs, run_way, tune, winners

HERE = Path(__file__).resolve().parent
RESULT = HERE / "results" / "lammps-min.md"
EXAMPLE = Path("/usr/share/lammps/examples/min/in.min")
WAYS = ("native", "tuned")


def one_run(way: str, mpi: Any, args: argparse.Namespace, cmd: list[str], out: Path) -> dict:
    tables = {"native": out / "native.json", "tuned": out / "collkit-tuning.json"}
    text, _ = run_way(way, mpi, args.np, cmd, tables, out, stats=True)
    rows = read_stats(out / f"stats-{way}.jsonl", rank=None)
    per_rank = time_in_collectives_us(rows)
    per: dict[str, list[float]] = {}  # bytes -> [calls, total us] of the allreduces, all ranks
    for r in rows:
        if r.collective == "allreduce":
            c = per.setdefault(str(r.bytes), [0, 0.0])
            c[0] += r.iterations
            c[1] += r.iterations * r.mean_us
    thermo = "\n".join(ln for ln in text.splitlines() if re.match(r"\s+\d+\s", ln))
    return {
        "way": way,
        "colls_us": sum(per_rank.values()),  # summed over the ranks
        "colls_us_rank0": per_rank.get(0, float("nan")),
        "ranks": len(per_rank),
        "loops_s": [float(x) for x in re.findall(r"Loop time of ([\d.]+)", text)],
        "thermo": hashlib.sha256(thermo.encode()).hexdigest()[:16],
        "allreduce": per,
        "load": os.getloadavg()[0],
    }


def many(run: dict) -> list[str]:
    """The allreduce sizes a run called 100 times or more (the rest are one-off calls)."""
    return sorted((b for b, c in run["allreduce"].items() if c[0] >= 100), key=int)


def rule_for(table: dict, collective: str, nbytes: int, p: int) -> dict | None:
    """The table's rule for a call of `nbytes` at P = `p`, else None (the call goes to the MPI)."""
    for rule in table["rules"]:
        lo, hi = rule["bytes"]
        fits = rule["P"][0] <= p <= rule["P"][1] and lo <= nbytes <= hi
        if rule["collective"] == collective and fits:
            return rule
    return None


def predicted_ratio(native: dict, table: dict, p: int, free: bool = False) -> float:
    """What the table can save in one native run: each routed allreduce's calls times the
    rule's gain per call as tune timed it (native_median_us - median_us, after a barrier), taken
    from that run's time in collectives; the rest of that time (waiting for the slower rank,
    the unrouted calls) no algorithm shortens. Returns predicted tuned / native; with `free`, as
    if each routed call cost nothing (the bound of any algorithm)."""
    saved = 0.0
    for b, (calls, _) in native["allreduce"].items():
        rule = rule_for(table, "allreduce", int(b), p)
        if rule and rule.get("median_us") is not None and rule.get("native_median_us") is not None:
            cost = 0.0 if free else rule["median_us"]
            saved += calls * (rule["native_median_us"] - cost)
    return float((native["colls_us"] - saved) / native["colls_us"])


def report(runs: list[dict], args: argparse.Namespace, table: dict, mpi: Any, n_hogs: int) -> str:
    by_round: dict[int, dict[str, dict]] = {}
    for r in runs:
        by_round.setdefault(r["round"], {})[r["way"]] = r
    pairs = [v for v in by_round.values() if all(w in v for w in WAYS)]
    if not pairs:
        return f"No complete round with {n_hogs} hogs yet.\n"
    ratio = [p["tuned"]["colls_us"] / p["native"]["colls_us"] for p in pairs]
    rank0 = [p["tuned"]["colls_us_rank0"] / p["native"]["colls_us_rank0"] for p in pairs]
    diff = [p["tuned"]["colls_us"] - p["native"]["colls_us"] for p in pairs]
    thermo = {r["thermo"] for r in runs}
    loads = [r["load"] for r in runs]
    load = f"{n_hogs} niced CPU hogs running" if n_hogs else "no background load started"
    lines = [
        f"# LAMMPS's minimization example: time in collectives, tuned against native ({load})",
        "",
        f"- machine: {machine_name()}, {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"load {min(loads):.1f}-{max(loads):.1f} over the runs; {mpi.version}, Debian's LAMMPS, "
        f"P = {args.np}.",
        f"- input: `{EXAMPLE}` with `run {args.steps}` (the dynamics; the minimization as "
        "shipped).",
        f"- command: `.venv/bin/python benchmarks/lammps_min.py --np {args.np} --steps "
        f"{args.steps} --rounds {args.rounds} --hogs {n_hogs}` (runs kept in "
        f"{args.out}/runs.jsonl).",
        "",
    ]
    lines += winners(table)
    lines += [
        "",
        f"Thermo output identical in every run: {'yes' if len(thermo) == 1 else 'NO'}.",
        "",
        "| way | runs | time in collectives, summed over ranks: median (q1-q3) ms | "
        "loop time median (s) | allreduce per call, mean over ranks, median of runs (us): "
        + ", ".join(f"{b} B" for b in many(runs[0]))
        + " |",
        "| --- | ---: | --- | ---: | --- |",
    ]
    for w in WAYS:
        mine = [p[w] for p in pairs]
        c = sorted(x["colls_us"] / 1e3 for x in mine)
        q = statistics.quantiles(c, n=4) if len(c) > 1 else [c[0]] * 3
        loop = statistics.median(sum(x["loops_s"]) for x in mine)
        sizes = many(mine[0])
        per = ", ".join(
            f"{statistics.median(x['allreduce'][b][1] / x['allreduce'][b][0] for x in mine):.2f}"
            for b in sizes
        )
        lines.append(
            f"| {w} | {len(mine)} | {q[1]:.2f} ({q[0]:.2f}-{q[2]:.2f}) | {loop:.3f} | {per} |"
        )
    qr = statistics.quantiles(ratio, n=4) if len(ratio) > 1 else [ratio[0]] * 3
    p = wilcoxon(diff).pvalue if len(diff) >= 6 else float("nan")
    pred = statistics.median(predicted_ratio(q["native"], table, args.np) for q in pairs)
    free = statistics.median(predicted_ratio(q["native"], table, args.np, True) for q in pairs)
    lines += [
        "",
        f"Paired by round ({len(pairs)} rounds): tuned / native time in collectives, median "
        f"**{qr[1]:.3f}** (quartiles {qr[0]:.3f}-{qr[2]:.3f}); tuned lower in "
        f"{sum(x < 1 for x in ratio)} of {len(ratio)} rounds; Wilcoxon signed-rank test of the "
        f"differences, two-sided: p = {p:.2g}. World rank 0's time alone: median "
        f"{statistics.median(rank0):.3f}, tuned lower in {sum(x < 1 for x in rank0)} rounds (one "
        "rank's time flatters or wrongs the program's: the sum over ranks is what it spends).",
        "",
        f"The table's gain per call as tune timed it, times each native run's calls of each "
        f"routed allreduce size, taken from that run's time in collectives: **{pred:.3f}** "
        "predicted (median of rounds). The rest of the time is waiting for the slower rank and "
        "unrouted calls, which no algorithm shortens: below this ratio only a cheaper call goes "
        f"(a routed call that cost nothing: {free:.3f}).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10000, help="dynamics steps (1000 as shipped)")
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--block", type=int, default=16, help="tune --block")
    ap.add_argument("-o", "--out", type=Path, default=Path("lammps-min"))
    ap.add_argument("--hogs", type=int, default=0, help="niced CPU hogs running meanwhile")
    args = ap.parse_args()
    lmp = shutil.which("lmp")
    if not (lmp and EXAMPLE.exists()):
        sys.exit("LAMMPS is not installed: apt-get install lammps lammps-examples")
    mpi = find_mpi_of_kind("openmpi")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    table = tune(mpi, args, ["allreduce", "bcast"], "4B..64B", out)
    (out / "native.json").write_text('{"format": "collkit-tuning", "version": 1, "rules": []}\n')
    text = re.sub(r"(?m)^run\s+1000$", f"run\t\t{args.steps}", EXAMPLE.read_text())
    inp = out / f"in.min-{args.steps}"
    inp.write_text(text)
    cmd = [lmp, "-in", str(inp), "-log", "none", "-nocite"]
    log = out / "runs.jsonl"
    runs = [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []
    rank0 = sum("ranks" not in r for r in runs)
    if rank0:  # a run without "ranks" holds world rank 0's time alone, not the sum over ranks
        print(f"{rank0} runs of {log} hold world rank 0's time alone: left out, measured again")
    runs = [r for r in runs if r.get("steps") == args.steps and "ranks" in r]
    done = {(r["round"], r["way"]) for r in runs if r.get("hogs", 0) == args.hogs}
    with hogs(args.hogs):
        for rnd in range(args.rounds):
            for way in WAYS if rnd % 2 == 0 else WAYS[::-1]:  # A B B A: drift hits both alike
                if (rnd, way) in done:
                    continue
                r = {"round": rnd, "steps": args.steps, "hogs": args.hogs,
                     **one_run(way, mpi, args, cmd, out)}  # fmt: skip
                with log.open("a") as f:
                    f.write(json.dumps(r) + "\n")
                runs.append(r)
                print(
                    f"round {rnd + 1}/{args.rounds} {way:6s} {r['colls_us'] / 1e3:7.2f} ms in "
                    f"collectives, loop {sum(r['loops_s']):.3f} s",
                    flush=True,
                )
    # One section per background load the runs file holds: quiet and loaded side by side.
    text = "\n".join(
        report([r for r in runs if r.get("hogs", 0) == h], args, table, mpi, h)
        for h in sorted({r.get("hogs", 0) for r in runs})
    )
    print(text)
    RESULT.write_text(text)
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
