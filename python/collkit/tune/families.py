"""Algorithm families: the same algorithm under collkit's name and the MPIs' own names, read
from each algorithm's registration (`mpi_equivalents` in core/algorithms/<coll>/<algo>.cpp).

For the MPI that was measured, a tuning file's range gets the forced algorithm that beat the
native call (the same statistical test as collkit's own table); where none did, the MPI's default
stays. For another MPI, the choice is its algorithm of the same family as the measured winner
(collkit's ring is Open MPI's ring and MPICH's ring); the files say which.
"""

from __future__ import annotations

from functools import cache

from collkit.algorithms import algorithms, parse_row_name
from collkit.collectives import collective
from collkit.tune.select import Choice


@cache
def families(coll: str) -> tuple[tuple[str, ...], ...]:
    """Per collkit algorithm of `coll` with MPI equivalents: (its name, *the equivalents)."""
    return tuple(
        (str(s["name"]), *s["mpi_equivalents"]) for s in algorithms(coll) if s["mpi_equivalents"]
    )


def _base(name: str) -> str:
    """'alltoall:bruck(r=4)' -> 'alltoall:bruck': parameters do not change the family."""
    return name.split("(", 1)[0]


def equivalent(coll: str, name: str, prefix: str) -> str | None:
    """The algorithm of the MPI whose prefix is `prefix` (mpich, ompi, impi) in `name`'s
    family, as a row name (mpich:ring), or None."""
    for members in families(coll):
        if _base(name) in members:
            return next((m for m in members if parse_row_name(m).impl == prefix), None)
    return None


def mpi_choice(c: Choice, prefix: str) -> tuple[str | None, str]:
    """The algorithm of the MPI with `prefix` (e.g. 'mpich:ring') for this choice, and how it
    was chosen."""
    if c.mpi is not None and parse_row_name(c.mpi.algorithm).impl == prefix:
        return c.mpi.algorithm, "measured"
    for w in (c.mpi, c.collkit):
        if w is not None:
            e = equivalent(c.collective, w.algorithm, prefix)
            if e is not None:
                return e, f"same family as {w.algorithm}"
    return None, "default"


def per_block_shapes(coll: str) -> set[str]:
    """The block counts of the collective's buffers ('P' where a buffer holds one per rank)."""
    spec = collective(coll)
    return {spec[b][w] for b in ("in", "out") for w in ("at_root", "elsewhere")}
