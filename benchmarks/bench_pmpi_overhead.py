"""What libcollkit_pmpi.so adds to a call it gives to the MPI (the goal: under 15 ns).

One rank, the library preloaded, MPI_Allreduce / MPI_Bcast / MPI_Barrier through the library and
PMPI_* straight to the MPI alternating in blocks of back-to-back calls (collkit_pmpi_overhead);
the overhead is the median over block pairs of (library - direct), per call. Three tables:

  none       COLLKIT_TUNING unset: the library only forwards
  other      a table with rules for other collectives only: one flag test, then PMPI_
  uncovered  a table with rules for this collective, none for this P: the communicator's size
             and kind asked once (the rules for it found), then one test of its handle, PMPI_
  elsewhere  a table that routes this collective at P = 1 from 1 KiB on, the call's 8-16 bytes
             left to the MPI: its remembered decision found, then PMPI_ (IMB's sizes below a
             table's routed ones); with `alternating`, the calls alternate between 8 and 16 bytes,
             as a rotating root's calls differ (the decision is found in another way)
  routed     a table that routes the call to collkit's algorithm, against collkit's C API
             (ck_<collective> with that name) called directly: what the routing adds to a call
             collkit takes (the decision, the rule's limits, the table)

    .venv/bin/python benchmarks/bench_pmpi_overhead.py [--mpiexec ...] [--blocks 300]
    .venv/bin/python benchmarks/bench_pmpi_overhead.py --against OLD_BUILD_DIR --pairs 3
    .venv/bin/python benchmarks/bench_pmpi_overhead.py --callgrind [--against OLD_BUILD_DIR]
    .venv/bin/python benchmarks/bench_pmpi_overhead.py --irregular [--np 2] [--against OLD]

Prints a table and writes it as a section of benchmarks/results/pmpi_overhead.md (one section
per MPI and mode; a run replaces its own and keeps the others). With --against, each case runs
with the library of OLD_BUILD_DIR (another collkit build's folder, e.g. ~/.cache/collkit/mpi-...)
and with this build's, alternating (old, new, old, new, ...) `--pairs` times, and the table gives
both overheads (median of the runs) and their difference. This build's collkit_pmpi_overhead
drives every library (only the library differs). --callgrind counts instead of timing: each case
once per library under valgrind --tool=callgrind (collkit_pmpi_overhead --count), instructions
per call through the library and direct, whatever the machine's load.

--irregular counts (under callgrind) MPI_Alltoallv and MPI_Allgatherv at 8 B, 64 B and 1 KiB per
pair or per rank, equal counts, packed displacements: the MPI's own call (PMPI_), collkit's C API
(ck_alltoallv / ck_allgatherv with IRREGULAR's algorithm) and the call through the library with a
table that routes it there; on `--np` ranks, rank 0 under valgrind and the others plain. At P > 1
rank 0's count includes its waits for the plain ranks (polls), which the load can move.
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
import tempfile
from pathlib import Path

from collkit.bench import machine_name
from collkit.mpi import MPI, build, find_mpi, launch_command, launch_env
from results_md import MPI_NAMES, write_section

OUT = Path(__file__).resolve().parent / "results" / "pmpi_overhead.md"
TITLE = """# What libcollkit_pmpi.so adds to a call (benchmarks/bench_pmpi_overhead.py)

One section per MPI and mode, each with its machine, date, load and command."""
FIELDS = ("direct_ns", "interposed_ns", "overhead_ns")


def old_is(args: argparse.Namespace, builds: list[Path]) -> str:
    """What the report calls the --against build: --old-is, else its folder."""
    return str(args.old_is) if args.old_is else f"`{builds[0]}`"


def table(rules: list[dict[str, object]]) -> str:
    return json.dumps({"format": "collkit-tuning", "version": 1, "rules": rules})


def callgrind(cmd: list[str], program: str, env: dict[str, str], count: int) -> dict[str, float]:
    """Instructions per call of `cmd` (a launch of collkit_pmpi_overhead --count) through the
    library and direct: callgrind's inclusive counts of interposed_calls and direct_calls (only
    the counted calls are collected) over `count`. valgrind runs the program under the launcher."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "callgrind.out"
        at = cmd.index(program)
        vg = ["valgrind", "--tool=callgrind", "--collect-atstart=no",
              "--toggle-collect=*counted*", f"--callgrind-out-file={out}"]  # fmt: skip
        r = subprocess.run([*cmd[:at], *vg, *cmd[at:]], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} under valgrind failed:\n{r.stderr[-2000:]}")
        text = subprocess.run(["callgrind_annotate", "--inclusive=yes", str(out)],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
    got: dict[str, float] = {}
    for name in ("interposed_calls", "direct_calls"):
        m = re.search(r"^\s*([\d,]+) .*" + name + r"\(", text, re.M)
        if m is None:
            raise SystemExit(f"callgrind gave no count for {name}:\n{text[-2000:]}")
        got[name] = int(m.group(1).replace(",", "")) / count
    through, direct = got["interposed_calls"], got["direct_calls"]
    return {"interposed": through, "direct": direct, "overhead": through - direct}


# The irregular calls counted by --irregular, with the algorithm collkit's C API and the table
# use: at P = 2 each is one exchange between the two ranks (bench_irregular.py's best at P = 2
# are these or their equals), the alltoallv's counts exchanged first.
IRREGULAR = {"alltoallv": "alltoallv:linear", "allgatherv": "allgatherv:recursive_doubling"}
IRREGULAR_BYTES = (8, 64, 1024)


def irregular(args: argparse.Namespace, mpi: MPI, bindir: Path, builds: list[Path]) -> None:
    """--irregular: instructions per call of the MPI's irregular call, collkit's C API and the
    call through the library, each build's library (this build's program drives them all)."""
    tmp = Path(tempfile.mkdtemp())
    path = tmp / "routed.json"
    path.write_text(table([{"collective": c, "P": [1, 64], "bytes": [0, 1 << 62], "algorithm": a}
                           for c, a in IRREGULAR.items()]))  # fmt: skip
    program = str(bindir / "collkit_pmpi_overhead")
    counted: list[tuple[str, int, list[dict[str, float]]]] = []
    for coll, algo in IRREGULAR.items():
        for n in IRREGULAR_BYTES:
            per_lib = []
            for b in builds:
                full, _ = launch_env(mpi, args.np, {"LD_PRELOAD": str(b / "libcollkit_pmpi.so"),
                                                    "COLLKIT_TUNING": str(path),
                                                    "COLLKIT_SETUP_US": "0"})  # fmt: skip
                got: dict[str, float] = {}
                for direct in ([], ["--direct", algo]):
                    prog = [program, "--collective", coll, "--bytes", str(n), *direct,
                            "--count", str(args.count), "--calls", "200"]  # fmt: skip
                    cmd = launch_command(mpi, 1, prog)
                    if args.np > 1:  # the other ranks plain
                        cmd += [":", "-n", str(args.np - 1), *prog]
                    c = callgrind(cmd, program, full, args.count)
                    got["routed"] = c["interposed"]
                    got["ck" if direct else "native"] = c["direct"]
                per_lib.append(got)
            counted.append((coll, n, per_lib))
            print(f"{coll:<10} {n:>5} B " + "   ".join(
                f"native {g['native']:8.0f}  C API {g['ck']:8.0f}  through the library "
                f"{g['routed']:8.0f} instructions" for g in per_lib), flush=True)  # fmt: skip
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    names = ["this build"] if args.against is None else ["old", "new"]
    old = "" if args.against is None else f" Old: {old_is(args, builds)}; new: this build."
    again = "" if args.against is None else " --against OLD"
    waits = (" Rank 0's count includes its polls while it waits for the plain ranks, which the "
             "load moves." if args.np > 1 else "")  # fmt: skip
    lines = [
        f"{mpi.version}, {machine_name()}, {date}, load {os.getloadavg()[0]:.1f} at the end; "
        f"P = {args.np}, rank 0 under valgrind --tool=callgrind, {args.count} calls counted each "
        f"way after 200 to warm up.{old} Reproduce: `.venv/bin/python "
        f"benchmarks/bench_pmpi_overhead.py --irregular --np {args.np}{again}`.",
        "Instructions per call of rank 0: the MPI's own call (PMPI_), collkit's C API with the "
        "algorithm named, and the MPI_ call through the library with a table routing it to that "
        f"algorithm; char elements, equal counts, packed displacements.{waits}",
        "",
        "| collective (collkit's algorithm) | bytes per pair or rank | "
        + " | ".join(f"{k}: native | {k}: C API | {k}: through the library" for k in names)
        + " |",
        "| --- | ---: | " + " | ".join("---: | ---: | ---:" for _ in names) + " |",
    ]
    for coll, n, per_lib in counted:
        cells = [f"{g['native']:.0f} | {g['ck']:.0f} | {g['routed']:.0f}" for g in per_lib]
        lines.append(f"| {coll} ({IRREGULAR[coll]}) | {n} | " + " | ".join(cells) + " |")
    heading = (f"## {MPI_NAMES.get(mpi.kind, mpi.version)}: irregular calls at P = {args.np}, "
               "instructions per call (callgrind)")  # fmt: skip
    print(f"{heading}\n\n" + "\n".join(lines))
    write_section(OUT, TITLE, heading, "\n".join(lines))
    print(f"wrote its section of {OUT}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpiexec", default=None)
    ap.add_argument("--blocks", type=int, default=300)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--against", type=Path, default=None, help="another build's folder")
    ap.add_argument("--pairs", type=int, default=3, help="old/new alternations with --against")
    ap.add_argument("--old-is", default=None, help="what the old build is, for the report "
                    "(e.g. 'a library without X'; default: its folder)")  # fmt: skip
    ap.add_argument("--build", type=Path, default=None, help="the new build's folder "
                    "(default: this collkit's, built if needed)")  # fmt: skip
    ap.add_argument("--callgrind", action="store_true",
                    help="instructions per call under valgrind's callgrind, not times")  # fmt: skip
    ap.add_argument("--count", type=int, default=2000, help="calls counted (--callgrind)")
    ap.add_argument("--irregular", action="store_true",
                    help="alltoallv and allgatherv under callgrind: the MPI's, the C API's, "
                    "through the library")  # fmt: skip
    ap.add_argument("--np", type=int, default=1, help="ranks with --irregular (rank 0 counted)")
    args = ap.parse_args()
    args.callgrind = args.callgrind or args.irregular
    if args.callgrind and (shutil.which("valgrind") is None or
                           shutil.which("callgrind_annotate") is None):  # fmt: skip
        ap.error("--callgrind needs valgrind and callgrind_annotate on PATH")
    mpi = find_mpi(args.mpiexec)
    bindir = build(mpi) if args.build is None else args.build.expanduser().resolve()
    builds = [bindir] if args.against is None else [args.against.expanduser().resolve(), bindir]
    for b in builds:
        if not (b / "libcollkit_pmpi.so").is_file():
            ap.error(f"{b} has no libcollkit_pmpi.so (a collkit MPI build folder is needed)")
    if args.irregular:
        irregular(args, mpi, bindir, builds)
        return
    rounds = 1 if args.against is None or args.callgrind else args.pairs
    tmp = Path(tempfile.mkdtemp())
    tables = {
        "none": None,
        "other": table([{"collective": "alltoall", "P": [1, 64], "bytes": [0, 8],
                         "algorithm": "alltoall:pairwise"}]),
        "uncovered": table([{"collective": c, "P": [2, 64], "bytes": [0, 1 << 20],
                             "algorithm": a} for c, a in (("allreduce", "allreduce:rd"),
                                                          ("bcast", "bcast:binomial"),
                                                          ("barrier", "barrier:dissemination"))]),
    }  # fmt: skip
    ours = {"allreduce": "allreduce:rd", "bcast": "bcast:binomial",
            "barrier": "barrier:dissemination"}  # fmt: skip
    rows = []
    # --callgrind: (collective, table, each library's instructions per call)
    counted: list[tuple[str, str, list[dict[str, float]]]] = []
    for coll in ("allreduce", "bcast", "barrier"):
        if coll != "barrier":  # a barrier has no size to leave to the MPI
            tables["elsewhere"] = tables["elsewhere, alternating"] = table(
                [{"collective": coll, "P": [1, 64], "bytes": [1024, 1 << 20],
                  "algorithm": ours[coll]}])  # fmt: skip
        else:
            tables.pop("elsewhere", None)
            tables.pop("elsewhere, alternating", None)
        tables["routed"] = table(
            [{"collective": coll, "P": [1, 64], "bytes": [0, 1 << 20], "algorithm": ours[coll]}]
        )
        for name, text in tables.items():
            env_table = {}
            if text is not None:
                path = tmp / f"{name.replace(', ', '-')}.json"
                path.write_text(text)
                env_table["COLLKIT_TUNING"] = str(path)
            got: list[list[dict[str, float]]] = [[] for _ in builds]
            program = str(bindir / "collkit_pmpi_overhead")
            prog = [program, "--collective", coll]
            if name == "routed":
                prog += ["--direct", ours[coll]]
            if name.endswith("alternating"):
                prog += ["--alternate"]
            if args.callgrind:
                per_lib = []
                for b in builds:
                    full, _ = launch_env(mpi, 1, {"LD_PRELOAD": str(b / "libcollkit_pmpi.so"),
                                                  **env_table})  # fmt: skip
                    cmd = launch_command(mpi, 1, [*prog, "--count", str(args.count),
                                                  "--calls", "200"])  # fmt: skip
                    per_lib.append(callgrind(cmd, program, full, args.count))
                counted.append((coll, name, per_lib))
                print(f"{coll:<10} {name:<10} " + "   ".join(
                    f"direct {c['direct']:7.1f}  through the library {c['interposed']:7.1f}  "
                    f"overhead {c['overhead']:6.1f} instructions" for c in per_lib))  # fmt: skip
                continue
            for _ in range(rounds):
                for k, b in enumerate(builds):  # old, new, old, new, ...
                    full, _ = launch_env(mpi, 1, {"LD_PRELOAD": str(b / "libcollkit_pmpi.so"),
                                                  **env_table})  # fmt: skip
                    run = [*prog, "--blocks", str(args.blocks), "--calls", str(args.calls)]
                    r = subprocess.run(launch_command(mpi, 1, run), env=full,
                                       capture_output=True, text=True, check=True)  # fmt: skip
                    got[k].append(json.loads(r.stdout.strip().splitlines()[-1]))
            med = [{f: statistics.median(d[f] for d in runs) for f in FIELDS} for runs in got]
            rows.append((coll, name, med, [[d["overhead_ns"] for d in runs] for runs in got]))
            print(f"{coll:<10} {name:<10} " + "   ".join(
                f"direct {m['direct_ns']:8.2f} ns  through the library {m['interposed_ns']:8.2f} ns"
                f"  overhead {m['overhead_ns']:6.2f} ns" for m in med))  # fmt: skip
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = (
        f"{mpi.version}, {machine_name()}, {date}, load {os.getloadavg()[0]:.1f} at the end; "
        f"one rank, {args.blocks} block pairs of {args.calls} calls."
    )
    if args.callgrind:
        head = (f"{mpi.version}, {machine_name()}, {date}; one rank, valgrind --tool=callgrind, "
                f"{args.count} calls counted each way after 200 to warm up.")  # fmt: skip
        again = "" if args.against is None else " --against OLD"
        mode = "instructions per call (callgrind)"
        names = ["this build"] if args.against is None else ["old", "new"]
        old = "" if args.against is None else f" Old: {old_is(args, builds)}; new: this build."
        cmd_text = f".venv/bin/python benchmarks/bench_pmpi_overhead.py --callgrind{again}"
        lines = [
            f"{head}{old} Reproduce: `{cmd_text}`.",
            "Instructions per call: callgrind's inclusive count of the program's loop through the "
            "library and of its loop direct (PMPI_, or for `routed` collkit's C API), over the "
            "calls; overhead = their difference. Independent of the machine's load.",
            "",
            "| collective | table | "
            + " | ".join(f"{n}: direct | {n}: through the library | {n}: overhead" for n in names)
            + " |",
            "| --- | --- | " + " | ".join("---: | ---: | ---:" for _ in names) + " |",
        ]
        for c, n, per_lib in counted:
            cells = [
                f"{e['direct']:.0f} | {e['interposed']:.0f} | {e['overhead']:.0f}" for e in per_lib
            ]
            lines.append(f"| {c} | {n} | " + " | ".join(cells) + " |")
    elif args.against is None:
        mode = "falling through, and routing to collkit"
        lines = [
            f"{head} Reproduce: `.venv/bin/python benchmarks/bench_pmpi_overhead.py`.",
            "Overhead = median over block pairs of (through the library - direct), per call; "
            "direct is PMPI_, or for `routed` collkit's C API with the algorithm the table routes "
            "to (what the routing adds to a call collkit takes).",
            "",
            "| collective | table | direct (ns) | through the library (ns) | overhead (ns) |",
            "| --- | --- | ---: | ---: | ---: |",
        ]
        for c, n, med, _ in rows:
            m = med[0]
            lines.append(f"| {c} | {n} | {m['direct_ns']:.2f} | {m['interposed_ns']:.2f} | "
                         f"{m['overhead_ns']:.2f} |")  # fmt: skip
    else:
        mode = "another build's library against this one (--against)"
        lines = [
            f"{head} Old: {old_is(args, builds)}; new: this build. Reproduce: "
            f"`.venv/bin/python benchmarks/bench_pmpi_overhead.py --against OLD --pairs "
            f"{args.pairs}`.",
            "Each case ran old, new, old, new, ... in turn; overhead per run = median over block "
            "pairs of (through the library - direct) per call; the cells are the median of the "
            "runs, then each run's.",
            "",
            "| collective | table | old overhead (ns) | new overhead (ns) | new - old (ns) | "
            "old runs | new runs |",
            "| --- | --- | ---: | ---: | ---: | --- | --- |",
        ]
        for c, n, med, runs in rows:
            o, w = med[0]["overhead_ns"], med[1]["overhead_ns"]
            each = [", ".join(f"{x:.0f}" for x in r) for r in runs]
            lines.append(f"| {c} | {n} | {o:.2f} | {w:.2f} | {w - o:+.2f} | {each[0]} | "
                         f"{each[1]} |")  # fmt: skip
    heading = f"## {MPI_NAMES.get(mpi.kind, mpi.version)}: {mode}"
    print(f"{heading}\n\n" + "\n".join(lines))
    write_section(OUT, TITLE, heading, "\n".join(lines))
    print(f"wrote its section of {OUT}")


if __name__ == "__main__":
    main()
