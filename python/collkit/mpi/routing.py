"""What the interposition library adds to a call it routes to collkit, measured on this machine.

`collkit tune` times collkit's algorithms through the C API (`ck_<collective>`), as the bench
driver links them; a program reaches them through libcollkit_pmpi.so, whose routing (the
decision, the table, the rule's limits) costs each call ~0.1 µs more (docs/tuning.md). That is a
quarter of an 8-byte bcast on Open MPI here: a candidate that wins by less than it in tune's
blocks loses in the program. tune adds this cost to every collkit candidate before choosing.

Measured with collkit_pmpi_overhead on one rank (the routing does not depend on P): the library
preloaded with a table that routes MPI_Allreduce to allreduce:rd, against ck_allreduce called
directly, in alternating blocks; the median over block pairs of the difference, per call.
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


def routing_cost_us(mpi: MPI, *, calls: int = 2000, blocks: int = 60) -> float:
    """µs per call that libcollkit_pmpi adds to a call it gives to collkit (>= 0)."""
    bindir = build(mpi, ["libcollkit_pmpi.so", "collkit_pmpi_overhead"])
    with tempfile.TemporaryDirectory(prefix="collkit-routing-") as tmp:
        table = Path(tmp) / "routed.json"
        rule = {
            "collective": "allreduce",
            "P": [1, 1],
            "bytes": [0, 64],
            "algorithm": "allreduce:rd",
        }
        table.write_text(json.dumps({"format": "collkit-tuning", "version": 1, "rules": [rule]}))
        env, _ = launch_env(mpi, 1)
        for k in ("COLLKIT_VERBOSE", "COLLKIT_STATS"):  # timing each call would be measured too
            env.pop(k, None)
        program = [
            str(bindir / "collkit_pmpi_overhead"),
            *("--collective", "allreduce", "--direct", "allreduce:rd"),
            *("--calls", str(calls), "--blocks", str(blocks)),
        ]
        library = bindir / "libcollkit_pmpi.so"
        cmd = preload_command(mpi, 1, program, library, {"COLLKIT_TUNING": str(table)})
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
