"""Algorithms measured through the bench driver: interleaved rounds of collkit_bench, one sample
per iteration, the datatype a case is measured with and its sizes in whole elements.

What validate and the executor's calibration (collkit.calibrate_executor) both measure with.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Sequence

from collkit.algorithms import Algorithm
from collkit.collectives import REDUCTIONS
from collkit.errors import InvalidArgumentError, UnsupportedError
from collkit.mpi import MPI, build, launch_command, launch_env

__all__ = [
    "DATATYPE_BYTES",
    "SYNCS",
    "datatype_of",
    "element_sizes",
    "largest_message",
    "measure",
]

DATATYPE_BYTES = {"double": 8, "char": 1}


def datatype_of(collective: str) -> str:
    """The datatype a validation measures `collective` with: double for reductions, else
    char."""
    return "double" if collective in REDUCTIONS else "char"


SYNCS = ("barrier", "window")


def largest_message(algorithm: str, P: int, count: int, elem: int) -> int:
    """Bytes of the largest message any rank sends (it picks the profile's regime)."""
    algo = Algorithm(algorithm)
    biggest = 0
    for r in range(P):
        a = algo.generate_rank(P, r, count, elem, 0).arrays()
        sends = a["len"][a["kind"] == 0]
        if len(sends):
            biggest = max(biggest, int(sends.max()) * elem)
    return biggest


def element_sizes(collective: str, sizes: Sequence[int]) -> list[int]:
    """The sizes rounded down to whole elements of the collective's datatype (one at least)."""
    elem = DATATYPE_BYTES[datatype_of(collective)]
    return sorted({max(elem, s - s % elem) for s in sizes})


def measure(
    mpi: MPI,
    collective: str,
    P: int,
    algos: Sequence[str],
    sizes: Sequence[int],
    *,
    rounds: int,
    iterations: int,
    warmup: int = 5,
    hosts: str | None = None,
    progress: Callable[[str], None] | None = None,
    sync: str = "barrier",
    transports: dict[tuple[str, int], str] | None = None,
) -> dict[tuple[str, int], list[float]]:
    """Per (algorithm, bytes) the per-iteration times (µs, maximum over ranks) of all rounds:
    each round one run of the bench driver with every algorithm, size by size interleaved, the
    algorithm order rotated from round to round. `sync`: how the ranks start each iteration,
    after an MPI_Barrier ("barrier": the ranks leave it at different times) or at one instant
    on clocks aligned to rank 0 ("window", as ReproMPI; iterations a rank starts late are
    dropped): the simulator starts every rank at 0, as the window does. `transports`, when
    given, receives per (algorithm, bytes) how collkit moved the messages (the rows'
    `transport`: "shm" or "p2p (why)")."""
    if sync not in SYNCS:
        raise InvalidArgumentError(f"sync must be one of {', '.join(SYNCS)}, got {sync!r}")
    bindir = build(mpi, ["collkit_bench"])
    env, _ = launch_env(mpi, P, hosts=hosts)
    dt = datatype_of(collective)
    samples: dict[tuple[str, int], list[float]] = {}
    for rnd in range(rounds):
        k = rnd % len(algos)
        order = list(algos[k:]) + list(algos[:k])
        if progress:
            progress(f"{collective} P={P}: round {rnd + 1}/{rounds}")
        args = [
            str(bindir / "collkit_bench"),
            "--collective",
            collective,
            "--algos",
            ",".join(order),
            "--sizes",
            ",".join(map(str, sizes)),
            "--datatype",
            dt,
            "--iters",
            str(iterations),
            "--warmup",
            str(warmup),
            "--max-ms",
            "1000",
            "--interleave",
            "--raw",
            "--sync",
            sync,
        ]
        if rnd == 0:
            args.append("--validate")
        cmd = launch_command(mpi, P, args, hosts=hosts)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise UnsupportedError(
                f"collkit_bench failed (exit {r.returncode}):\n{(r.stdout + r.stderr)[-2000:]}"
            )
        for ln in r.stdout.splitlines():
            if not ln.startswith("{"):
                continue
            d = json.loads(ln)
            if d.get("kind") != "row":
                continue
            if "error" in d or d.get("valid") is False:
                why = d.get("error") or "result differs from the MPI's own collective"
                raise UnsupportedError(f"{d['algorithm']} at {d['bytes']} B: {why}")
            key = (str(d["algorithm"]), int(d["bytes"]))
            samples.setdefault(key, []).extend(float(x) for x in d.get("samples", []))
            if transports is not None and d.get("transport"):
                transports[key] = str(d["transport"])
    return samples
