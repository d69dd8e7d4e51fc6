"""What the interposition library adds to a call it routes to collkit, measured on this machine.

`collkit tune` times collkit's algorithms through the C API (`ck_<collective>`), as the bench
driver links them; a program reaches them through libcollkit_pmpi.so, whose routing (the
decision, the table, the rule's limits) costs each call ~0.1 µs more (docs/tuning.md). That is a
quarter of an 8-byte bcast on Open MPI here: a candidate that wins by less than it in tune's
blocks loses in the program. tune adds this cost to every collkit candidate before choosing.

Measured with collkit_pmpi_overhead: the library preloaded with a table that routes the call to
one collkit algorithm, against that algorithm's ck_<collective> called directly, in alternating
blocks; the median over block pairs of the difference, per call. The routing differs by kind of
call (an alltoallv's int arrays are widened and its rank and size asked each call, ~600
instructions, where an allreduce's decision is ~120), so each collective is charged the cost of
the call that stands for its kind (STAND_IN): the regular ones on one rank (their routing does not
depend on P), the irregular ones on two (their calls exchange with a peer).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from collkit.errors import UnsupportedError
from collkit.mpi.base import MPI
from collkit.mpi.launch import launch_env, preload_command
from collkit.mpi.programs import build

# The regular calls whose routing collkit_pmpi_overhead measures, with the algorithm the table
# routes each to: a rooted call's decision reads its root too (bcast's), every other regular
# collective's is an allreduce's. The irregular ones are measured with the stand-in of their
# kind (stand_in), on two ranks (their calls exchange with a peer).
REGULAR: dict[str, str] = {
    "allreduce": "allreduce:rd",
    "bcast": "bcast:binomial",
    "barrier": "barrier:dissemination",
}


def stand_in(collective: str) -> str:
    """The collective whose routing `collective` is charged: itself where it is measured, a
    rooted one's bcast, another regular one's allreduce; an irregular one keyed by P alone (its
    int arrays widened, the rank and size asked each call) the one of those with per-pair counts,
    one keyed by the vector's total (summed each call too) the one of those that reduces nothing:
    the two irregular calls collkit_pmpi_overhead makes."""
    from collkit.collectives import ROOTED
    from collkit.collectives import collective as spec
    from collkit.tune.irregular import BY_P_ALONE, BY_TOTAL, IRREGULAR

    if collective in REGULAR:
        return collective
    if collective in IRREGULAR:
        if collective in BY_P_ALONE:
            return next(c for c in BY_P_ALONE if spec(c)["counts"] == "per_pair")
        return next(c for c in BY_TOTAL if not spec(c)["reduction"])
    return "bcast" if collective in ROOTED else "allreduce"


def _measured_call(collective: str) -> tuple[str, str, int]:
    """(collective, algorithm, ranks) of `collective`'s stand-in: an irregular one's algorithm
    is its first by name (the routing around the call is measured, not the algorithm)."""
    from collkit.algorithms import algorithms

    c = stand_in(collective)
    if c in REGULAR:
        return c, REGULAR[c], 1
    return c, sorted(a["name"] for a in algorithms(c))[0], 2


def routing_cost_us(
    mpi: MPI, *, collective: str = "allreduce", calls: int = 2000, blocks: int = 60
) -> float:
    """µs per call that libcollkit_pmpi adds to a call of `collective` it gives to collkit
    (>= 0): the cost of its stand-in's routing (stand_in)."""
    coll, algorithm, nranks = _measured_call(collective)
    bindir = build(mpi, ["libcollkit_pmpi.so", "collkit_pmpi_overhead"])
    with tempfile.TemporaryDirectory(prefix="collkit-routing-") as tmp:
        table = Path(tmp) / "routed.json"
        rule = {
            "collective": coll,
            "P": [1, nranks],
            "bytes": [0, 1 << 62] if nranks > 1 else [0, 64],
            "algorithm": algorithm,
        }
        table.write_text(json.dumps({"format": "collkit-tuning", "version": 1, "rules": [rule]}))
        env, _ = launch_env(mpi, nranks)
        for k in ("COLLKIT_VERBOSE", "COLLKIT_STATS"):  # timing each call would be measured too
            env.pop(k, None)
        program = [
            str(bindir / "collkit_pmpi_overhead"),
            *("--collective", coll, "--direct", algorithm),
            *("--calls", str(calls), "--blocks", str(blocks)),
            *(("--bytes", "8") if nranks > 1 else ()),
        ]
        library = bindir / "libcollkit_pmpi.so"
        cmd = preload_command(mpi, nranks, program, library, {"COLLKIT_TUNING": str(table)})
        try:
            p = subprocess.run(
                cmd, env=env, capture_output=True, text=True, timeout=120, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise UnsupportedError(f"measuring the library's routing failed: {e}") from None
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        raise UnsupportedError(
            f"measuring the library's routing failed (exit {p.returncode}): "
            f"{(p.stderr or p.stdout)[-1000:]}"
        )
    return max(0.0, float(json.loads(lines[-1])["overhead_ns"]) / 1000.0)
