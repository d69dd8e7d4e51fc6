"""Open MPI: its coll/tuned algorithms, forced with coll_tuned_use_dynamic_rules=1 and
coll_tuned_<coll>_algorithm=<number> (and coll/han, its hierarchical component), mpirun's
options, and its coll/tuned dynamic rules file.

Open MPI (coll_tuned_use_dynamic_rules=1, coll_tuned_dynamic_rules_filename=FILE) picks, per
collective, the rule of the largest listed communicator size <= P and the largest message size
<= the call's; algorithm 0 there means its fixed decision, which the file uses for the sizes
collkit did not tune.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from collkit.mpi.base import MPI, am_root, by_collective_and_P

if TYPE_CHECKING:
    from collkit.tune.select import Choice

# coll_tuned_<coll>_algorithm values.
ALGORITHMS: dict[str, dict[str, int]] = {
    "allreduce": {
        "basic_linear": 1,
        "nonoverlapping": 2,
        "recursive_doubling": 3,
        "ring": 4,
        "segmented_ring": 5,
        "rabenseifner": 6,
    },
    "reduce": {
        "linear": 1,
        "chain": 2,
        "pipeline": 3,
        "binary": 4,
        "binomial": 5,
        "in_order_binary": 6,
        "rabenseifner": 7,
    },
    "bcast": {
        "basic_linear": 1,
        "chain": 2,
        "pipeline": 3,
        "split_binary_tree": 4,
        "binary_tree": 5,
        "binomial": 6,
        "knomial": 7,
        "scatter_allgather": 8,
        "scatter_allgather_ring": 9,
    },
    "alltoall": {"linear": 1, "pairwise": 2, "modified_bruck": 3, "linear_sync": 4, "two_proc": 5},
    "barrier": {
        "linear": 1,
        "double_ring": 2,
        "recursive_doubling": 3,
        "bruck": 4,
        "two_proc": 5,
        "tree": 6,
    },
    "allgather": {
        "linear": 1,
        "bruck": 2,
        "recursive_doubling": 3,
        "ring": 4,
        "neighbor": 5,
        "two_proc": 6,
    },
    "reduce_scatter_block": {
        "basic_linear": 1,
        "recursive_doubling": 2,
        "recursive_halving": 3,
        "butterfly": 4,
    },
    "gather": {"basic_linear": 1, "binomial": 2, "linear_sync": 3},
    "scatter": {"basic_linear": 1, "binomial": 2, "linear_nb": 3},
    "allgatherv": {"default": 1, "bruck": 2, "ring": 3, "neighbor": 4, "two_proc": 5},
    "alltoallv": {"basic_linear": 1, "pairwise": 2},
    "reduce_scatter": {"nonoverlapping": 1, "recursive_halving": 2, "ring": 3, "butterfly": 4},
    "scan": {"linear": 1, "recursive_doubling": 2},
    "exscan": {"linear": 1, "recursive_doubling": 2},
}
# The collectives Open MPI's coll/han (hierarchical) implements: forced as ompi:han.
HAN = ("allreduce", "bcast", "reduce")

# Open MPI's collective ids (COLLTYPE_T in coll_base_functions.h); gatherv (10) and scatterv
# (16) have no coll/tuned algorithms to choose.
IDS = {
    "allgather": 0,
    "allgatherv": 1,
    "allreduce": 2,
    "alltoall": 3,
    "alltoallv": 4,
    "barrier": 6,
    "bcast": 7,
    "exscan": 8,
    "gather": 9,
    "reduce": 11,
    "reduce_scatter": 12,
    "reduce_scatter_block": 13,
    "scan": 14,
    "scatter": 15,
}
# coll/tuned keys allgatherv and reduce_scatter by the sum of the counts times the type size
# (collkit's bytes for them), and alltoallv by the communicator size alone (it asks its rules
# for size 0): an alltoallv rule is written where every tuned size of a P chose alike.
TOTAL_SIZE = ("allgatherv", "reduce_scatter")
BY_P_ALONE = ("alltoallv",)


class OpenMpi(MPI):
    """Open MPI with its mpirun (mpiexec)."""

    kind: ClassVar[str] = "openmpi"
    prefix: ClassVar[str] = "ompi"
    # Yield the core when idle (it also turns this on by itself under --oversubscribe).
    oversubscribed_env: ClassVar[dict[str, str]] = {"OMPI_MCA_mpi_yield_when_idle": "1"}
    tuning_file_name: ClassVar[str] = "openmpi-rules.txt"

    def __post_init__(self) -> None:
        if am_root() and "--allow-run-as-root" not in self.launch_args:
            self.launch_args.append("--allow-run-as-root")

    @classmethod
    def recognizes(cls, version_text: str) -> bool:
        return "Open MPI" in version_text or "OpenRTE" in version_text

    @classmethod
    def version_of(cls, version_text: str) -> str:
        first = next(
            (ln for ln in version_text.splitlines() if "Open MPI" in ln or "OpenRTE" in ln), ""
        )
        return "Open MPI " + first.split()[-1] if first else "Open MPI"

    def algorithms(self, collective: str) -> list[str]:
        return list(ALGORITHMS.get(collective, {}))

    def force_env(self, collective: str, name: str) -> dict[str, str]:
        if name == f"{self.prefix}:han" and collective in HAN:
            # coll/han, Open MPI's hierarchical component, is off by default in 4.1: raise its
            # priority. It disqualifies itself on a communicator of one node (its log says so
            # with OMPI_MCA_coll_base_verbose=10), and then the default path runs.
            return {"OMPI_MCA_coll_han_priority": "100"}
        return super().force_env(collective, name)

    def _force(self, collective: str, algorithm: str) -> dict[str, str]:
        return {
            "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
            f"OMPI_MCA_coll_tuned_{collective}_algorithm": str(ALGORITHMS[collective][algorithm]),
        }

    def _placement(self, map_by: str) -> list[str]:
        return ["--map-by", map_by, "--bind-to", "core"]

    def oversubscribe_args(self) -> list[str]:
        return ["--oversubscribe"]

    def hostfile_args(self, hosts: str) -> list[str]:
        return ["--hostfile", hosts]

    def env_args(self, env: dict[str, str]) -> list[str]:
        out: list[str] = []
        for k, v in env.items():
            out += ["-x", f"{k}={v}"]
        return out

    @classmethod
    def tuning_text(cls, choices: Sequence[Choice], header: str) -> str | None:
        return rules_file(choices, header)


def rules_file(choices: Sequence[Choice], header: str = "") -> str:
    """Open MPI's dynamic rules file (the classic text format of coll/tuned)."""
    from collkit.algorithms import parse_row_name
    from collkit.tune.families import mpi_choice, per_block_shapes
    from collkit.tune.select import shaped_keys, size_ranges

    by, lines = by_collective_and_P(choices, header)
    shaped = shaped_keys(choices)
    if shaped:
        lines.append(
            "# coll/tuned keys its rules by communicator size alone: where a P was tuned in "
            "several shapes (nodes x ranks per node), a size whose shapes chose alike keeps "
            "that choice, and one whose shapes differ keeps Open MPI's fixed decision"
        )
    for coll in sorted(c for c in by if c not in IDS):  # a collective Open MPI lacks
        del by[coll]
        lines.append(f"# {coll}: no coll/tuned rules id in Open MPI; its own decision stays")
    lines.append(f"{len(by)}  # collectives")
    for coll in sorted(by, key=lambda k: IDS[k]):
        per_p = by[coll]
        sizes = sorted(per_p)
        # Open MPI uses the largest listed size <= P: list P + 1 with the fixed decision too,
        # so that untuned sizes keep Open MPI's own choice.
        comms: list[tuple[int, list[tuple[int, int, str]]]] = []
        for P in sizes:
            # One Choice per size: of a P tuned in several shapes, each size's (one per shape).
            per_size: dict[int, list[Choice]] = {}
            for c in per_p[P]:
                per_size.setdefault(c.bytes, []).append(c)
            cs = [per_size[b][0] for b in sorted(per_size)]
            # coll/tuned sizes the collectives with a block per rank by all P blocks.
            scale = P if "P" in per_block_shapes(coll) and coll not in TOTAL_SIZE else 1
            msgs: list[tuple[int, int, str]] = []
            ranges = size_ranges([c.bytes for c in cs])
            if ranges[0][0] > 0:
                msgs.append((0, 0, "not tuned: Open MPI's fixed decision"))
            for c, (lo, _) in zip(cs, ranges, strict=True):
                picks = {mpi_choice(x, OpenMpi.prefix) for x in per_size[c.bytes]}
                if len({name for name, _ in picks}) > 1:
                    said = "; ".join(
                        f"{shape_text(x)}: {mpi_choice(x, OpenMpi.prefix)[0] or 'fixed decision'}"
                        for x in per_size[c.bytes]
                    )
                    msgs.append((lo * scale, 0, f"fixed decision: the shapes differ ({said})"))
                    continue
                name, how = mpi_choice(c, OpenMpi.prefix)
                alg = ALGORITHMS[coll][parse_row_name(name).algorithm] if name else 0
                msgs.append((lo * scale, alg, f"{name or 'fixed decision'} ({how})"))
            msgs.append(((ranges[-1][1] + 1) * scale, 0, "past the tuned sizes: fixed decision"))
            if coll in BY_P_ALONE:
                algs = {m[1] for m in msgs[1 if ranges[0][0] > 0 else 0 : -1]}
                alg = algs.pop() if len(algs) == 1 else 0
                why = "every tuned size alike" if alg else "the tuned sizes differ: fixed decision"
                msgs = [(0, alg, f"any size ({why})")]
            comms.append((P, msgs))
            if P + 1 not in per_p:
                comms.append((P + 1, [(0, 0, f"P > {P}: fixed decision")]))
        lines.append(f"{IDS[coll]}  # {coll}")
        lines.append(f"{len(comms)}  # communicator sizes")
        for P, msgs in comms:
            lines.append(f"{P}  # communicator size")
            lines.append(f"{len(msgs)}  # message sizes")
            for size, alg, why in msgs:
                lines.append(f"{size} {alg} 0 0  # {why}")
    return "\n".join(lines) + "\n"


def shape_text(c: Choice) -> str:
    """A choice's shape as the rules file's comments say it: "2 nodes x 1 ppn"."""
    if c.nodes is None:
        return "shape not known"
    return f"{c.nodes} nodes x {c.ppn if c.ppn is not None else 'uneven'} ppn"
