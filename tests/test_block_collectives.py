"""The block collectives of issue 15 (allgather, reduce_scatter_block, gather, scatter): every
registered algorithm and parameter set through the verifier, for every root of the rooted ones,
under MPI_IN_PLACE as the spec places it, with counts 0, 1, odd and P - 1, and with a
non-commutative op wherever the algorithm does not declare that it needs a commutative one.

The algorithms are read from the registry, so a new one is swept without being named here."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

import collkit
from collkit.collectives import collective

BLOCK_COLLECTIVES = ("allgather", "reduce_scatter_block", "gather", "scatter")


def _names() -> list[str]:
    """Every algorithm of the four collectives, with every combination of its parameter grid."""
    out: list[str] = []
    for spec in collkit.algorithms():
        if spec["collective"] in BLOCK_COLLECTIVES:
            out.extend(spec["grid"] or [f"{spec['collective']}:{spec['name']}"])
    return out


NAMES = _names()


def _roots(name: str, P: int, every: bool) -> Iterable[int]:
    if not collective(name.split(":", 1)[0])["rooted"]:
        return [0]
    return range(P) if every else sorted({0, 1 % P, P // 2, P - 1})


def _check(name: str, P: int, counts: Iterable[int], every_root: bool = True) -> None:
    algo = collkit.Algorithm(name)
    commutative = algo.spec["restrictions"]["commutative_op"]
    for count in counts:
        for root in _roots(name, P, every_root):
            s = algo.generate(P, count, 8, root)
            for in_place in (False, True):
                r = collkit.verify(s, commutative=commutative, in_place=in_place)
                where = f"{name} P={P} count={count} root={root} in_place={in_place}"
                assert r.ok, where + ": " + r.summary()


def test_every_block_collective_has_algorithms() -> None:
    have = {n.split(":", 1)[0] for n in NAMES}
    assert have == set(BLOCK_COLLECTIVES)


@pytest.mark.parametrize("name", NAMES)
def test_small_P_every_root_every_count(name: str) -> None:
    for P in range(1, 18):
        _check(name, P, sorted({0, 1, 3, P - 1}))


@pytest.mark.parametrize("name", NAMES)
def test_a_sample_of_larger_P(name: str) -> None:
    for P in (31, 64, 100, 243):
        _check(name, P, (1, 2), every_root=False)
