"""Benchmark: enumerate and rank every recursive multiplying schedule for N <= 1024, compare the
search with the exhaustive optimum, time the search for N up to 10^6 (and past it), and verify
every schedule for N <= --verify-upto.

    .venv/bin/python benchmarks/bench_rm_enumerate.py [--max-n 1024] [--verify-upto 128]

Prints a table and writes it as one section of benchmarks/results/bench_rm_enumerate.md
(machine, date, load, command).

    .venv/bin/python benchmarks/bench_rm_enumerate.py --top-only [--rounds 2]

times only the top-k ranking `collkit tune` uses (rank_schedules(N, top=3)) and tune's whole
candidate list for N up to 65536, rounds interleaved, and writes it as the same file's other
section (a run replaces its own section and keeps the other).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import collkit
from collkit.analysis import recmult
from collkit.analysis.recmult import PipelinedPostal
from results_md import write_section

MODEL = PipelinedPostal(alpha_p=1.34e-6, alpha_r=0.34e-6)  # [Ruefenacht 2017] Table 1, minimum
NBYTES = 8


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{platform.node()}, {cpu}, {os.cpu_count()} cpus, load {load:.1f}, Python "
        f"{platform.python_version()}"
    )


TOP_NS = (1024, 4096, 16384, 65536)
TITLE = """# Recursive multiplying: enumeration, ranking, search (benchmarks/bench_rm_enumerate.py)

One section per mode, each with its machine, date, load and command."""


def start(title: str, options: str, note: str = "") -> tuple[list[str], Callable[..., None]]:
    """A section's lines (its heading, `title`, first) and the function that prints and keeps
    one, its header emitted."""
    lines: list[str] = []

    def emit(s: str = "") -> None:
        print(s, flush=True)
        lines.append(s)

    emit(f"## {title}")
    emit()
    emit(f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}")
    emit(f"- machine: {machine()}{note}")
    emit(f"- command: `.venv/bin/python benchmarks/bench_rm_enumerate.py {options}`")
    return lines, emit


def keep(out: Path, lines: list[str]) -> None:
    """Put the section `lines` (its heading first) in `out` in place of its earlier run."""
    out.parent.mkdir(parents=True, exist_ok=True)
    write_section(out, TITLE, lines[0], "\n".join(lines[1:]))
    print(f"wrote its section of {out}")


def top_only(rounds: int, out: Path) -> int:
    """rank_schedules(N, top=3) and tune's candidates("allreduce", N), each N once per round,
    rounds interleaved; the top 3 checked against the exhaustive ranking where it is cheap."""
    from collkit.tune.campaign import RANK_MODEL, candidates

    lines, emit = start(
        "The top-k ranking of collkit tune at large N (--top-only)",
        f"--top-only --rounds {rounds}",
        " (load at the start; at the end below)",
    )
    emit("- model: tune's RANK_MODEL (pipelining postal), n = 8 B, fan-out <= 8, top 3")
    emit()
    for N in (256, 1024):  # the same rows as the exhaustive ranking
        full = recmult.rank_schedules(N, RANK_MODEL, NBYTES)[:3]
        if recmult.rank_schedules(N, RANK_MODEL, NBYTES, top=3) != full:
            emit(f"top 3 differs from the exhaustive ranking at N = {N}")
            return 1
    emit("top 3 == the exhaustive ranking's first 3 rows at N = 256 and 1024: yes")
    emit()
    times: dict[tuple[str, int], list[float]] = {}
    best: dict[int, str] = {}
    n_cand: dict[int, int] = {}
    for _ in range(rounds):
        for N in TOP_NS:
            t0 = time.perf_counter()
            ranked = recmult.rank_schedules(N, RANK_MODEL, NBYTES, top=3)
            times.setdefault(("rank", N), []).append(time.perf_counter() - t0)
            best[N] = ranked[0].schedule
            t0 = time.perf_counter()
            n_cand[N] = len(candidates("allreduce", N))
            times.setdefault(("cand", N), []).append(time.perf_counter() - t0)
    emit(
        "| N | best by model | rank_schedules(top=3) (s, per round) | "
        'candidates("allreduce", N) (s, per round) | candidates |'
    )
    emit("| ---: | --- | --- | --- | ---: |")
    for N in TOP_NS:
        r = ", ".join(f"{t:.2f}" for t in times[("rank", N)])
        c = ", ".join(f"{t:.2f}" for t in times[("cand", N)])
        emit(f"| {N} | {best[N]} | {r} | {c} | {n_cand[N]} |")
    emit()
    emit(f"- load at the end: {os.getloadavg()[0]:.1f}")
    keep(out, lines)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--max-n", type=int, default=1024)
    ap.add_argument("--verify-upto", type=int, default=128)
    ap.add_argument("--top-only", action="store_true", help="only the top-k ranking at large N")
    ap.add_argument("--rounds", type=int, default=2, help="--top-only: interleaved rounds")
    default_out = Path(__file__).parent / "results" / "bench_rm_enumerate.md"
    ap.add_argument("--out", default=str(default_out))
    args = ap.parse_args()
    if args.top_only:
        return top_only(args.rounds, Path(args.out))
    lines, emit = start(
        "Enumerate, rank, search and verify",
        f"--max-n {args.max_n} --verify-upto {args.verify_upto}",
    )
    emit(
        f"- model: pipelining postal, alpha_p = 1.34 us, alpha_r = 0.34 us, n = {NBYTES} B, "
        "fan-out <= 8"
    )
    emit()

    # 1. enumerate + rank every N
    t0 = time.perf_counter()
    total = 0
    fam_tot = {"factored": 0, "split": 0, "merged": 0}
    mismatches = []
    checkpoints = {}
    t_search = 0.0
    for N in range(1, args.max_n + 1):
        ranked = recmult.rank_schedules(N, MODEL, NBYTES)
        total += len(ranked)
        for r in ranked:
            fam_tot[r.family] += 1
        ts = time.perf_counter()
        s = recmult.search(N, MODEL, NBYTES)
        t_search += time.perf_counter() - ts
        if abs(s.cost - ranked[0].cost) > 1e-12 * ranked[0].cost:
            mismatches.append(N)
        if N in (7, 8, 96, 128, 256, 512, 1000, 1024):
            checkpoints[N] = (len(ranked), ranked[0].schedule, ranked[0].cost, s.schedule)
    t_all = time.perf_counter() - t0 - t_search
    emit(f"### Enumerate and rank every schedule, N = 1..{args.max_n}")
    emit()
    emit(
        "| schedules | factored | split | merged | enumerate + rank (s) | search, all N (s) | "
        "search == exhaustive |"
    )
    emit("| ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    emit(
        f"| {total} | {fam_tot['factored']} | {fam_tot['split']} | {fam_tot['merged']} | "
        f"{t_all:.1f} | {t_search:.2f} | "
        f"{'every N' if not mismatches else 'differs at ' + str(mismatches[:10])} |"
    )
    emit()
    emit("| N | schedules | best (exhaustive) | model (us) | search's pick (same cost) |")
    emit("| ---: | ---: | --- | ---: | --- |")
    for N, (n, best, cost, pick) in checkpoints.items():
        emit(f"| {N} | {n} | {best} | {cost * 1e6:.3f} | {pick} |")
    emit()

    # 2. search at scale
    emit("### Search for large N")
    emit()
    emit("| N | schedule | family | model (us) | candidates | time (s) |")
    emit("| ---: | --- | --- | ---: | ---: | ---: |")
    for N in (10**4, 10**5, 999_983, 10**6, 2**20):
        s = recmult.search(N, MODEL, NBYTES)
        emit(
            f"| {N} | {s.schedule} | {s.family} | {s.cost * 1e6:.3f} | {s.candidates} | "
            f"{s.seconds:.2f} |"
        )
    emit()

    # 3. verify every schedule for N <= verify_upto
    if args.verify_upto > 0:
        t0 = time.perf_counter()
        n_ok = n_any_op = n = 0
        failed = []
        for N in range(1, args.verify_upto + 1):
            for stages in recmult.enumerate_schedules(N):
                name = f"allreduce:rm({stages})" if stages else "allreduce:rm"
                r = collkit.verify(collkit.generate(name, P=N, count=1), commutative=True)
                n += 1
                n_ok += r.ok
                n_any_op += r.consistent_noncommutative
                if not r.ok:
                    failed.append((N, stages))
        emit(f"### Verify every schedule, N = 1..{args.verify_upto}")
        emit()
        emit("| schedules | verified | also in rank order (any op) | failed | time (s) |")
        emit("| ---: | ---: | ---: | --- | ---: |")
        emit(
            f"| {n} | {n_ok} | {n_any_op} | {failed[:5] if failed else 'none'} | "
            f"{time.perf_counter() - t0:.1f} |"
        )
        emit()

    keep(Path(args.out), lines)
    return 0 if not mismatches else 1


if __name__ == "__main__":
    sys.exit(main())
