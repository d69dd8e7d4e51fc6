"""What libcollkit_pmpi.so adds to a call it gives to the MPI (the goal: under 50 ns).

One rank, the library preloaded, MPI_Allreduce / MPI_Bcast / MPI_Barrier through the library and
PMPI_* straight to the MPI alternating in blocks of back-to-back calls (collkit_pmpi_overhead);
the overhead is the median over block pairs of (library - direct), per call. Three tables:

  none       COLLKIT_TUNING unset: the library only forwards
  other      a table with rules for other collectives only: one flag test, then PMPI_
  uncovered  a table with rules for this collective, none for this P: the decision runs
             (communicator size, kind, type size, rule scan) and finds nothing
  routed     a table that routes the call to collkit's algorithm, against collkit's C API
             (ck_<collective> with that name) called directly: what the routing adds to a call
             collkit takes (the decision, the rule's limits, the table)

    .venv/bin/python benchmarks/bench_pmpi_overhead.py [--mpiexec ...] [--blocks 300]

Prints a table and writes benchmarks/results/pmpi_overhead.md.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import subprocess
import tempfile
from pathlib import Path

from collkit.bench import machine_name
from collkit.mpi import build, find_mpi, launch_command, launch_env

OUT = Path(__file__).resolve().parent / "results" / "pmpi_overhead.md"


def table(rules: list[dict[str, object]]) -> str:
    return json.dumps({"format": "collkit-tuning", "version": 1, "rules": rules})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpiexec", default=None)
    ap.add_argument("--blocks", type=int, default=300)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    mpi = find_mpi(args.mpiexec)
    bindir = build(mpi)
    lib = str(bindir / "libcollkit_pmpi.so")
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
    for coll in ("allreduce", "bcast", "barrier"):
        tables["routed"] = table(
            [{"collective": coll, "P": [1, 64], "bytes": [0, 1 << 20], "algorithm": ours[coll]}]
        )
        for name, text in tables.items():
            env = {"LD_PRELOAD": lib}
            if text is not None:
                path = tmp / f"{name}.json"
                path.write_text(text)
                env["COLLKIT_TUNING"] = str(path)
            full, _ = launch_env(mpi, 1, env)
            prog = [str(bindir / "collkit_pmpi_overhead"), "--collective", coll]
            prog += ["--blocks", str(args.blocks), "--calls", str(args.calls)]
            if name == "routed":
                prog += ["--direct", ours[coll]]
            r = subprocess.run(
                launch_command(mpi, 1, prog), env=full, capture_output=True, text=True, check=True
            )
            d = json.loads(r.stdout.strip().splitlines()[-1])
            rows.append((coll, name, d["direct_ns"], d["interposed_ns"], d["overhead_ns"]))
            print(
                f"{coll:<10} {name:<10} direct {d['direct_ns']:8.2f} ns   through the library "
                f"{d['interposed_ns']:8.2f} ns   overhead {d['overhead_ns']:6.2f} ns"
            )
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# What libcollkit_pmpi.so adds to a call: falling through, and routing to collkit",
        "",
        f"{mpi.version}, {machine_name()}, {date}; one rank, {args.blocks} block pairs of "
        f"{args.calls} calls. Reproduce: `.venv/bin/python benchmarks/bench_pmpi_overhead.py`.",
        "Overhead = median over block pairs of (through the library - direct), per call; "
        "direct is PMPI_, or for `routed` collkit's C API with the algorithm the table routes "
        "to (what the routing adds to a call collkit takes).",
        "",
        "| collective | table | direct (ns) | through the library (ns) | overhead (ns) |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    lines += [f"| {c} | {n} | {d:.2f} | {i:.2f} | {o:.2f} |" for c, n, d, i, o in rows]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
