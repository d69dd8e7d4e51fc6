"""Tuning files for the MPIs themselves: MPICH's JSON selection file and Open MPI's coll/tuned
dynamic rules file, choosing among each MPI's own algorithms.

For the MPI that was measured, a range gets the forced algorithm that beat the native call (the
same statistical test as collkit's own table); where none did, the MPI's default stays. For the
other MPI, the choice is its algorithm of the same family as the measured winner (collkit's ring
is Open MPI's ring and MPICH's ring); rules say which.

MPICH (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE) reads a whole selection tree and asserts on a
collective it does not cover, so the file is MPICH's own built-in tree, read from the libmpi in
use, with the tuned collectives' intra-communicator branch in front of it: exact P and tuned
sizes go to the chosen algorithm, everything else to MPICH's own branch.
Open MPI (coll_tuned_use_dynamic_rules=1, coll_tuned_dynamic_rules_filename=FILE) picks, per
collective, the rule of the largest listed communicator size <= P and the largest message size
<= the call's; algorithm 0 there means its fixed decision, which the file uses for the sizes
collkit did not tune.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from collkit.collectives import collective
from collkit.errors import UnsupportedError
from collkit.mpirun import OPENMPI_ALGORITHMS
from collkit.tune.select import Choice, size_ranges

# Algorithm families: the same algorithm under collkit's, MPICH's and Open MPI's names.
FAMILIES: dict[str, dict[str, tuple[str, ...]]] = {
    "allreduce": {
        "rd": ("allreduce:rd", "mpich:recursive_doubling", "ompi:recursive_doubling"),
        "ring": ("allreduce:ring", "mpich:ring", "ompi:ring"),
        "rabenseifner": (
            "allreduce:rabenseifner",
            "mpich:reduce_scatter_allgather",
            "ompi:rabenseifner",
        ),
    },
    "reduce": {
        "binomial": ("reduce:binomial", "mpich:binomial", "ompi:binomial"),
        "rabenseifner": ("reduce:rabenseifner", "mpich:reduce_scatter_gather", "ompi:rabenseifner"),
        "linear": ("reduce:linear", "ompi:linear"),
        "pipeline": ("reduce:pipeline", "ompi:pipeline"),
        "binary": ("reduce:binary", "ompi:binary"),
    },
    "bcast": {
        "binomial": ("bcast:binomial", "mpich:binomial", "ompi:binomial"),
        "scatter_allgather": (
            "bcast:scatter_allgather",
            "mpich:scatter_recursive_doubling_allgather",
            "ompi:scatter_allgather",
        ),
        "linear": ("bcast:linear", "ompi:basic_linear"),
        "pipeline": ("bcast:pipeline", "ompi:pipeline"),
        "binary": ("bcast:binary", "ompi:binary_tree"),
        "knomial": ("bcast:knomial", "ompi:knomial"),
    },
    "alltoall": {
        "pairwise": ("alltoall:pairwise", "mpich:pairwise", "ompi:pairwise"),
        "bruck": ("alltoall:bruck", "mpich:brucks"),
        "modified_bruck": ("alltoall:bruck_modified", "ompi:modified_bruck"),
        "linear": ("alltoall:linear", "mpich:scattered", "ompi:linear"),
    },
    "barrier": {
        "dissemination": ("barrier:dissemination", "ompi:bruck"),
        "tree": ("barrier:tree", "ompi:tree"),
    },
    "allgather": {
        "ring": ("allgather:ring", "mpich:ring", "ompi:ring"),
        "rd": ("allgather:rd", "mpich:recursive_doubling", "ompi:recursive_doubling"),
        "bruck": ("allgather:bruck", "mpich:brucks", "ompi:bruck"),
    },
    "reduce_scatter_block": {
        "pairwise": ("reduce_scatter_block:pairwise", "mpich:pairwise"),
        "halving": (
            "reduce_scatter_block:halving",
            "mpich:recursive_halving",
            "ompi:recursive_halving",
        ),
    },
    "gather": {
        "binomial": ("gather:binomial", "mpich:binomial", "ompi:binomial"),
        "linear": ("gather:linear", "ompi:basic_linear"),
    },
    "scatter": {
        "binomial": ("scatter:binomial", "mpich:binomial", "ompi:binomial"),
        "linear": ("scatter:linear", "ompi:basic_linear"),
    },
}

# MPICH algorithms whose selection-file container needs no parameters.
MPICH_CONTAINERS: dict[str, dict[str, str]] = {
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
}

# Open MPI's collective ids (COLLTYPE_T in coll_base_functions.h).
OPENMPI_IDS = {
    "allgather": 0,
    "allreduce": 2,
    "alltoall": 3,
    "barrier": 6,
    "bcast": 7,
    "gather": 9,
    "reduce": 11,
    "reduce_scatter_block": 13,
    "scatter": 15,
}


def _base(name: str) -> str:
    """'alltoall:bruck(r=4)' -> 'alltoall:bruck': parameters do not change the family."""
    return name.split("(", 1)[0]


def equivalent(collective: str, name: str, prefix: str) -> str | None:
    """The algorithm of the MPI named by `prefix` ("mpich:" / "ompi:") in `name`'s family."""
    for members in FAMILIES.get(collective, {}).values():
        if _base(name) in members:
            return next((m for m in members if m.startswith(prefix)), None)
    return None


def mpi_choice(c: Choice, prefix: str) -> tuple[str | None, str]:
    """The MPI algorithm (e.g. 'mpich:ring') for this choice, and how it was chosen."""
    if c.mpi is not None and c.mpi.algorithm.startswith(prefix):
        return c.mpi.algorithm, "measured"
    for w in (c.mpi, c.collkit):
        if w is not None:
            e = equivalent(c.collective, w.algorithm, prefix)
            if e is not None:
                return e, f"same family as {w.algorithm}"
    return None, "default"


def find_libmpi(program: Path) -> Path:
    """The libmpi a built MPI program loads."""
    out = subprocess.run(["ldd", str(program)], capture_output=True, text=True, check=False)
    for line in out.stdout.splitlines():
        m = re.match(r"\s*libmpi\.so[.\d]*\s*=>\s*(\S+)", line)
        if m:
            return Path(m.group(1))
    raise UnsupportedError(f"cannot find the libmpi that {program} loads (ldd)")


def mpich_default_tree(libmpi: Path) -> dict[str, Any]:
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


def mpich_file(choices: Sequence[Choice], default_tree: dict[str, Any]) -> dict[str, Any]:
    """The MPICH selection tree: `default_tree` with the tuned ranges in front."""
    tree = dict(default_tree)
    by: dict[str, dict[int, list[Choice]]] = {}
    for c in choices:
        by.setdefault(c.collective, {}).setdefault(c.P, []).append(c)
    for coll, per_p in by.items():
        key = f"collective={coll}"
        orig = tree.get(key, {})
        orig_intra = orig.get("comm_type=intra", orig) if isinstance(orig, dict) else orig
        intra: dict[str, Any] = {}
        for P in sorted(per_p):
            cs = sorted(per_p[P], key=lambda c: c.bytes)
            chain: dict[str, Any] = {}
            ranges = size_ranges([c.bytes for c in cs])
            if ranges[0][0] > 0:
                chain[f"avg_msg_size<{ranges[0][0]}"] = orig_intra
            for c, (_, hi) in zip(cs, ranges, strict=True):
                name, _how = mpi_choice(c, "mpich:")
                cont = MPICH_CONTAINERS.get(coll, {}).get(name.split(":", 1)[1]) if name else None
                chain[f"avg_msg_size<={hi}"] = {f"algorithm={cont}": {}} if cont else orig_intra
            chain["avg_msg_size=any"] = orig_intra
            if P > 1:
                intra[f"comm_size<{P}"] = orig_intra
            intra[f"comm_size<={P}"] = chain
        intra["comm_size=any"] = orig_intra
        new: dict[str, Any] = {"comm_type=intra": intra}
        if isinstance(orig, dict) and "comm_type=inter" in orig:
            new["comm_type=inter"] = orig["comm_type=inter"]
        tree[key] = new
    return tree


def per_block_shapes(coll: str) -> set[str]:
    """The block counts of the collective's buffers ('P' where a buffer holds one per rank)."""
    spec = collective(coll)
    return {spec[b][w] for b in ("in", "out") for w in ("at_root", "elsewhere")}


def openmpi_rules(choices: Sequence[Choice], header: str = "") -> str:
    """Open MPI's dynamic rules file (the classic text format of coll/tuned)."""
    by: dict[str, dict[int, list[Choice]]] = {}
    for c in choices:
        by.setdefault(c.collective, {}).setdefault(c.P, []).append(c)
    lines = [f"# {ln}" for ln in header.splitlines()]
    for coll in sorted(c for c in by if c not in OPENMPI_IDS):  # a collective Open MPI lacks
        del by[coll]
        lines.append(f"# {coll}: no coll/tuned rules id in Open MPI; its own decision stays")
    lines.append(f"{len(by)}  # collectives")
    for coll in sorted(by, key=lambda k: OPENMPI_IDS[k]):
        per_p = by[coll]
        sizes = sorted(per_p)
        # Open MPI uses the largest listed size <= P: list P + 1 with the fixed decision too,
        # so that untuned sizes keep Open MPI's own choice.
        comms: list[tuple[int, list[tuple[int, int, str]]]] = []
        for P in sizes:
            cs = sorted(per_p[P], key=lambda c: c.bytes)
            # coll/tuned sizes the collectives with a block per rank by all P blocks.
            scale = P if "P" in per_block_shapes(coll) else 1
            msgs: list[tuple[int, int, str]] = []
            ranges = size_ranges([c.bytes for c in cs])
            if ranges[0][0] > 0:
                msgs.append((0, 0, "not tuned: Open MPI's fixed decision"))
            for c, (lo, _) in zip(cs, ranges, strict=True):
                name, how = mpi_choice(c, "ompi:")
                alg = OPENMPI_ALGORITHMS[coll][name.split(":", 1)[1]] if name else 0
                msgs.append((lo * scale, alg, f"{name or 'fixed decision'} ({how})"))
            msgs.append(((ranges[-1][1] + 1) * scale, 0, "past the tuned sizes: fixed decision"))
            comms.append((P, msgs))
            if P + 1 not in per_p:
                comms.append((P + 1, [(0, 0, f"P > {P}: fixed decision")]))
        lines.append(f"{OPENMPI_IDS[coll]}  # {coll}")
        lines.append(f"{len(comms)}  # communicator sizes")
        for P, msgs in comms:
            lines.append(f"{P}  # communicator size")
            lines.append(f"{len(msgs)}  # message sizes")
            for size, alg, why in msgs:
                lines.append(f"{size} {alg} 0 0  # {why}")
    return "\n".join(lines) + "\n"
