"""allreduce:rm: every schedule verified, bitwise consistent, recursive doubling reproduced, and
the trees built the way the stage list says."""

from __future__ import annotations

import random

import numpy as np
import pytest
from test_rm_language import SEED_EXAMPLES, TABLE2

import collkit
from collkit.analysis import recmult
from rm_symeval import leaves, run

SEND = 0


def rm_name(stages: str) -> str:
    return f"allreduce:rm({stages})" if stages else "allreduce:rm"


def check(stages: str, P: int, count: int = 3) -> collkit.VerifyResult:
    s = collkit.generate(rm_name(stages), P=P, count=count)
    r = collkit.verify(s, commutative=True)
    assert r.ok, r.summary()
    return r


@pytest.mark.parametrize(("stages", "P", "shape"), SEED_EXAMPLES)
def test_seed_examples_verify(stages: str, P: int, shape: str) -> None:
    r = check(stages, P)
    # Factored and split schedules fold in rank order; a merged one brings the remainder ranks'
    # values into a group out of rank order, unless the remainder happens to land first.
    if shape != "merged":
        assert r.consistent_noncommutative


def test_merged_schedule_needs_a_commutative_op() -> None:
    s = collkit.generate("allreduce:rm(m3g2a2,n3g2a2)", P=7, count=2)
    assert collkit.verify(s, commutative=True).ok
    r = collkit.verify(s, commutative=False)
    assert not r.ok and "needs_commutativity" in r.kinds
    assert collkit.Algorithm("allreduce:rm").spec["restrictions"]["commutative_op"]


@pytest.mark.parametrize(("P", "stages"), TABLE2)
def test_table2_schedules_verify(P: int, stages: str) -> None:
    assert check(stages, P).consistent_noncommutative


@pytest.mark.parametrize("P", [*range(1, 41), 63, 64, 65, 100, 127])
def test_recursive_doubling_is_exactly_rd(P: int) -> None:
    rd = collkit.generate("allreduce:rd", P=P, count=5).arrays()
    for stages in ("", recmult.recursive_doubling(P)):
        rm = collkit.generate(rm_name(stages), P=P, count=5).arrays()
        assert rd.keys() == rm.keys()
        for k in rd:
            assert np.array_equal(rd[k], rm[k]), (P, stages, k)


def fold(values: list[str]) -> str:
    acc = values[0]
    for v in values[1:]:
        acc = f"({acc}+{v})"
    return acc


def expected_tree(bases: list[int], level: list[str] | None = None) -> str:
    """The reduction tree a factored schedule must build: stage i folds, left to right, the B_i
    consecutive partial results of the previous stage."""
    if level is None:
        level = [f"x{r}" for r in range(int(np.prod(bases)))]
    for b in bases:
        level = [fold(level[g : g + b]) for g in range(0, len(level), b)]
    return level[0]


@pytest.mark.parametrize("bases", [[2, 3], [3, 2], [6], [2, 2, 2], [8], [4, 3, 2], [5, 2, 3]])
def test_factored_tree_is_the_stage_list(bases: list[int]) -> None:
    P = int(np.prod(bases))
    outs = run(collkit.generate(rm_name(",".join(f"a{b}" for b in bases)), P=P, count=1))
    assert outs == [expected_tree(bases)] * P


def test_split_tree_collapses_consecutive_groups() -> None:
    # c6m3: {0,1,2} and {3,4,5} reduce into their last rank; a3 then combines them with rank 6
    outs = run(collkit.generate("allreduce:rm(c6m3,a3,e6m3)", P=7, count=1))
    level = [fold(["x0", "x1", "x2"]), fold(["x3", "x4", "x5"]), "x6"]
    assert outs == [expected_tree([3], level)] * 7
    outs = run(collkit.generate("allreduce:rm(c4m2,a5,e4m2)", P=7, count=1))
    level = [fold(["x0", "x1"]), fold(["x2", "x3"]), "x4", "x5", "x6"]
    assert outs == [expected_tree([5], level)] * 7
    assert leaves(outs[0]) == list(range(7))


@pytest.mark.parametrize(
    ("stages", "P"),
    [("a8", 8), ("a2,a4", 8), ("a8,a4", 32), ("m1g2a3,n1g3a2", 7), ("c6m2,a2,a2,e6m2", 7)],
)
def test_one_rank_alone_equals_its_part_of_the_whole(stages: str, P: int) -> None:
    whole = collkit.generate(rm_name(stages), P=P, count=4).arrays()
    for rank in range(P):
        alone = collkit.generate_rank(rm_name(stages), P=P, rank=rank, count=4).arrays()
        sel = whole["rank"] == rank
        for k in ("kind", "peer", "buf", "src", "len", "side", "stage"):
            assert np.array_equal(alone[k], whole[k][sel]), (rank, k)


def sends_per_rank_and_stage(stages: str, P: int) -> int:
    a = collkit.generate(rm_name(stages), P=P, count=1).arrays()
    sel = a["kind"] == SEND
    pairs = a["rank"][sel].astype(np.int64) * 65536 + a["stage"][sel]
    return int(np.unique(pairs, return_counts=True)[1].max()) if pairs.size else 0


@pytest.mark.parametrize(
    ("stages", "P", "sends"),
    [
        ("a8", 8, 7),
        ("a8,a4", 32, 7),
        ("a2,a2,a2", 8, 1),
        ("m1g2a3,n1g3a2", 7, 3),
        ("c6m2,a2,a2,e6m2", 7, 1),
    ],
)
def test_multiway_stage_sends_to_b_peers(stages: str, P: int, sends: int) -> None:
    assert sends_per_rank_and_stage(stages, P) == sends


def test_enumerated_schedules_respect_the_fanout() -> None:
    for N in range(2, 19):
        for stages in recmult.enumerate_schedules(N, max_fanout=3):
            assert sends_per_rank_and_stage(stages, N) <= 3, (N, stages)


def test_every_schedule_verifies_small_N() -> None:
    for N in range(1, 25):
        for stages in recmult.enumerate_schedules(N):
            check(stages, N, count=2)


def test_sampled_schedules_verify_up_to_128() -> None:
    rng = random.Random(2017)
    for N in range(25, 129):
        schedules = list(recmult.enumerate_schedules(N))
        for stages in rng.sample(schedules, min(8, len(schedules))):
            check(stages, N, count=2)


@pytest.mark.slow
def test_every_schedule_verifies_up_to_128() -> None:
    for N in range(1, 129):
        for stages in recmult.enumerate_schedules(N):
            check(stages, N, count=1)
