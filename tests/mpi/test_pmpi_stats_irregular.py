"""The interposition library's statistics (COLLKIT_STATS, `collkit run --stats`) for gatherv,
scatterv and alltoallv, whose rules are keyed by P alone: each row's bytes are the call's total,
the whole vector's bytes (as bench's rows and allgatherv's say), though no rank has the whole
vector. Checked on tests/programs/irregular_stats.c (blocking and non-blocking calls, a root in
place) routed to collkit's algorithms by a table and to the MPI without one, on both MPIs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from collkit.mpi import MPI
from collkit.mpi.stats import read_stats, world_rank
from mpi_support import TIMEOUT_S, built, mpich_or_skip, openmpi_or_skip, run_or_kill

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "irregular_stats.c"
EVERY_SIZE = [0, 1 << 62]  # a rule for every size (tuning.hpp's kMaxRuleBytes)
ALGORITHMS = {
    "gatherv": "gatherv:binomial",
    "scatterv": "scatterv:linear",
    "alltoallv": "alltoallv:pairwise",
}
ROUNDS = 3


def totals(P: int) -> dict[str, int]:
    """Each call's total bytes (ints of 4 bytes), from the program's count vectors."""
    return {
        "gatherv": 4 * sum(r + 1 for r in range(P)),
        "scatterv": 4 * sum(2 * (r + 1) for r in range(P)),
        "alltoallv": 4 * sum(r + q + 1 for r in range(P) for q in range(P)),
    }


def program(mpi: MPI, tmp: Path) -> Path:
    built(mpi)
    cc = Path(mpi.mpicxx).parent / Path(mpi.mpicxx).name.replace("mpicxx", "mpicc")
    if not cc.exists():
        pytest.skip(f"no mpicc beside {mpi.mpicxx}")
    exe = tmp / "irregular_stats"
    subprocess.run([str(cc), "-O1", "-o", str(exe), str(PROGRAM)], check=True)
    return exe


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
@pytest.mark.parametrize("routed", [True, False])
@pytest.mark.parametrize("P", [2, 3])
def test_stats_bytes_are_the_calls_total(kind: str, routed: bool, P: int, tmp_path: Path) -> None:
    mpi = mpich_or_skip() if kind == "mpich" else openmpi_or_skip()
    exe = program(mpi, tmp_path)
    rules = [
        {"collective": c, "P": [2, 64], "bytes": EVERY_SIZE, "algorithm": a}
        for c, a in ALGORITHMS.items()
    ]
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"format": "collkit-tuning", "version": 1, "rules": rules}))
    stats = tmp_path / "calls.jsonl"
    env = dict(os.environ, MPIEXEC=mpi.mpiexec, MPICXX=mpi.mpicxx, COLLKIT_SETUP_US="0")
    args = [sys.executable, "-m", "collkit", "run", "-np", str(P), "--stats", str(stats)]
    if routed:
        args += ["--tuning", str(table)]
    r = run_or_kill([*args, "--", str(exe), str(ROUNDS)], env, TIMEOUT_S)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout[-2000:] + r.stderr[-3000:]
    every = read_stats(stats, rank=None)  # every row a valid one: no negative bytes
    # Each rank writes its own rows, and each says the call's total (one sum over the ranks).
    by_rank = [
        {(row.collective, row.algorithm, row.P, row.bytes): row.iterations for row in every
         if world_rank(row) == r}
        for r in range(P)
    ]  # fmt: skip
    assert all(mine == by_rank[0] for mine in by_rank), by_rank
    rows = read_stats(stats)
    got = by_rank[0]
    for collective, total in totals(P).items():
        route = ALGORITHMS[collective] if routed else "native"
        # gatherv: the blocking call and MPI_Igatherv (the root in place) each round
        calls = 2 * ROUNDS if collective == "gatherv" else ROUNDS
        assert got.get((collective, route, P, total)) == calls, (collective, total, got)
    assert all(row.bytes >= 0 for row in rows)
    # collkit's own exchange of a gatherv's or scatterv's counts (2P int64s) is no call of the
    # program's: the only allreduce counted is the program's own check, 4 bytes
    assert {row.bytes for row in rows if row.collective == "allreduce"} == {4}, got


def test_allgatherv_decision_follows_the_total(tmp_path: Path) -> None:
    """A remembered allgatherv decision holds only for its vector's total: calls alternating 16 B
    and 4 KiB totals (the same buffers, datatypes and, on rank 0, the same own block) go to
    collkit and to the MPI by the table's byte ranges, call by call (COLLKIT_STATS rows)."""
    mpi = mpich_or_skip()
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py is not installed")
    rule = {"collective": "allgatherv", "P": [2, 64], "bytes": [0, 64]}
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"format": "collkit-tuning", "version": 1,
                                 "rules": [{**rule, "algorithm": "allgatherv:ring"}]}))  # fmt: skip
    stats = tmp_path / "calls.jsonl"
    program = Path(__file__).resolve().parents[1] / "programs" / "mpi4py_allgatherv_totals.py"
    env = dict(os.environ, MPIEXEC=mpi.mpiexec, MPICXX=mpi.mpicxx, COLLKIT_SETUP_US="0")
    args = [sys.executable, "-m", "collkit", "run", "-np", "2", "--stats", str(stats)]
    args += ["--tuning", str(table), "--", sys.executable, str(program), str(ROUNDS)]
    r = run_or_kill(args, env, TIMEOUT_S)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout[-2000:] + r.stderr[-3000:]
    got = {(row.algorithm, row.bytes): row.iterations for row in read_stats(stats)
           if row.collective == "allgatherv"}  # fmt: skip
    assert got == {("allgatherv:ring", 16): ROUNDS, ("native", 4096): ROUNDS}, got
