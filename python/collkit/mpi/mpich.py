"""MPICH (and the PyPI `mpich` wheel, the default MPI): its algorithms, forced with
MPIR_CVAR_<COLL>_INTRA_ALGORITHM, hydra's launcher options, and its JSON selection file.

MPICH (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE) reads a whole selection tree and asserts on a
collective it does not cover, so the file is MPICH's own built-in tree, read from the libmpi in
use, with the tuned collectives' intra-communicator branch in front of it: exact P and tuned
sizes go to the chosen algorithm, everything else to MPICH's own branch.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from collkit.errors import UnsupportedError
from collkit.mpi.base import MPI

if TYPE_CHECKING:
    from collkit.tune.select import Choice

# MPIR_CVAR_<COLL>_INTRA_ALGORITHM values.
ALGORITHMS: dict[str, list[str]] = {
    "allreduce": [
        "recursive_doubling",
        "recursive_multiplying",
        "reduce_scatter_allgather",
        "tree",
        "recexch",
        "ring",
        "k_reduce_scatter_allgather",
        "smp",
        "nb",
    ],
    "reduce": ["binomial", "reduce_scatter_gather", "smp", "nb"],
    "bcast": [
        "binomial",
        "scatter_recursive_doubling_allgather",
        "scatter_ring_allgather",
        "pipelined_tree",
        "tree",
        "smp",
        "nb",
    ],
    "alltoall": ["brucks", "k_brucks", "pairwise", "pairwise_sendrecv_replace", "scattered", "nb"],
    "barrier": ["k_dissemination", "recexch", "smp", "nb"],
    "allgather": [
        "brucks",
        "k_brucks",
        "recursive_doubling",
        "ring",
        "recexch_doubling",
        "recexch_halving",
        "nb",
    ],
    "reduce_scatter_block": [
        "noncommutative",
        "recursive_doubling",
        "pairwise",
        "recursive_halving",
        "nb",
    ],
    "gather": ["binomial", "nb"],
    "scatter": ["binomial", "nb"],
    "allgatherv": ["brucks", "recursive_doubling", "ring", "nb"],
    "alltoallv": ["pairwise_sendrecv_replace", "scattered", "nb"],
    "gatherv": ["linear", "nb"],
    "scatterv": ["linear", "nb"],
    "reduce_scatter": [
        "noncommutative",
        "pairwise",
        "recursive_doubling",
        "recursive_halving",
        "nb",
    ],
    "scan": ["smp", "recursive_doubling", "nb"],
    "exscan": ["recursive_doubling", "nb"],
}

# Algorithms past MPICH 5.0 (its main branch: src/mpi/coll/*/*_intra_circ_graph.c): an MPICH
# 5.0 (the PyPI wheel's 5.0.2) aborts in MPI_Init when one is forced, so they are its
# algorithms only where the version is later or not known.
AFTER_5_0: dict[str, list[str]] = {
    "bcast": ["circ_graph"],
    "allgather": ["circ_graph"],
    "reduce": ["circ_graph"],
}


def _after_5_0(version: str) -> bool:
    m = re.search(r"(\d+)\.(\d+)", version)
    return m is None or (int(m.group(1)), int(m.group(2))) > (5, 0)


# Algorithms whose selection-file container needs no parameters.
CONTAINERS: dict[str, dict[str, str]] = {
    "allreduce": {
        a: f"MPIR_Allreduce_intra_{a}"
        for a in ("recursive_doubling", "reduce_scatter_allgather", "ring")
    },
    "reduce": {a: f"MPIR_Reduce_intra_{a}" for a in ("binomial", "reduce_scatter_gather")},
    "bcast": {
        a: f"MPIR_Bcast_intra_{a}"
        for a in ("binomial", "scatter_recursive_doubling_allgather", "scatter_ring_allgather")
    },
    "alltoall": {a: f"MPIR_Alltoall_intra_{a}" for a in ("brucks", "pairwise", "scattered")},
    "barrier": {},
    "allgather": {a: f"MPIR_Allgather_intra_{a}" for a in ("brucks", "recursive_doubling", "ring")},
    "reduce_scatter_block": {
        a: f"MPIR_Reduce_scatter_block_intra_{a}" for a in ("pairwise", "recursive_halving")
    },
    "gather": {"binomial": "MPIR_Gather_intra_binomial"},
    "scatter": {"binomial": "MPIR_Scatter_intra_binomial"},
    "allgatherv": {
        a: f"MPIR_Allgatherv_intra_{a}" for a in ("brucks", "recursive_doubling", "ring")
    },
    # noncommutative needs a power of two and equal blocks: never chosen for a range
    "reduce_scatter": {
        a: f"MPIR_Reduce_scatter_intra_{a}"
        for a in ("pairwise", "recursive_doubling", "recursive_halving")
    },
}
# The irregular collectives MPICH's tree keys by the call's total bytes (the sum of the count
# vector times the type size), as collkit's rules do. reduce_scatter is tuned for commutative
# ops (what tune measures): a non-commutative call keeps MPICH's own branch. alltoallv, gatherv,
# scatterv, scan and exscan have no size in MPICH's tree and one algorithm each for a call not in
# place (scan: recursive_doubling, or smp on consecutive nodes): nothing to choose.
TOTAL_SIZE = ("allgatherv", "reduce_scatter")
COMMUTATIVE_ONLY = ("reduce_scatter",)
# Left to MPICH's own branch (its selection asserts on a message size for alltoallv).
UNSIZED = ("alltoallv", "gatherv", "scatterv", "scan", "exscan")


class Mpich(MPI):
    """MPICH with hydra (`mpiexec`), e.g. the PyPI `mpich` wheel."""

    kind: ClassVar[str] = "mpich"
    prefix: ClassVar[str] = "mpich"
    # Oversubscribed MPICH (more ranks than cores) busy-polls: every waiting rank spins and
    # steals the core the rank it waits for needs. Throttled progress sleeps after each failed
    # poll instead; measured on a 2-core machine (docs/mpi.md) it takes an 8-byte allreduce at 8
    # ranks from tens of milliseconds to about a millisecond.
    oversubscribed_env: ClassVar[dict[str, str]] = {
        "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
        "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1",
    }
    tuning_file_name: ClassVar[str] = "mpich-selection.json"

    @classmethod
    def recognizes(cls, version_text: str) -> bool:
        # Intel MPI's hydra says "Intel(R) MPI Library": it is recognized before MPICH.
        return "HYDRA" in version_text or "MPICH" in version_text

    @classmethod
    def version_of(cls, version_text: str) -> str:
        ver = next(
            (
                ln.split(":", 1)[1].strip()
                for ln in version_text.splitlines()
                if ln.strip().startswith("Version:")
            ),
            "",
        )
        return f"MPICH {ver}".strip()

    def algorithms(self, collective: str) -> list[str]:
        later = AFTER_5_0.get(collective, []) if _after_5_0(self.version) else []
        return list(ALGORITHMS.get(collective, [])) + later

    def _force(self, collective: str, algorithm: str) -> dict[str, str]:
        # MPICH's ch4 device may override the MPIR-level algorithms with its own (shared
        # memory) collectives: without this the forced algorithm is not the one that runs.
        return {
            "MPIR_CVAR_DEVICE_COLLECTIVES": "none",
            f"MPIR_CVAR_{collective.upper()}_INTRA_ALGORITHM": algorithm,
        }

    def _placement(self, map_by: str) -> list[str]:
        # hydra maps within a node by core / socket, across nodes per host
        return ["-ppn", "1"] if map_by == "node" else ["-map-by", map_by, "-bind-to", "core"]

    @classmethod
    def write_tuning_file(
        cls, choices: Sequence[Choice], out_dir: Path, header: str, program: Path | None
    ) -> Path | None:
        if program is None:
            return None
        tree = default_tree(find_libmpi(program))
        path = out_dir / cls.tuning_file_name
        path.write_text(json.dumps(selection_file(choices, tree)) + "\n")
        return path


def find_libmpi(program: Path) -> Path:
    """The libmpi a built MPI program loads."""
    out = subprocess.run(["ldd", str(program)], capture_output=True, text=True, check=False)
    for line in out.stdout.splitlines():
        m = re.match(r"\s*libmpi\.so[.\d]*\s*=>\s*(\S+)", line)
        if m:
            return Path(m.group(1))
    raise UnsupportedError(f"cannot find the libmpi that {program} loads (ldd)")


def default_tree(libmpi: Path) -> dict[str, Any]:
    """MPICH's built-in MPIR-level selection tree, as compiled into `libmpi`."""
    data = libmpi.read_bytes()
    best: dict[str, Any] | None = None
    for m in re.finditer(rb'\{"collective=[^\x00]*', data):
        text = m.group(0)
        if b'"algorithm=MPIR_' not in text:
            continue
        try:
            tree = json.loads(text.decode())
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(tree, dict) and (best is None or len(tree) > len(best)):
            best = tree
    if best is None:
        raise UnsupportedError(
            f"no built-in selection tree in {libmpi}: this MPICH is too old or too new for "
            "collkit's MPICH file (MPICH 4.0 or later has one)"
        )
    return best


def selection_file(choices: Sequence[Choice], default: dict[str, Any]) -> dict[str, Any]:
    """The MPICH selection tree: `default` with the tuned ranges in front. A P measured in
    several shapes (select.shaped_keys) branches on the communicator's average ranks per node
    (MPICH's comm_avg_ppn: at one P, nodes = P / ppn): each shape of an even ppn its own sizes,
    other averages the shape-less choices, or MPICH's own branch."""
    from collkit.tune.select import shaped_keys

    tree = dict(default)
    shaped = shaped_keys(choices)
    by: dict[str, dict[int, list[Choice]]] = {}
    for c in choices:
        if c.collective not in UNSIZED:
            by.setdefault(c.collective, {}).setdefault(c.P, []).append(c)
    for coll, per_p in by.items():
        key = f"collective={coll}"
        orig = tree.get(key, {})
        orig_intra = orig.get("comm_type=intra", orig) if isinstance(orig, dict) else orig
        intra: dict[str, Any] = {}
        for P in sorted(per_p):
            if (coll, P) in shaped:
                per_ppn: dict[int, list[Choice]] = {}
                rest: list[Choice] = []
                for c in per_p[P]:
                    if c.nodes is not None and c.ppn is not None:
                        per_ppn.setdefault(c.ppn, []).append(c)
                    else:
                        rest.append(c)
                other = _chain(coll, rest, orig_intra) if rest else orig_intra
                branch: dict[str, Any] = {}
                for k in sorted(per_ppn):
                    if k > 1:
                        branch[f"comm_avg_ppn<{k}"] = other
                    branch[f"comm_avg_ppn<={k}"] = _chain(coll, per_ppn[k], orig_intra)
                branch["comm_avg_ppn=any"] = other
                chain = branch
            else:
                chain = _chain(coll, per_p[P], orig_intra)
            if P > 1:
                intra[f"comm_size<{P}"] = orig_intra
            intra[f"comm_size<={P}"] = chain
        intra["comm_size=any"] = orig_intra
        new: dict[str, Any] = {"comm_type=intra": intra}
        if isinstance(orig, dict) and "comm_type=inter" in orig:
            new["comm_type=inter"] = orig["comm_type=inter"]
        tree[key] = new
    return tree


def _chain(coll: str, choices: Sequence[Choice], orig_intra: Any) -> dict[str, Any]:
    """The message-size branch of one P (and shape): the tuned sizes to their algorithms, the
    rest to MPICH's own branch."""
    from collkit.algorithms import parse_row_name
    from collkit.tune.families import mpi_choice
    from collkit.tune.select import size_ranges

    whole = orig_intra
    if coll in COMMUTATIVE_ONLY and isinstance(orig_intra, dict):
        orig_intra = orig_intra.get("is_commutative=yes", orig_intra)
    size = "total_msg_size" if coll in TOTAL_SIZE else "avg_msg_size"
    cs = sorted(choices, key=lambda c: c.bytes)
    chain: dict[str, Any] = {}
    ranges = size_ranges([c.bytes for c in cs])
    if ranges[0][0] > 0:
        chain[f"{size}<{ranges[0][0]}"] = orig_intra
    for c, (_, hi) in zip(cs, ranges, strict=True):
        name, _how = mpi_choice(c, Mpich.prefix)
        algo = parse_row_name(name).algorithm if name else ""
        cont = CONTAINERS.get(coll, {}).get(algo)
        chain[f"{size}<={hi}"] = {f"algorithm={cont}": {}} if cont else orig_intra
    chain[f"{size}=any"] = orig_intra
    if coll in COMMUTATIVE_ONLY and isinstance(whole, dict) and "is_commutative=no" in whole:
        return {"is_commutative=yes": chain, "is_commutative=no": whole["is_commutative=no"]}
    return chain
