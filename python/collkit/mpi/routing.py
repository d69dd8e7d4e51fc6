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

# The call whose routing collkit_pmpi_overhead measures for each collective: (collective, the
# algorithm the table routes it to, ranks). A rooted regular call's decision reads its root too
# (bcast's); the irregular ones keyed by P alone widen their arrays and ask the rank and size
# (alltoallv's), those keyed by the vector's total sum it too (allgatherv's); every other
# collective's decision is an allreduce's.
STAND_IN: dict[str, tuple[str, str, int]] = {
    "allreduce": ("allreduce", "allreduce:rd", 1),
    "bcast": ("bcast", "bcast:binomial", 1),
    "barrier": ("barrier", "barrier:dissemination", 1),
    "alltoallv": ("alltoallv", "alltoallv:linear", 2),
    "allgatherv": ("allgatherv", "allgatherv:recursive_doubling", 2),
}


def stand_in(collective: str) -> str:
    """The collective of STAND_IN whose routing `collective` is charged."""
    from collkit.collectives import ROOTED
    from collkit.tune.irregular import BY_P_ALONE, IRREGULAR

    if collective in STAND_IN:
        return collective
    if collective in IRREGULAR:
        return "alltoallv" if collective in BY_P_ALONE else "allgatherv"
    return "bcast" if collective in ROOTED else "allreduce"


def routing_cost_us(
    mpi: MPI, *, collective: str = "allreduce", calls: int = 2000, blocks: int = 60
) -> float:
    """µs per call that libcollkit_pmpi adds to a call of `collective` it gives to collkit
    (>= 0): the cost of its stand-in's routing (stand_in)."""
    coll, algorithm, nranks = STAND_IN[stand_in(collective)]
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
