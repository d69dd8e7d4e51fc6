"""A load change injected into a campaign: CPU hogs (busy processes, 2 per core) run from the
start and are stopped the moment the first row is written (the load falls mid-campaign, as it
does on a shared machine). Three campaigns, each under the same injection, P = 2, MPICH wheel:

1. `collkit bench --no-interleave` (one job per algorithm, not interleaved): native / rd per size;
2. `collkit bench` (interleaved, the default): the same, with rounds won and suspect flags;
3. `collkit tune --only rd --no-mpi-algos`: the verdicts and the table it writes.

For 1 and 2 the table also gives the verdict of a rule that ignores the rounds (the
"pooled rule" column: a Mann-Whitney U test, p < 0.01, and a bootstrap CI of the speedup above 1, on
the pooled samples), to show what drift does to a test that pools the samples.

Writes benchmarks/results/tune_drift.md (machine, date, load, commands) and the row files beside
it. Short: a few minutes on a loaded 2-core machine.

  .venv/bin/python benchmarks/tune_drift.py [--sizes 8,64,1KiB] [--iters 30]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from collkit.bench import machine_name
from collkit.drift import rounds_won
from collkit.results import read_jsonl
from collkit.tune import compare
from collkit.tune import load as load_table

RESULTS = Path(__file__).resolve().parent / "results"


def uptime() -> str:
    return ", ".join(Path("/proc/loadavg").read_text().split()[:3])


def with_hogs(cmd: list[str], watch: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    """Runs `cmd` with hogs that stop when `watch` gets its first row; returns the run and the
    seconds the hogs ran."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(2 * (os.cpu_count() or 1))
    ]
    t0 = time.monotonic()
    ran = [0.0]
    done = threading.Event()

    def stop() -> None:
        while not done.is_set() and not (watch.exists() and watch.stat().st_size > 0):
            time.sleep(0.01)
        for h in hogs:
            h.kill()
        ran[0] = time.monotonic() - t0

    th = threading.Thread(target=stop, daemon=True)
    th.start()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    finally:
        done.set()
        th.join()
        for h in hogs:
            h.kill()
            h.wait()
    if r.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)} failed:\n{r.stderr[-3000:]}")
    return r, ran[0]


def bench_table(path: Path) -> list[str]:
    rows = read_jsonl(path)
    out = [
        "| bytes | native median µs | rd median µs | native / rd | pooled rule (U test + CI) "
        "| rd beat native in rounds | suspect | load_avg_1m | probe ns before / after |",
        "|---:|---:|---:|---:|---|---|---|---:|---|",
    ]
    for nbytes in sorted({r.bytes for r in rows}):
        n = next(r for r in rows if r.algorithm == "native" and r.bytes == nbytes)
        c = next(r for r in rows if r.algorithm == "allreduce:rd" and r.bytes == nbytes)
        won = rounds_won(c) if c.interleaved else []
        cmp = compare(c.algorithm, c.samples, n.samples)
        old = "win" if cmp.p_value < 0.01 and cmp.ci95[0] > 1 else "no win"
        out.append(
            f"| {nbytes} | {n.median_us:.2f} | {c.median_us:.2f} | "
            f"{n.median_us / c.median_us:.2f}x | "
            f"{old} (p = {cmp.p_value:.1e}, CI {cmp.ci95[0]:.2f}..{cmp.ci95[1]:.2f}) | "
            f"{f'{sum(won)}/{len(won)}' if c.interleaved else 'not interleaved'} | "
            f"{c.suspect or '-'} | {c.load_avg_1m:.1f} | "
            f"{c.probe_rtt_ns_before:.0f} / {c.probe_rtt_ns_after:.0f} |"
        )
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sizes", default="8,64,1KiB")
    p.add_argument("--iters", default="30")
    a = p.parse_args()
    exe = [sys.executable, "-m", "collkit"]
    lines = [
        "# A load change injected mid-campaign: bench and tune, one job per algorithm and "
        "interleaved",
        "",
        f"Machine: {machine_name()}, {os.cpu_count()} cores. Date: "
        f"{_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds')}. "
        f"Load (1, 5, 15 min) at the start: {uptime()}.",
        "",
        f"Injection: {2 * (os.cpu_count() or 1)} busy processes from the start of each campaign, "
        "killed the moment the first row reaches the row file (the load falls mid-campaign). "
        "MPICH wheel, P = 2. Reproduce: `.venv/bin/python benchmarks/tune_drift.py`.",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for title, extra in (
            (
                "1. `collkit bench --no-interleave` (one job per algorithm)",
                ["--no-interleave"],
            ),
            ("2. `collkit bench` (interleaved: the default)", []),
        ):
            out = Path(tmp) / f"b{len(extra)}.jsonl"
            cmd = [
                *exe, "bench", "allreduce", "--algos", "native,rd", "-np", "2", "--sizes",
                a.sizes, "--iters", a.iters, "--raw", "--no-plot", "-o", str(out), *extra,
            ]  # fmt: skip
            _, ran = with_hogs(cmd, out)
            lines += [
                f"## {title}",
                "",
                f"`{shlex.join(['collkit', *cmd[3:]]).replace(tmp, 'OUT')}`; the hogs ran "
                f"{ran:.1f} s; load after: {uptime()}.",
                "",
                *bench_table(out),
                "",
            ]
            (RESULTS / f"tune_drift-bench{'-old' if extra else ''}.jsonl").write_text(
                out.read_text()
            )
        tdir = Path(tmp) / "tune"
        cmd = [
            *exe, "tune", "allreduce", "-np", "2", "--sizes", a.sizes, "--only", "rd",
            "--no-mpi-algos", "--iters", a.iters, "--max-ms", "200", "--no-plot", "-o", str(tdir),
        ]  # fmt: skip
        r, ran = with_hogs(cmd, tdir / "tune.jsonl")
        table = load_table(tdir / "collkit-tuning.json")
        rows = read_jsonl(tdir / "tune.jsonl")
        lines += [
            "## 3. `collkit tune` (interleaved, suspect rows re-measured)",
            "",
            f"`{shlex.join(['collkit', *cmd[3:]]).replace(tmp, 'OUT')}`; the hogs ran {ran:.1f} s; "
            f"load after: {uptime()}.",
            "",
            "Rows (every attempt):",
            "",
            "| algorithm | bytes | attempt | median µs | rounds won | suspect | load_avg_1m |",
            "|---|---:|---:|---:|---|---|---:|",
        ]
        for x in rows:
            won = rounds_won(x) if x.algorithm != "native" else []
            lines.append(
                f"| {x.algorithm} | {x.bytes} | {x.attempt} | {x.median_us:.2f} | "
                f"{f'{sum(won)}/{len(won)}' if won else '-'} | {x.suspect or '-'} | "
                f"{x.load_avg_1m:.1f} |"
            )
        lines += ["", "The table it wrote (collkit-tuning.json):", "", "```"]
        lines += [
            f"{x.collective} P={x.P[0]} bytes {x.bytes[0]}..{x.bytes[1]}: {x.algorithm}"
            + (f" (speedup {x.speedup:.2f})" if x.algorithm != "native" else "")
            for x in table.rules
        ]
        lines += ["```", "", "Its screen table:", "", "```", r.stdout.rstrip(), "```", ""]
        (RESULTS / "tune_drift-tune.jsonl").write_text((tdir / "tune.jsonl").read_text())
    lines.append(f"Load at the end: {uptime()}.")
    (RESULTS / "tune_drift.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(json.dumps({"wrote": str(RESULTS / "tune_drift.md")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
