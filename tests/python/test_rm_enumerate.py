"""Enumeration of recursive multiplying schedules: counts, validity, the seed's schedules."""

from __future__ import annotations

from itertools import product

import pytest
from test_rm_language import SEED_EXAMPLES, TABLE2

import collkit
from collkit.analysis import recmult


@pytest.mark.parametrize("N", range(1, 65))
def test_counts_match_the_listing_and_every_schedule_is_valid(N: int) -> None:
    listed = list(recmult.enumerate_schedules(N))
    assert len(listed) == len(set(listed))
    assert len(listed) == sum(recmult.count_schedules(N).values())
    for stages in listed:
        assert recmult.plan(stages, N).P == N


def compositions(k: int, parts: tuple[int, ...]) -> int:
    """Ordered ways to write k as a sum of `parts`, by brute force over tuples."""
    return sum(1 for n in range(k + 1) for t in product(parts, repeat=n) if sum(t) == k)


@pytest.mark.parametrize("k", range(1, 11))
def test_factored_count_of_powers_of_two(k: int) -> None:
    # bases 2, 4, 8 (fan-out 7) are exponents 1, 2, 3: compositions of k into parts 1..3
    c = recmult.count_schedules(2**k, max_fanout=7, families=["factored"])
    assert c["factored"] == compositions(k, (1, 2, 3))


def test_factored_schedules_of_a_prime_and_fanout() -> None:
    assert list(recmult.enumerate_schedules(7, families=["factored"])) == ["a7"]
    assert list(recmult.enumerate_schedules(7, max_fanout=5, families=["factored"])) == []
    assert list(recmult.enumerate_schedules(8, max_fanout=1, families=["factored"])) == ["a2,a2,a2"]


@pytest.mark.parametrize(("stages", "P", "shape"), SEED_EXAMPLES)
def test_seed_examples_are_enumerated(stages: str, P: int, shape: str) -> None:
    assert stages in set(recmult.enumerate_schedules(P, families=[shape]))


@pytest.mark.parametrize(("P", "stages"), TABLE2)
def test_table2_and_recursive_doubling_are_enumerated(P: int, stages: str) -> None:
    listed = set(recmult.enumerate_schedules(P))
    assert stages in listed
    assert recmult.recursive_doubling(P) in listed


def test_split_schedules_cover_every_collapse() -> None:
    split = set(recmult.enumerate_schedules(7, families=["split"]))
    for B in range(2, 8):
        for T in range(B, 8, B):
            inner = 7 - T + T // B
            n_fact = len(recmult.factorisations(inner, 9))
            got = [s for s in split if s.startswith(f"c{T}m{B},")]
            assert len(got) == n_fact, (T, B)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        list(recmult.enumerate_schedules(0))
    with pytest.raises(ValueError, match="unknown family"):
        recmult.count_schedules(8, families=["folded"])
    with pytest.raises(ValueError, match="fan-out"):
        list(recmult.enumerate_schedules(8, max_fanout=0))
    assert issubclass(collkit.CollkitError, ValueError)
