"""Intel MPI (e.g. PyPI's `impi-rt` and `impi-devel`): its algorithms, forced with
I_MPI_ADJUST_<COLL>=<preset id>, its hydra launcher, and its tuning file.

Intel MPI's selection is set per collective by I_MPI_ADJUST_<COLL>, whose value may list
presets per message-size and process-count range: "<id>:<lo>-<hi>@<p>-<q>;..." (Intel MPI
Library Developer Reference, "I_MPI_ADJUST Family Environment Variables"). Its tuning file is
therefore an environment file of those variables (`impi-tuning.env`): load it with
`set -a; . impi-tuning.env; set +a` before mpiexec, or pass each line with -genv. Ranges
collkit did not tune keep Intel MPI's own choice (preset 0 is its default logic).

The preset ids are the positions in the Developer Reference's list for each collective (2021);
the names are collkit's snake_case of the list's words.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from collkit.mpi.base import MPI, by_collective_and_P

if TYPE_CHECKING:
    from collkit.tune.select import Choice

ALGORITHMS: dict[str, dict[str, int]] = {
    "allreduce": {
        "recursive_doubling": 1,
        "rabenseifner": 2,
        "reduce_bcast": 3,
        "topo_reduce_bcast": 4,
        "binomial_gather_scatter": 5,
        "topo_binomial_gather_scatter": 6,
        "shumilin_ring": 7,
        "ring": 8,
        "knomial": 9,
        "topo_shm_flat": 10,
        "topo_shm_knomial": 11,
        "topo_shm_knary": 12,
    },
    "reduce": {
        "shumilin": 1,
        "binomial": 2,
        "topo_shumilin": 3,
        "topo_binomial": 4,
        "rabenseifner": 5,
        "topo_rabenseifner": 6,
        "knomial": 7,
    },
    "bcast": {
        "binomial": 1,
        "recursive_doubling": 2,
        "ring": 3,
        "topo_binomial": 4,
        "topo_recursive_doubling": 5,
        "topo_ring": 6,
        "shumilin": 7,
        "knomial": 8,
    },
    "alltoall": {"bruck": 1, "isend_irecv_waitall": 2, "pairwise": 3, "plum": 4},
    "barrier": {
        "dissemination": 1,
        "recursive_doubling": 2,
        "topo_dissemination": 3,
        "topo_recursive_doubling": 4,
        "binomial_gather_scatter": 5,
        "topo_binomial_gather_scatter": 6,
    },
    "allgather": {"recursive_doubling": 1, "bruck": 2, "ring": 3, "topo_gatherv_bcast": 4},
    "reduce_scatter_block": {"recursive_halving": 1, "pairwise": 2, "recursive_doubling": 3},
    "gather": {"binomial": 1, "topo_binomial": 2, "shumilin": 3},
    "scatter": {"binomial": 1, "topo_binomial": 2, "shumilin": 3},
}


def variable(collective: str) -> str:
    return f"I_MPI_ADJUST_{collective.upper()}"


class IntelMpi(MPI):
    """Intel MPI with its hydra mpiexec."""

    kind: ClassVar[str] = "intel"
    prefix: ClassVar[str] = "impi"
    tuning_file_name: ClassVar[str] = "impi-tuning.env"

    @classmethod
    def recognizes(cls, version_text: str) -> bool:
        return "Intel(R) MPI" in version_text

    @classmethod
    def version_of(cls, version_text: str) -> str:
        first = next((ln for ln in version_text.splitlines() if "Intel(R) MPI" in ln), "")
        # "Intel(R) MPI Library for Linux* OS, Version 2021.19 Build ..."
        ver = first.split("Version", 1)[1].split()[0] if "Version" in first else ""
        return f"Intel MPI {ver}".strip()

    def algorithms(self, collective: str) -> list[str]:
        return list(ALGORITHMS.get(collective, {}))

    def build_env(self) -> dict[str, str]:
        # The PyPI wheels' wrappers (mpicc, mpicxx) name their install directory only through
        # I_MPI_ROOT (without it they pass -I"I_MPI_SUBSTITUTE_INSTALLDIR/include").
        if os.environ.get("I_MPI_ROOT"):
            return {}
        return {"I_MPI_ROOT": str(Path(self.mpicxx).resolve().parent.parent)}

    def _force(self, collective: str, algorithm: str) -> dict[str, str]:
        return {variable(collective): str(ALGORITHMS[collective][algorithm])}

    def _placement(self, map_by: str) -> list[str]:
        # hydra: one rank per node, or Intel MPI's pinning domain per core / socket
        if map_by == "node":
            return ["-ppn", "1"]
        return ["-genv", "I_MPI_PIN_DOMAIN", "core" if map_by == "core" else "socket"]

    @classmethod
    def tuning_text(cls, choices: Sequence[Choice], header: str) -> str | None:
        return tuning_env(choices, header)


def tuning_env(choices: Sequence[Choice], header: str = "") -> str:
    """The I_MPI_ADJUST_<COLL> variables for `choices`, one line each (sizes in bytes per rank,
    per block for the collectives with a block per rank, as Intel MPI measures them)."""
    from collkit.algorithms import parse_row_name
    from collkit.tune.families import mpi_choice
    from collkit.tune.select import size_ranges

    by, lines = by_collective_and_P(choices, header)
    for coll in sorted(by):
        parts: list[str] = []
        for P in sorted(by[coll]):
            # One choice per size: of a P tuned in several shapes (nodes x ranks per node),
            # each size's, one per shape. I_MPI_ADJUST keys by communicator size alone: a size
            # whose shapes chose differently keeps Intel MPI's own choice.
            per_size: dict[int, list[Choice]] = {}
            for c in by[coll][P]:
                per_size.setdefault(c.bytes, []).append(c)
            cs = [per_size[b][0] for b in sorted(per_size)]
            for c, (lo, hi) in zip(cs, size_ranges([c.bytes for c in cs]), strict=True):
                name, how = mpi_choice(c, IntelMpi.prefix)
                if len({mpi_choice(x, IntelMpi.prefix)[0] for x in per_size[c.bytes]}) > 1:
                    lines.append(f"# {coll} P={P} {lo}-{hi} B: shapes differ; its default stays")
                    continue
                if name is None:
                    continue  # Intel MPI's own choice stays
                alg = ALGORITHMS[coll][parse_row_name(name).algorithm]
                parts.append(f"{alg}:{lo}-{hi}@{P}-{P}")
                lines.append(f"# {coll} P={P} {lo}-{hi} B: {name} ({how})")
        if parts:
            lines.append(f'{variable(coll)}="{";".join(parts)}"')
        else:
            lines.append(f"# {coll}: no Intel MPI algorithm chosen; its default stays")
    return "\n".join(lines) + "\n"
