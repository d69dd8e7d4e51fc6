"""Simulated events per second, whole-command time and peak memory of the simulator.

Suites:
- `engine` (default): allreduce:rd at P = 2^10, 2^16, 2^20 through `collkit.simulate` (programs
  pulled from the generator as the simulation reaches each rank), and many noisy trials at
  P = 2^12. An event is an op or a message.
- `command`: the whole `collkit simulate allreduce:rd -P 2^20 --bytes 8 --model loggops` command
  (Python start, generation, simulation, output), three runs: min and median (goal: < 5 s).
- `all`: the whole command for every registry algorithm at P = 2^20, 8 B, loggops (goal: < 60 s);
  a command still running after `--limit` seconds (default 120) is stopped and named, with its
  op count and the generator's time per rank measured at smaller P (what makes it slow).
- `export`: `collkit export ALGO -P N -o x.{goal,json}` and to stdout (streamed) at growing P:
  peak RSS should not grow with P.
- `import`: `collkit simulate --file x.{txt,goal,json}` of allreduce:rd saved at `--lg` (lg P,
  default 12,15,17), and plain GOAL files shaped as Schedgen writes them (rd, dissemination,
  binomial bcast: collkit's GOAL export without its comment lines, so messages pair by tag):
  peak RSS should not grow with P (every format streams; a plain GOAL file is read twice) and
  a 2^20-rank rd GOAL file should take <= 4 s, a plain one <= 1 GB. With `--against DIR`: the
  same files read by another build (A) and this one (B), interleaved A B A B (`--repeat`
  rounds, at least 2): CPU time, B / A and peak RSS; the two must print the same result.
- `large`: the whole command at P = 2^24 for allreduce:rd, allreduce:rabenseifner and
  bcast:binomial (goal: peak RSS < 8 GiB), with the peak RSS per rank.
- `memory`: peak RSS of `collkit.simulate` (the whole process, each case fresh) against
  `collkit.simulate.memory_estimate`, for allreduce:rd, allreduce:rabenseifner and
  bcast:binomial at P = 2^16 .. 2^20 (`--max-lg` for more), 8 B, LogGOPS and postal
  (goal: the estimate within 25 %).
- `compare --against DIR`: this build (B) against another (A: a copy of an installed `collkit`
  package in DIR, put first on PYTHONPATH), interleaved A B A B over `--rounds` rounds on the
  engine's cases (or `--cases`): the engine's CPU time (load + run, the best of 3 calls in one
  process), the ratio B / A per round, its median and range, events per CPU second, the
  engine's wall time and the peak RSS. The makespans and event counts must agree.

Each case runs in a fresh subprocess so that its peak resident memory (ru_maxrss) is its own.
Times are given as wall clock and as CPU time (user + system) of the process: on a shared machine
the CPU time is what the work cost, the wall time what this run waited. Prints a table and
writes it, with the machine, load, date and command, as the suite's section of
benchmarks/results/bench_simulate.md (one section per suite, `import` and `memory` one per
range of P, `compare` one per list of cases): a run replaces its own section and keeps the
others.

    .venv/bin/python benchmarks/bench_simulate.py                    # engine cases
    .venv/bin/python benchmarks/bench_simulate.py --suite command    # the 5 s goal
    .venv/bin/python benchmarks/bench_simulate.py --suite all        # every algorithm at 2^20
    .venv/bin/python benchmarks/bench_simulate.py --suite large      # 2^24 ranks
    .venv/bin/python benchmarks/bench_simulate.py --quick            # small engine cases only
    .venv/bin/python benchmarks/bench_simulate.py --suite compare --against /tmp/base  # A B A B
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from results_md import write_section

RESULT = Path(__file__).parent / "results" / "bench_simulate.md"
TITLE = """# The simulator's speed and memory (benchmarks/bench_simulate.py)

The latest run of each suite, one section each (machine, load and date in its first line). The
machine is a 2-core VM shared with other work: CPU time is the cost; wall time mostly measured
the queue for a CPU."""

CASE = r"""
import json, resource, sys, time
import collkit
algo, P, nbytes, model, noise, trials = sys.argv[1:7]
P, trials = int(P), int(trials)
t0 = time.perf_counter()
c0 = time.process_time()
r = collkit.simulate(algo, P, bytes=int(nbytes), model=model,
                     noise=None if noise == "none" else noise, trials=trials, seed=1)
total_wall, total_cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({
    "makespan_ns": r.makespan, "median_ns": r.stats()["median"], "events": r.events,
    "ops": r.ops, "messages": r.messages,
    "load_s": r.load_seconds, "run_s": r.run_seconds,
    "load_cpu_s": r.load_cpu_seconds, "run_cpu_s": r.run_cpu_seconds,
    "total_s": total_wall, "total_cpu_s": total_cpu,
    "engine_mb": r.memory_bytes / 2**20,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""

# (algorithm, P, bytes per rank, model, noise, trials)
CASES = [
    ("allreduce:rd", 1 << 10, 8, "postal", "none", 1),
    ("allreduce:rd", 1 << 16, 8, "postal", "none", 1),
    ("allreduce:rd", 1 << 20, 8, "postal", "none", 1),
    ("allreduce:rd", 1 << 20, 8, "loggops", "none", 1),
    ("allreduce:rd", 1 << 12, 8, "pipelined-postal", "exponential(50ns)", 200),
]
QUICK = [c for c in CASES if c[1] <= 1 << 12]

# The compare suite: the engine's costly rules (LogGOPS, ops waiting for a busy CPU or gap).
COMPARE = [
    ("allreduce:rd", 1 << 16, 8, "loggops"),
    ("allreduce:rd", 1 << 16, 8, "postal"),
    ("bcast:binomial", 1 << 18, 8, "loggops"),
    ("allreduce:rabenseifner", 1 << 14, 8, "loggops"),
    ("allreduce:ring(seg=16)", 17, 65536, "loggops"),
    ("alltoall:linear", 256, 512, "loggops"),
]
COMPARE_CASE = r"""
import json, resource, sys
import collkit
algo, P, nbytes, model = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
best, wall, r = float("inf"), float("inf"), None
for _ in range(3):
    r = collkit.simulate(algo, P, bytes=nbytes, model=model)
    best = min(best, r.load_cpu_seconds + r.run_cpu_seconds)
    wall = min(wall, r.load_seconds + r.run_seconds)
print(json.dumps({"cpu_s": best, "wall_s": wall, "makespan_ns": r.makespan, "events": r.events,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_json(argv: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Runs a case script in a fresh process; the JSON object it prints."""
    out = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip()[-500:])
    return dict(json.loads(out.stdout))


MEMORY_CASE = r"""
import json, resource, sys
import collkit
algo, P, model = sys.argv[1], int(sys.argv[2]), sys.argv[3]
r = collkit.simulate(algo, P, count=1, model=model)
print(json.dumps({"ops": r.ops, "cpu_s": r.load_cpu_seconds + r.run_cpu_seconds,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def memory_rows(max_lg: int, min_lg: int = 16) -> list[str]:
    from collkit.simulate import memory_estimate

    header = (
        f"| {'case':44s} | {'ops':>10s} | {'est ops':>10s} | {'peak RSS MB':>11s} | "
        f"{'estimate MB':>11s} | {'est / RSS':>9s} | {'cpu s':>6s} |"
    )
    rows = [header, "|" + "|".join("-" * len(c) for c in header.split("|")[1:-1]) + "|"]
    print(header, flush=True)
    for lg in range(min_lg, max_lg + 1):
        for model in ("loggops", "postal"):
            for algo in ("allreduce:rd", "allreduce:rabenseifner", "bcast:binomial"):
                P = 1 << lg
                est, est_ops = memory_estimate(algo, P, 1, model=model)
                d = run_json([sys.executable, "-c", MEMORY_CASE, algo, str(P), model])
                name = f"{algo} P=2^{lg} 8B {model}"
                row = (
                    f"| {name:44s} | {d['ops']:10d} | {est_ops:10d} | {d['rss'] / 2**20:11.0f} | "
                    f"{est / 2**20:11.0f} | {est / d['rss']:9.2f} | {d['cpu_s']:6.2f} |"
                )
                print(row, flush=True)
                rows.append(row)
    return rows


def compare_rows(
    against: str, rounds: int, cases: list[tuple[str, int, int, str]] | None = None
) -> list[str]:
    """This build against the collkit package in `against`, interleaved A B A B."""
    header = (
        f"| {'case':44s} | {'events':>9s} | {'A cpu s':>8s} | {'B cpu s':>8s} | "
        f"{'B/A median':>10s} | {'B/A range':>13s} | {'A M ev/s':>8s} | {'B M ev/s':>8s} | "
        f"{'A wall s':>8s} | {'B wall s':>8s} | {'A RSS MB':>8s} | {'B RSS MB':>8s} |"
    )
    rows = [header, "|" + "|".join("-" * len(c) for c in header.split("|")[1:-1]) + "|"]
    print(header, flush=True)
    env_a = {**os.environ, "PYTHONPATH": against}
    env_b = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def one(env: dict[str, str], case: tuple[str, int, int, str]) -> dict[str, float]:
        algo, P, nbytes, model = case
        return run_json([sys.executable, "-c", COMPARE_CASE, algo, str(P), str(nbytes), model], env)

    for case in cases or COMPARE:
        a_runs: list[dict[str, float]] = []
        b_runs: list[dict[str, float]] = []
        for _ in range(rounds):
            a, b = one(env_a, case), one(env_b, case)
            if a["makespan_ns"] != b["makespan_ns"] or a["events"] != b["events"]:
                raise RuntimeError(f"{case}: makespans differ: {a} vs {b}")
            a_runs.append(a)
            b_runs.append(b)
        a_cpu = [x["cpu_s"] for x in a_runs]
        b_cpu = [x["cpu_s"] for x in b_runs]
        ratios = [y / x for x, y in zip(a_cpu, b_cpu, strict=True) if x > 0]
        algo, P, nbytes, model = case
        name = f"{algo} P={P} {nbytes}B {model}"
        ev = float(b["events"])

        def med(runs: list[dict[str, float]], k: str) -> float:
            return statistics.median(x[k] for x in runs)

        row = (
            f"| {name:44s} | {int(ev):9d} | {statistics.median(a_cpu):8.4f} | "
            f"{statistics.median(b_cpu):8.4f} | {statistics.median(ratios):10.2f} | "
            f"{min(ratios):5.2f} - {max(ratios):5.2f} | "
            f"{ev / med(a_runs, 'cpu_s') / 1e6:8.2f} | {ev / med(b_runs, 'cpu_s') / 1e6:8.2f} | "
            f"{med(a_runs, 'wall_s'):8.3f} | {med(b_runs, 'wall_s'):8.3f} | "
            f"{max(x['rss_mb'] for x in a_runs):8.0f} | {max(x['rss_mb'] for x in b_runs):8.0f} |"
        )
        print(row, flush=True)
        rows.append(row)
    return rows


def machine() -> str:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"{stamp}, {platform.node()}: {cpu}, {os.cpu_count()} cores, Linux "
        f"{platform.release()}, Python {platform.python_version()}; load average {load:.1f} at "
        "the start"
    )


def section(args: argparse.Namespace) -> str:
    """The heading of a run's section in bench_simulate.md: its suite, and the range of P or the
    cases where runs of one suite measure different things."""
    name = {"engine": "engine --quick" if args.quick else "engine"}.get(args.suite, args.suite)
    if args.suite == "import":
        name += f", lg P = {args.lg}" + (", against another build" if args.against else "")
    if args.suite == "memory":
        name += f", lg P = {args.min_lg}..{args.max_lg}"
    if args.suite == "compare":
        name += f", {args.cases or 'the engine cases'}"
    return f"## {name}"


class TimeLimit(RuntimeError):
    pass


def run_command(
    argv: list[str],
    limit: float | None = None,
    stdout: int | None = subprocess.PIPE,
    env: dict[str, str] | None = None,
) -> dict[str, float | str]:
    """Runs a command; its wall time, CPU time and peak RSS (its own, from wait4). Past `limit`
    seconds it is killed and TimeLimit raised."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, text=True, env=env)
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG if limit is not None else 0)
        if pid != 0:
            break
        if limit is not None and time.perf_counter() - t0 > limit:
            proc.kill()
            os.wait4(proc.pid, 0)
            raise TimeLimit(f"over {limit:.0f} s")
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    out = proc.stdout.read() if proc.stdout else ""
    err = proc.stderr.read() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {err.strip()[-500:]}")
    first = out.splitlines()[1] if len(out.splitlines()) > 1 else out.strip()
    return {
        "wall": wall,
        "cpu": ru.ru_utime + ru.ru_stime,
        "rss_mb": ru.ru_maxrss / 1024,
        "result": first.split("   ")[0],
    }


def collkit_cmd() -> str:
    exe = Path(sys.executable).parent / "collkit"
    return str(exe) if exe.exists() else (shutil.which("collkit") or "collkit")


def export_rows() -> list[str]:
    import tempfile

    header = (
        f"| {'command':52s} | {'wall s':>7s} | {'cpu s':>6s} | {'peak RSS MB':>11s} | "
        f"{'file MB':>8s} | {'B RSS per op':>12s} |"
    )
    rows = [header, "|" + "|".join("-" * len(c) for c in header.split("|")[1:-1]) + "|"]
    print(header, flush=True)
    import collkit

    with tempfile.TemporaryDirectory() as tmp:
        for algo, lg, ext in [
            ("allreduce:rd", 10, "goal"),
            ("allreduce:rd", 14, "goal"),
            ("allreduce:rd", 17, "goal"),
            ("alltoall:bruck", 10, "goal"),
            ("alltoall:bruck", 12, "goal"),
            ("allreduce:rd", 10, "json"),
            ("allreduce:rd", 14, "json"),
            ("allreduce:rd", 17, "json"),
            ("allreduce:rd", 10, "stdout"),
            ("allreduce:rd", 14, "stdout"),
            ("allreduce:rd", 17, "stdout"),
        ]:
            out = Path(tmp) / f"x.{ext}"
            argv = [collkit_cmd(), "export", algo, "-P", f"2^{lg}", "--count", "1"]
            if ext == "stdout":  # text to stdout, into a file by the shell's redirection
                with out.open("w") as f:
                    r = run_command(argv, stdout=f.fileno())
                shown = " ".join(argv[1:]) + " > x.txt"
            else:
                r = run_command([*argv, "-o", str(out)])
                shown = " ".join(argv[1:]) + f" -o x.{ext}"
            ops = collkit.Algorithm(algo).count_ops(1 << lg, 1)
            size = out.stat().st_size / 2**20
            row = (
                f"| {shown:52s} | {float(r['wall']):7.2f} | "
                f"{float(r['cpu']):6.2f} | {float(r['rss_mb']):11.0f} | {size:8.0f} | "
                f"{float(r['rss_mb']) * 2**20 / ops:12.2f} |"
            )
            print(row, flush=True)
            rows.append(row)
            out.unlink()
    return rows


# The import suite's files: collkit's own exports of allreduce:rd in every format, and plain
# GOAL files shaped as LogGOPSim's Schedgen writes them (no collkit comments, so the reader pairs
# the messages by tag): collkit's GOAL export with its comment lines stripped, for allreduce:rd
# (recursive doubling), barrier:dissemination and bcast:binomial.
IMPORT_FILES = [
    ("allreduce:rd", "txt"),
    ("allreduce:rd", "json"),
    ("allreduce:rd", "goal"),
    ("allreduce:rd", "plain.goal"),
    ("barrier:dissemination", "plain.goal"),
    ("bcast:binomial", "plain.goal"),
]


def write_import_file(algo: str, lg: int, ext: str, path: Path) -> None:
    """Writes `algo` at P = 2^lg as `ext`; a plain GOAL file is the GOAL export without its
    comment lines (a stream through `grep -v`: memory of one line)."""
    export = [collkit_cmd(), "export", algo, "-P", f"2^{lg}", "--count", "1"]
    if ext != "plain.goal":
        run_command([*export, "-o", str(path)])
        return
    with path.open("w") as f:
        exp = subprocess.Popen([*export, "--format", "goal"], stdout=subprocess.PIPE)
        grep = subprocess.run(["grep", "-v", "^//"], stdin=exp.stdout, stdout=f, check=False)
        if exp.stdout is not None:
            exp.stdout.close()
        if exp.wait() != 0 or grep.returncode != 0:
            raise RuntimeError(f"could not write {path}")


def import_ab_rows(lgs: list[int], repeats: int, against: str) -> list[str]:
    """The import suite's files read by another build (A: the collkit package in `against`) and
    this one (B), interleaved A B A B: CPU time, B / A and peak RSS of each."""
    import tempfile

    header = (
        f"| {'file':36s} | {'A cpu s':>8s} | {'B cpu s':>8s} | {'B/A median':>10s} | "
        f"{'A RSS MB':>8s} | {'B RSS MB':>8s} | {'file MB':>8s} |"
    )
    rows = [header, "|" + "|".join("-" * len(c) for c in header.split("|")[1:-1]) + "|"]
    print(header, flush=True)
    env_a = {**os.environ, "PYTHONPATH": against}
    env_b = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with tempfile.TemporaryDirectory() as tmp:
        for algo, ext in IMPORT_FILES:
            for lg in lgs:
                path = Path(tmp) / f"x.{ext}"
                write_import_file(algo, lg, ext, path)
                argv = [collkit_cmd(), "simulate", "--file", str(path), "--model", "loggops"]
                a_runs, b_runs = [], []
                for _ in range(repeats):
                    a_runs.append(run_command(argv, env=env_a))
                    b_runs.append(run_command(argv, env=env_b))
                if any(x["result"] != a_runs[0]["result"] for x in a_runs + b_runs):
                    raise RuntimeError(f"{algo} {ext}: the builds disagree")
                ratio = statistics.median(
                    float(b["cpu"]) / float(a["cpu"]) for a, b in zip(a_runs, b_runs, strict=True)
                )
                name = f"{algo.split(':')[1]}_2^{lg}.{ext}"
                row = (
                    f"| {name:36s} | {statistics.median(float(r['cpu']) for r in a_runs):8.2f} | "
                    f"{statistics.median(float(r['cpu']) for r in b_runs):8.2f} | {ratio:10.2f} | "
                    f"{max(float(r['rss_mb']) for r in a_runs):8.0f} | "
                    f"{max(float(r['rss_mb']) for r in b_runs):8.0f} | "
                    f"{path.stat().st_size / 2**20:8.0f} |"
                )
                print(row, flush=True)
                rows.append(row)
                path.unlink()
    return rows


def import_rows(lgs: list[int], repeats: int = 1) -> list[str]:
    import tempfile

    header = (
        f"| {'command':62s} | {'wall s':>13s} | {'cpu s':>6s} | {'peak RSS MB':>11s} | "
        f"{'file MB':>8s} |"
    )
    rows = [header, "|" + "|".join("-" * len(c) for c in header.split("|")[1:-1]) + "|"]
    print(header, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for algo, ext in IMPORT_FILES:
            for lg in lgs:
                path = Path(tmp) / f"x.{ext}"
                write_import_file(algo, lg, ext, path)
                argv = [collkit_cmd(), "simulate", "--file", str(path), "--model", "loggops"]
                runs = [run_command(argv) for _ in range(repeats)]
                walls = sorted(float(r["wall"]) for r in runs)
                wall = f"{walls[0]:.2f}" + (
                    f" / {statistics.median(walls):.2f}" if repeats > 1 else ""
                )
                name = algo.split(":")[1]
                shown = f"simulate --file {name}_2^{lg}.{ext} --model loggops"
                row = (
                    f"| {shown:62s} | {wall:>13s} | {min(float(r['cpu']) for r in runs):6.2f} | "
                    f"{max(float(r['rss_mb']) for r in runs):11.0f} | "
                    f"{path.stat().st_size / 2**20:8.0f} |"
                )
                print(row, flush=True)
                rows.append(row)
                path.unlink()
    return rows


def slow_generator_rows(names: list[str]) -> list[str]:
    """Why a command ran past the limit: its ops per rank and the generator's time per rank at
    growing P (whole-schedule op counts at 2^20 would themselves take hours for these)."""
    import collkit

    rows = [
        "",
        "Algorithms stopped at the limit: ops per rank (rank P/2) and the generator's time per "
        "rank, at growing P:",
        "",
        "| algorithm | P | ops per rank | ops in all (P x that) | generator ms per rank |",
        "|---|---|---|---|---|",
    ]
    for name in names:
        algo = collkit.Algorithm(name)
        for lg in (10, 14, 20):
            P = 1 << lg
            t0 = time.process_time()
            n = len(algo.generate_rank(P, P // 2, 1))
            ms = (time.process_time() - t0) * 1e3
            rows.append(f"| {name} | 2^{lg} | {n} | {n * P:,} | {ms:.1f} |")
    for r in rows:
        print(r, flush=True)
    return rows


def command_rows(
    suite: str,
    sink: Callable[[str], None] = lambda _: None,
    limit: float | None = None,
    import_lgs: list[int] | None = None,
    repeats: int = 1,
    against: str | None = None,
) -> list[str]:
    if suite == "export":
        return export_rows()
    if suite == "import" and against:
        return import_ab_rows(import_lgs or [15], max(repeats, 2), against)
    if suite == "import":
        return import_rows(import_lgs or [12, 15, 17], repeats)
    header = (
        f"| {'command':58s} | {'wall s':>12s} | {'cpu s':>6s} | {'peak RSS MB':>11s} | "
        f"{'B per rank':>10s} | {'result':24s} |"
    )
    rows = [header, "|" + "|".join("-" * len(c) for c in header.split("|")[1:-1]) + "|"]
    print(header, flush=True)
    for r in rows:
        sink(r)
    cases: list[tuple[str, int, int]] = []
    if suite == "command":
        cases = [("allreduce:rd", 20, 3)]
    elif suite == "large":
        cases = [(a, 24, 1) for a in ("allreduce:rd", "allreduce:rabenseifner", "bcast:binomial")]
    else:
        import collkit

        cases = [(str(a["name"]), 20, 1) for a in collkit.algorithms()]
    stopped: list[str] = []
    for algo, lg, repeats in cases:
        argv = [collkit_cmd(), "simulate", algo, "-P", f"2^{lg}", "--bytes", "8"]
        argv += ["--model", "loggops"]
        try:
            runs = [run_command(argv, limit) for _ in range(repeats)]
        except TimeLimit as e:
            row = f"| {' '.join(argv[1:]):58s} | stopped: {e} |"
            print(row, flush=True)
            rows.append(row)
            sink(row)
            stopped.append(algo)
            continue
        except RuntimeError as e:
            row = f"| {' '.join(argv[1:]):58s} | failed: {str(e)[-200:]} |"
            print(row, flush=True)
            rows.append(row)
            sink(row)
            continue
        walls = sorted(float(r["wall"]) for r in runs)
        wall = f"{walls[0]:.2f}" + (f" / {statistics.median(walls):.2f}" if repeats > 1 else "")
        cpu = min(float(r["cpu"]) for r in runs)
        rss = max(float(r["rss_mb"]) for r in runs)
        per_rank = rss * 2**20 / (1 << lg)
        row = (
            f"| {' '.join(argv[1:]):58s} | {wall:>12s} | {cpu:6.2f} | {rss:11.0f} | "
            f"{per_rank:10.0f} | {str(runs[0]['result'])[:24]:24s} |"
        )
        print(row, flush=True)
        rows.append(row)
        sink(row)
    if stopped:
        for r in slow_generator_rows(stopped):
            rows.append(r)
            sink(r)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small cases only")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument(
        "--suite",
        choices=["engine", "command", "all", "export", "import", "large", "compare", "memory"],
        default="engine",
    )
    ap.add_argument("--against", help="suite compare: a folder holding the other build's collkit")
    ap.add_argument("--rounds", type=int, default=5, help="suite compare: A B rounds")
    ap.add_argument(
        "--cases",
        help="suite compare: cases instead of the default ones, ';'-separated ALGO,LG,BYTES,MODEL "
        "(e.g. 'bcast:binomial,20,8,loggops;bcast:binomial,20,8,postal')",
    )
    ap.add_argument("--max-lg", type=int, default=20, help="suite memory: the largest lg P")
    ap.add_argument("--min-lg", type=int, default=16, help="suite memory: the smallest lg P")
    ap.add_argument("--lg", default="12,15,17", help="suite import: lg P of the files (comma list)")
    ap.add_argument("--repeat", type=int, default=1, help="suite import: runs of each command")
    ap.add_argument(
        "--limit", type=float, default=120.0, help="suite all: seconds before a command is stopped"
    )
    args = ap.parse_args()
    if args.suite in ("all", "large") and not args.no_write:
        # Long suites save each row as it is measured: an interrupted run keeps what it measured.
        head = [
            machine(),
            "",
            f"Command: `python benchmarks/bench_simulate.py --suite {args.suite}`",
            "",
            "Whole `collkit simulate` commands, each in a fresh process, rows written as "
            "measured; cpu: user + system time of the command; peak RSS of the command.",
            "",
        ]
        got: list[str] = []

        def sink(row: str) -> None:
            got.append(row)
            write_section(RESULT, TITLE, section(args), "\n".join(head + got))

        command_rows(args.suite, sink, args.limit if args.suite == "all" else None)
        got += ["", f"Load average at the end: {os.getloadavg()[0]:.1f}."]
        write_section(RESULT, TITLE, section(args), "\n".join(head + got))
        return 0
    if args.suite == "memory":
        load0 = os.getloadavg()[0]
        rows = memory_rows(args.max_lg, args.min_lg)
        load1 = os.getloadavg()[0]
        note = (
            "Peak RSS (ru_maxrss) of a fresh process running `collkit.simulate(ALGO, P, count=1, "
            "model=MODEL)`, against `collkit.simulate.memory_estimate` (the process included); "
            f"ops: the schedule's, est ops: the estimate's count. Load average {load0:.1f} at "
            f"the start and {load1:.1f} at the end (2 cores shared)."
        )
        return write(
            args, rows, note, f" --suite memory --min-lg {args.min_lg} --max-lg {args.max_lg}"
        )
    if args.suite == "compare":
        if not args.against or not (Path(args.against) / "collkit").is_dir():
            ap.error("--suite compare needs --against DIR, a folder holding a collkit package")
        cases = None
        if args.cases:
            cases = []
            for c in args.cases.split(";"):
                algo, lg, nbytes, model = c.rsplit(",", 3)
                cases.append((algo, 1 << int(lg), int(nbytes), model))
        load0 = os.getloadavg()[0]
        rows = compare_rows(args.against, args.rounds, cases)
        load1 = os.getloadavg()[0]
        note = (
            f"A: the collkit in {args.against}; B: this build. Each case {args.rounds} rounds, "
            "A then B in fresh processes; CPU time of the engine (load + run, best of 3 calls); "
            "B/A per round, its median and range; M events per CPU second and the wall time of "
            "the engine (best of 3 calls), medians over the rounds; peak RSS of the process "
            f"(the most over the rounds). Load average {load0:.1f} at the start and "
            f"{load1:.1f} at the end (2 cores shared)."
        )
        flags = f" --suite compare --against {args.against} --rounds {args.rounds}"
        if args.cases:
            flags += f" --cases '{args.cases}'"
        return write(args, rows, note, flags)
    if args.suite != "engine":
        load0 = os.getloadavg()[0]
        lgs = [int(x) for x in args.lg.split(",")]
        rows = command_rows(args.suite, import_lgs=lgs, repeats=args.repeat, against=args.against)
        load1 = os.getloadavg()[0]
        note = (
            f"Whole `collkit simulate` commands, each in a fresh process; wall: min / median over "
            f"the runs; cpu: user + system time of the command; peak RSS of the command; load "
            f"average {load0:.1f} at the start and {load1:.1f} at the end (2 cores shared)."
        )
        flags = f" --suite {args.suite}"
        if args.suite == "import":
            flags += f" --lg {args.lg} --repeat {args.repeat}"
            if args.against:
                flags += f" --against {args.against}"
        return write(args, rows, note, flags)
    header = (
        f"| {'case':52s} | {'events':>10s} | {'run s':>6s} | {'run cpu s':>9s} | "
        f"{'M ev/s (cpu)':>12s} | {'load cpu s':>10s} | {'total s':>7s} | "
        f"{'total cpu s':>11s} | {'peak RSS MB':>11s} |"
    )
    rows = [header, "|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|"]
    print(header)
    for algo, P, nbytes, model, noise, trials in QUICK if args.quick else CASES:
        cmd = [sys.executable, "-c", CASE, algo, str(P), str(nbytes), model, noise, str(trials)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            return 1
        d = json.loads(out.stdout)
        name = f"{algo} P=2^{P.bit_length() - 1} {nbytes}B {model}"
        if trials > 1:
            name += f" {noise} x{trials}"
        rate = d["events"] / d["run_cpu_s"] / 1e6 if d["run_cpu_s"] > 0 else float("inf")
        row = (
            f"| {name:52s} | {d['events']:10d} | {d['run_s']:6.2f} | {d['run_cpu_s']:9.2f} | "
            f"{rate:12.1f} | {d['load_cpu_s']:10.2f} | {d['total_s']:7.2f} | "
            f"{d['total_cpu_s']:11.2f} | {d['peak_rss_mb']:11.0f} |"
        )
        print(row, flush=True)
        rows.append(row)
    note = (
        "events = ops + messages over all trials; run = the event loop; load = generating "
        "the programs of the ranks that start at once and reading them into the engine; total = "
        "the whole `collkit.simulate` call; peak RSS of the whole Python process."
    )
    return write(args, rows, note, " --quick" if args.quick else "")


def write(args: argparse.Namespace, rows: list[str], note: str, flags: str) -> int:
    if not args.no_write:
        cmd_line = "python benchmarks/bench_simulate.py" + flags
        body = f"{machine()}\n\nCommand: `{cmd_line}`\n\n{note}\n\n" + "\n".join(rows)
        write_section(RESULT, TITLE, section(args), body)
        print(f"wrote its section of {RESULT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
