"""alltoallv and allgatherv: collkit's best algorithm against each MPI's native call, 8 B - 4 KiB
per pair (alltoallv) or per rank (allgatherv), at P = 2 (one rank per core on this 2-core
machine) and P = 4 (oversubscribed: two ranks per core, throttled progress / yield when idle).

Every collkit algorithm of the collective is measured interleaved with the native call in one
job (collkit.bench: native, c1, native, c2, ..., native, in --rounds rounds), on the count
vectors equal(n) (the size per pair or per rank) and random(1,2n) (the same mean, zeros
among them). "best" is the candidate with the smallest median at that point, chosen after the
fact among 4 (alltoallv) or 3 (allgatherv), so it leans to the lucky one; the ratio is its median
over the native median of the same job. Every row's result was checked against the native
call (`valid`). The goal: <= 0.5x MPICH's native, <= 0.8x Open MPI's.

    .venv/bin/python benchmarks/bench_irregular.py            # both MPIs, P = 2 and 4
    .venv/bin/python benchmarks/bench_irregular.py --quick    # P = 2, two sizes
    ... --bindir openmpi=DIR    # that MPI's collkit_bench from DIR (a build of the same sources)
    ... --against openmpi=DIR --what "a build that ..."   # this build beside another, P = 2

--against compares this build with another one (DIR: its collkit_bench) at P = 2: each build's
best against the native call in its own interleaved job, the two jobs alternated `--alternations`
times; it rewrites its own section of benchmarks/results/irregular.md (AGAINST_HEADING), which
the plain run keeps.

Writes benchmarks/results/irregular.md (machine, date, load, the command) and prints the table.
Run it without nice: the load is recorded, and the machine is shared.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

import collkit.bench as cb
from collkit.algorithms import algorithms
from collkit.bench import Campaign, machine_name, run_campaign
from collkit.errors import UnsupportedError
from collkit.mpi import find_mpi_of_kind
from collkit.results import ResultStore, Row

RESULTS = Path(__file__).resolve().parent / "results" / "irregular.md"
AGAINST_HEADING = "## This build beside another (--against)"
GOAL = {"mpich": 0.5, "openmpi": 0.8}


def against_section(text: str) -> str:
    """The --against section of a results file's text ("" when it has none)."""
    at = text.find("\n" + AGAINST_HEADING)
    return text[at + 1 :] if at >= 0 else ""


def with_section(text: str, section: str) -> str:
    """`text` with its --against section replaced by `section` ("": none)."""
    at = text.find("\n" + AGAINST_HEADING)
    head = (text[:at] if at >= 0 else text).rstrip("\n") + "\n"
    return head + ("\n" + section.rstrip("\n") + "\n" if section else "")


def forms(sizes: list[int]) -> list[str]:
    return [f for n in sizes for f in (f"equal({n})", f"random(1,{2 * n})")]


def measure(
    kind: str, coll: str, P: int, sizes: list[int], rounds: int, bindir: Path | None
) -> list[Row]:
    mpi = find_mpi_of_kind(kind)
    build = cb.build
    if bindir is not None:  # the driver as built, not rebuilt from the tree
        cb.build = lambda *_a, **_k: bindir
    try:
        return _measure(mpi, coll, P, sizes, rounds)
    finally:
        cb.build = build


def _measure(mpi: object, coll: str, P: int, sizes: list[int], rounds: int) -> list[Row]:
    cands = [str(a["name"]) for a in algorithms(coll)]
    c = Campaign(
        coll,
        ["native", *cands],
        [P],
        [8],
        counts=forms(sizes),
        iterations=200,
        warmup=10,
        max_ms=400,
        rounds=rounds,
    )
    with tempfile.TemporaryDirectory() as d:
        return run_campaign(c, mpi, ResultStore(Path(d) / "r.jsonl"))  # type: ignore[arg-type]


def best_ratios(rows: list[Row]) -> dict[tuple[str, str], float]:
    """Per (collective, counts): the fastest candidate's median over the native median."""
    return {(t[0], t[2]): float(t[7]) for t in summarize(rows)}


def against(kind: str, old: Path, what: str, alternations: int, sizes: list[int]) -> str:
    """This build beside `old` at P = 2 (old, new, old, new, ...), each build's best against the
    native call in its own job: the median and range of each build's ratios per point."""
    got: dict[str, list[dict[tuple[str, str], float]]] = {"old": [], "new": []}
    for k in range(alternations):
        for which, bindir in (("old", old), ("new", None)):
            print(f"{kind} {which} {k + 1}/{alternations} ...", file=sys.stderr, flush=True)
            rows = [r for c in ("alltoallv", "allgatherv") for r in
                    measure(kind, c, 2, sizes, 3, bindir)]  # fmt: skip
            got[which].append(best_ratios(rows))
    version = find_mpi_of_kind(kind).version
    head = ["collective", "counts", "old: ratio (range)", "new: ratio (range)", "new / old"]
    text = [f"### {version}, P = 2 (old: {what}; new: this build)", ""]
    text += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for point in got["new"][0]:
        o = [g[point] for g in got["old"] if point in g]
        n = [g[point] for g in got["new"] if point in g]
        if not o or not n:
            continue
        mo, mn = statistics.median(o), statistics.median(n)
        text.append(
            f"| {point[0]} | {point[1]} | {mo:.2f} ({min(o):.2f}-{max(o):.2f}) | "
            f"{mn:.2f} ({min(n):.2f}-{max(n):.2f}) | {mn / mo:.2f} |"
        )
    return "\n".join(text) + "\n"


def summarize(rows: list[Row]) -> list[list[str]]:
    out = []
    total = {(r.collective, r.P, r.counts): r.bytes for r in rows}
    points = sorted(total, key=lambda k: (k[0], k[1], total[k], k[2]))
    for coll, P, form in points:
        at = [r for r in rows if (r.collective, r.P, r.counts) == (coll, P, form) and not r.error]
        native = next((r for r in at if r.algorithm == "native"), None)
        cands = [r for r in at if r.algorithm != "native"]
        if native is None or not cands:
            continue
        best = min(cands, key=lambda r: r.median_us)
        bad = [r.algorithm for r in cands if r.valid is not True]
        out.append(
            [
                coll,
                str(P),
                form,
                str(native.bytes),
                f"{native.median_us:.1f}",
                best.algorithm,
                f"{best.median_us:.1f}",
                f"{best.median_us / native.median_us:.2f}",
                f"{statistics.mean(r.load_avg_1m for r in at):.1f}",
                "all" if not bad else "NOT " + ",".join(bad),
            ]
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="P = 2, 8 B and 4 KiB only")
    ap.add_argument("--mpis", default="mpich,openmpi")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bindir", action="append", default=[], metavar="KIND=DIR")
    ap.add_argument(
        "--against",
        action="append",
        default=[],
        metavar="KIND=DIR",
        help="compare this build with the one in DIR at P = 2 (alternated jobs)",
    )
    ap.add_argument("--what", default="", help="what the --against build is, for the report")
    ap.add_argument("--alternations", type=int, default=3)
    args = ap.parse_args()
    bindirs = {k: Path(d) for k, _, d in (x.partition("=") for x in args.bindir)}
    sizes = [8, 4096] if args.quick else [8, 64, 512, 4096]
    if args.against:
        load0 = os.getloadavg()[0]
        parts = []
        for kind, _, d in (x.partition("=") for x in args.against):
            if not Path(d, "collkit_bench").is_file():
                ap.error(f"--against {kind}={d}: no collkit_bench there")
            parts.append(against(kind, Path(d), args.what or d, args.alternations, sizes))
            print(parts[-1])
        now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        cmd = shlex.join([".venv/bin/python", "benchmarks/bench_irregular.py", *sys.argv[1:]])
        section = (
            f"{AGAINST_HEADING}\n\n{now}, {machine_name()}, {platform.machine()}, "
            f"{os.cpu_count()} cores. Reproduce: `{cmd}`\n\nLoad average (1 min) {load0:.1f} "
            f"at the start, {os.getloadavg()[0]:.1f} at the end. Each build's fastest candidate "
            "over the native median of its own interleaved job (3 rounds), the two builds' jobs "
            f"alternated {args.alternations} times: the median ratio and its range; new / old: "
            "the two medians' quotient.\n\n" + "\n".join(parts)
        )
        old = RESULTS.read_text() if RESULTS.exists() else "# alltoallv and allgatherv\n"
        RESULTS.write_text(with_section(old, section))
        print(f"wrote its section of {RESULTS}", file=sys.stderr)
        return 0
    Ps = [2] if args.quick else [2, 4]
    head = [
        "collective",
        "P",
        "counts",
        "bytes (total)",
        "native median (us)",
        "best collkit",
        "its median (us)",
        "ratio",
        "load 1 min",
        "valid",
    ]
    sections = []
    load0 = os.getloadavg()[0]
    for kind in args.mpis.split(","):
        try:
            version = find_mpi_of_kind(kind).version
        except UnsupportedError as e:
            sections.append(f"### {kind}\n\nnot measured: {e}\n")
            continue
        rows: list[Row] = []
        for P in Ps:
            for coll in ("alltoallv", "allgatherv"):
                print(f"{kind} P={P} {coll} ...", file=sys.stderr, flush=True)
                rows += measure(kind, coll, P, sizes, args.rounds, bindirs.get(kind))
        table = summarize(rows)
        ratios = [float(t[7]) for t in table]
        met = sum(x <= GOAL[kind] for x in ratios)
        text = [f"### {version} (goal: ratio <= {GOAL[kind]})", ""]
        text.append("| " + " | ".join(head) + " |")
        text.append("|" + " --- |" * len(head))
        text += ["| " + " | ".join(t) + " |" for t in table]
        text.append("")
        text.append(f"Goal met at {met} of {len(ratios)} points.")
        sections.append("\n".join(text) + "\n")
        print("\n".join(text))
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cmd = " ".join([".venv/bin/python", "benchmarks/bench_irregular.py", *sys.argv[1:]])
    load1 = os.getloadavg()[0]
    body = (
        "# alltoallv and allgatherv against the MPIs' native calls (benchmarks/bench_irregular.py)"
        f"\n\n## {now}, {machine_name()}, {platform.machine()}, {os.cpu_count()} cores\n\n"
        f"Reproduce: `{cmd}`\n\n"
        f"Load average (1 min) {load0:.1f} at the start, {load1:.1f} at the end, on "
        f"{os.cpu_count()} cores shared with other work; P = 4 is oversubscribed (two ranks "
        "per core). `bytes` is the whole count vector's (alltoallv: the P x P matrix's); "
        "`counts` per pair (alltoallv) or per rank (allgatherv), char elements. best: the "
        "fastest collkit candidate at that point, picked after measuring; ratio: its median "
        "over the native median of the same interleaved job.\n\n" + "\n".join(sections)
    )
    kept = against_section(RESULTS.read_text()) if RESULTS.exists() else ""
    RESULTS.write_text(with_section(body, kept))
    print(f"wrote {RESULTS}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
