"""`collkit tune allgatherv --counts` on the PyPI MPICH, end to end: the table it writes routes a
program's MPI_Allgatherv (tests/programs/allgatherv_app.c, knowing nothing of collkit) under
`collkit run --tuning` where the table says, keyed by the call's total bytes, and the program's
results are the MPI's own; a table tune makes from the simulator at the same vectors routes them
to collkit's algorithm (a measured one may keep the MPI's at every size on a loaded machine).
Small on purpose: P = 2, 2 sizes, 1 form, a few iterations."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from collkit.counts import parse_counts
from collkit.mpi import MPI, launch_command, launch_env
from collkit.results import read_jsonl
from collkit.tune.table import load
from mpi_support import PROGRAMS, TIMEOUT_S, mpich_or_skip, run_or_kill

VERBOSE = r"collkit: allgatherv P=2 {bytes} B \(class \d+\.\.\d+ B\) -> {route} \({why}\)"


def test_a_tuned_table_routes_allgatherv_by_its_total_and_keeps_the_mpis_result(
    tmp_path: Path,
) -> None:
    mpi = mpich_or_skip()
    env = dict(os.environ, MPIEXEC=mpi.mpiexec, MPICXX=mpi.mpicxx)
    out = tmp_path / "tuned"
    tune = [
        sys.executable, "-m", "collkit", "tune", "allgatherv", "-np", "2",
        "--sizes", "8,256", "--counts", "random(3,1)", "--only", "ring",
        "--no-mpi-algos", "--patterns", "back_to_back", "--routing-us", "0",
        "--iters", "10", "--warmup", "2", "--max-ms", "50", "--rounds", "2",
        "-o", str(out), "--no-plot", "--json",
    ]  # fmt: skip
    r = run_or_kill(tune, env, TIMEOUT_S)
    assert r.returncode == 0, r.stderr[-3000:]
    decisions = [json.loads(x) for x in r.stdout.splitlines()]
    # one decision per measured vector: the form at each size, the whole vector's bytes
    assert sorted(d["counts"] for d in decisions) == ["random(3,16)", "random(3,512)"]
    vectors = {d["counts"]: parse_counts(d["counts"]).vector(2) for d in decisions}
    for d in decisions:
        assert d["bytes"] == sum(vectors[d["counts"]])
    table = load(out / "collkit-tuning.json")
    assert {x.collective for x in table.rules} == {"allgatherv"}
    assert min(x.bytes[0] for x in table.rules) == min(d["bytes"] for d in decisions)
    # the program's calls: each measured vector, and one below every rule (the MPI's)
    calls = list(vectors.values())
    below = min(x.bytes[0] for x in table.rules) - 1
    if below >= 0:
        calls.append([below, 0])
    exe = tmp_path / "allgatherv_app"
    cc = Path(mpi.mpicxx).with_name(Path(mpi.mpicxx).name.replace("mpicxx", "mpicc"))
    if not cc.exists():
        pytest.skip(f"no mpicc beside {mpi.mpicxx}")
    subprocess.run([str(cc), "-O1", "-o", str(exe), str(PROGRAMS / "allgatherv_app.c")], check=True)
    args = [str(exe), str(tmp_path / "plain"), *(",".join(map(str, v)) for v in calls)]
    full, _ = launch_env(mpi, 2)
    plain = run_or_kill(launch_command(mpi, 2, args), full)
    assert plain.returncode == 0, plain.stderr[-2000:]
    # the measured table, and one tune makes from the simulator at the same vectors: its rule
    # (the fastest simulated) routes the calls to collkit, whatever this machine's load
    sim = tmp_path / "simulated"
    r = run_or_kill(
        [
            sys.executable,
            "-m",
            "collkit",
            "tune",
            "allgatherv",
            "-np",
            "2",
            "--sizes",
            "8,256",
            "--counts",
            "random(3,1)",
            "--only",
            "ring",
            "--simulate",
            "postal",
            "-o",
            str(sim),
            "--no-plot",
        ],
        env,
        TIMEOUT_S,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    routed = []
    for k, path in enumerate([out / "collkit-tuning.json", sim / "collkit-tuning.json"]):
        routed += run_under(mpi, env, path, args, calls, tmp_path / f"run{k}")
    assert "allgatherv:ring" in routed  # the simulated table's rule: collkit's call ran


def run_under(
    mpi: MPI, env: dict[str, str], path: Path, args: list[str], calls: list[list[int]], d: Path
) -> list[str]:
    """The program under `collkit run --tuning path`: the MPI's results (args[1]'s files), each
    call where the table says (--stats, and the decision log); the routes taken."""
    d.mkdir()
    table = load(path)
    stats = d / "calls.jsonl"
    # A measured rule's calls on MPI_COMM_WORLD go to the MPI until the MPI time the table gives
    # them pays for the communicator's setup (rent-then-buy, tests/mpi/test_pmpi_deferral.py): a few
    # calls never do. Here the table's routing is tested: the setup is taken as free.
    env = dict(env, COLLKIT_SETUP_US="0")
    lib = run_or_kill(
        [
            sys.executable,
            "-m",
            "collkit",
            "run",
            "-np",
            "2",
            "--verbose",
            "--tuning",
            str(path),
            "--stats",
            str(stats),
            "--",
            args[0],
            str(d / "lib"),
            *args[2:],
        ],
        env,
        TIMEOUT_S,
    )
    assert lib.returncode == 0, lib.stderr[-3000:]
    for rank in range(2):  # the result is the MPI's own, bit for bit
        got = (d / f"lib.{rank}").read_text()
        assert got == Path(f"{args[1]}.{rank}").read_text()
        assert len(got.splitlines()) == len(calls)
    routes = {(s.algorithm, s.bytes) for s in read_jsonl(stats) if s.collective == "allgatherv"}
    logged: set[tuple[int, str]] = set()
    out = []
    for v in calls:
        total = sum(v)
        rule = table.rule_for("allgatherv", 2, total)
        want = rule.algorithm if rule is not None else "native"
        out.append(want)
        assert (want, total) in routes, (want, total, routes, table.rules)
        # the log says a (size class, route) once, with its first call's reason
        if (total.bit_length(), want) in logged:
            continue
        logged.add((total.bit_length(), want))
        why = "table" if want != "native" else ("table: native" if rule else "not in the table")
        pattern = VERBOSE.format(bytes=total, route=re.escape(want), why=why)
        assert re.search(pattern, lib.stderr), (pattern, lib.stderr[-3000:])
    return out
