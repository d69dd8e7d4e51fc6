"""What an irregular algorithm's rank reads of the counts: an algorithm that does not declare
Restrictions::all_counts must give rank r the same program whatever the entries its MPI call
does not have (alltoallv: every entry outside row r and column r; gatherv and scatterv off the
root: every entry but counts[r]). The MPI executor relies on it: such an alltoallv runs without
its counts exchange (each message carries its length), built from the rank's own row and
column. Proven over P (powers of two, primes, composites) x random matrices with zeros; an
algorithm that declares all_counts is shown to read more (so the check can fail)."""

from __future__ import annotations

import numpy as np
import pytest

import collkit
from builder import KIND, Ops

LOCAL = ("alltoallv", "gatherv", "scatterv")
PS = (1, 2, 3, 4, 5, 7, 8, 12, 16)


def _algorithms(all_counts: bool) -> list[str]:
    return sorted(
        str(a["name"])
        for a in collkit.algorithms()
        if a["collective"] in LOCAL and bool(a["restrictions"]["all_counts"]) == all_counts  # type: ignore[index]
    )


def _counts(rng: np.random.Generator, n: int) -> list[int]:
    return [int(x) for x in rng.integers(0, 4, n, endpoint=True)]


def _others_redrawn(
    rng: np.random.Generator, coll: str, P: int, counts: list[int], r: int, root: int
) -> list[int]:
    """`counts` with every entry rank r's MPI call does not have drawn again."""
    fresh = _counts(rng, len(counts))
    if coll == "alltoallv":
        return [counts[i] if r in (i // P, i % P) else fresh[i] for i in range(P * P)]
    if r == root:  # the root has the whole vector
        return list(counts)
    return [counts[i] if i == r else fresh[i] for i in range(P)]


def _program(name: str, P: int, counts: list[int], root: int, r: int) -> list[dict[str, object]]:
    coll = name.split(":")[0]
    kw = {} if coll == "alltoallv" else {"root": root}
    return Ops.of(collkit.generate(name, P, counts=counts, **kw)).ranks[r]  # type: ignore[arg-type]


def _differs_somewhere(name: str, trials: int) -> bool:
    coll = name.split(":")[0]
    for P in PS:
        rng = np.random.default_rng(P)
        root = P // 2
        for _ in range(trials):
            counts = _counts(rng, P * P if coll == "alltoallv" else P)
            for r in range(P):
                other = _others_redrawn(rng, coll, P, counts, r, root)
                if _program(name, P, counts, root, r) != _program(name, P, other, root, r):
                    return True
    return False


@pytest.mark.parametrize("name", _algorithms(all_counts=False))
def test_a_rank_reads_only_what_its_mpi_call_has(name: str) -> None:
    coll = name.split(":")[0]
    for P in PS:
        rng = np.random.default_rng(1000 + P)
        root = P // 2
        for _ in range(3):
            counts = _counts(rng, P * P if coll == "alltoallv" else P)
            for r in range(P):
                other = _others_redrawn(rng, coll, P, counts, r, root)
                assert _program(name, P, counts, root, r) == _program(name, P, other, root, r), (
                    f"{name} P={P}: rank {r}'s program depends on counts its call does not have"
                )


@pytest.mark.parametrize("name", _algorithms(all_counts=True))
def test_an_algorithm_that_declares_all_counts_reads_more(name: str) -> None:
    assert _differs_somewhere(name, trials=3), f"{name} declares all_counts but reads no more"


@pytest.mark.parametrize(
    "name", [n for n in _algorithms(all_counts=False) if n.startswith("alltoallv:")]
)
def test_a_local_alltoallv_sends_each_peer_one_message_at_most(name: str) -> None:
    """What a framed run takes (the executor refuses, on every rank, a plan that breaks it):
    at most one message to and one from each other rank, none to itself."""
    send, recv = KIND["send"], KIND["recv"]
    for P in PS:
        rng = np.random.default_rng(2000 + P)
        counts = _counts(rng, P * P)
        ops = Ops.of(collkit.generate(name, P, counts=counts))
        for r, prog in enumerate(ops.ranks):
            for kind in (send, recv):
                peers = [o["peer"] for o in prog if o["kind"] == kind]
                assert r not in peers and len(peers) == len(set(peers)), (name, P, r, kind)
