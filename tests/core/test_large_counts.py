"""Large-count algorithms: Rabenseifner's reduce and allreduce, the ring allreduce, and
switching between small- and large-count protocols without changing a bit ([Rabenseifner]).

Every P <= 128 and sampled P up to 4096, odd counts (counts below, at and above P, so that some
blocks are empty and the others differ in length), through the verifier and compare_trees."""

from __future__ import annotations

import numpy as np
import pytest

import collkit
from conftest import EVERY_P, LARGE_P, up_to

SWEEP_P = up_to(EVERY_P, 128)
SAMPLED_P = up_to(LARGE_P, 4096)

# The switch-safe pairs: (small-count algorithm, large-count algorithm).
PAIRS = [
    ("allreduce:rd", "allreduce:rabenseifner"),
    ("reduce:folded_binomial", "reduce:rabenseifner"),
]
SEND, RECV = 0, 1


def roots(collective: str, P: int) -> list[int]:
    return sorted({0, 1 % P, P // 2, P - 1}) if collective == "reduce" else [0]


def odd_counts(P: int) -> list[int]:
    return sorted({5, P | 1, 2 * P + 1})


def check_pair(small: str, large: str, P: int, count: int, root: int) -> None:
    a = collkit.generate(small, P, count, root=root)
    b = collkit.generate(large, P, count, root=root)
    for s in (a, b):
        r = collkit.verify(s, commutative=False)
        assert r.ok and r.consistent_noncommutative, r.summary()
    cmp = collkit.compare_trees(a, b)
    assert cmp.same_exact, f"{small} vs {large} P={P} count={count} root={root}: {cmp.difference}"


@pytest.mark.parametrize("P", SWEEP_P)
def test_pairs_verified_and_same_tree_every_P_up_to_128(P: int) -> None:
    for small, large in PAIRS:
        for count in odd_counts(P):
            for root in roots(small.split(":")[0], P):
                check_pair(small, large, P, count, root)


@pytest.mark.parametrize("P", SAMPLED_P)
def test_pairs_verified_and_same_tree_sampled_P_to_4096(P: int) -> None:
    for small, large in PAIRS:
        for root in roots(small.split(":")[0], P)[-2:]:
            check_pair(small, large, P, 33, root)


def test_pairs_with_counts_above_P_at_large_P() -> None:
    # Every block non-empty and of two lengths: count = P + 2 is odd for odd P.
    for P in (257, 513):
        for small, large in PAIRS:
            check_pair(small, large, P, P + 2, P // 3 if small.startswith("reduce") else 0)


def test_seed_001_tree_for_13_ranks() -> None:
    # The tree [Rabenseifner] writes for 13 ranks is built by rd; rabenseifner builds the same for
    # every
    # element, whichever block (and so whichever halving partners) the element falls in.
    for count in (1, 13, 27):
        cmp = collkit.compare_trees(
            collkit.generate("allreduce:rd", 13, count),
            collkit.generate("allreduce:rabenseifner", 13, count),
        )
        assert cmp.same_exact, cmp.difference


def test_ring_is_verified_for_commutative_ops_only() -> None:
    for P in [*range(1, 34), 64, 100]:
        for count in odd_counts(P):
            for seg in ("0", "8", "24"):
                s = collkit.generate(f"allreduce:ring(seg={seg})", P, count)
                r = collkit.verify(s, commutative=True)
                assert r.ok, r.summary()
                if P >= 3 and count >= P:
                    assert not r.consistent_noncommutative
    assert collkit.Algorithm("allreduce:ring").spec["restrictions"]["commutative_op"]


def test_ring_is_not_switch_safe_with_rd() -> None:
    for P in (3, 5, 13, 16):
        cmp = collkit.compare_trees(
            collkit.generate("allreduce:rd", P, P), collkit.generate("allreduce:ring", P, P)
        )
        assert not cmp.same_exact and not cmp.same_commutative
        assert "allreduce:ring computes" in cmp.difference
    # Two ranks: one combination per element, the operands swapped in block 1.
    cmp = collkit.compare_trees(
        collkit.generate("allreduce:rd", 2, 2), collkit.generate("allreduce:ring", 2, 2)
    )
    assert cmp.same_commutative and not cmp.same_exact


def _sent_elems(s: collkit.Schedule) -> np.ndarray:
    a = s.arrays()
    per_rank = np.zeros(s.P, dtype=np.int64)
    sends = a["kind"] == SEND
    np.add.at(per_rank, a["rank"][sends], a["len"][sends])
    return per_rank


@pytest.mark.parametrize("algo", ["allreduce:rabenseifner", "allreduce:ring(seg=0)"])
def test_allreduce_bandwidth_optimal_for_power_of_two(algo: str) -> None:
    # 2 (P-1)/P n elements sent by every rank, the lower bound (Patarasuk and Yuan).
    for P in (2, 4, 16, 64):
        n = P * 7
        assert (_sent_elems(collkit.generate(algo, P, n)) == 2 * (P - 1) * 7).all()


def _recv_elems(s: collkit.Schedule, rank: int) -> int:
    a = s.arrays()
    mine = (a["kind"] == RECV) & (a["rank"] == rank)
    return int(a["len"][mine].sum())


def test_reduce_rabenseifner_root_receives_less_than_twice_the_vector() -> None:
    # The tree's root receives lg P whole vectors; Rabenseifner's root 2 (P-1)/P of one, plus
    # its partner's whole vector in the fold when P is not a power of two.
    for P in (4, 8, 13, 64):
        n = 64 * 9
        pof2 = 1 << (P.bit_length() - 1)
        for root in (0, P - 1):
            rab = _recv_elems(collkit.generate("reduce:rabenseifner", P, n, root=root), root)
            tree = _recv_elems(collkit.generate("reduce:folded_binomial", P, n, root=root), root)
            fold_in = n if root < 2 * (P - pof2) else 0
            assert tree == (pof2.bit_length() - 1) * n + fold_in, (P, root, tree)
            assert rab < 2 * n + fold_in and rab < tree, (P, root, rab, tree)


def test_counts_below_P_send_no_empty_messages_in_the_halving() -> None:
    for P in (8, 16, 100):
        for algo in ("allreduce:rabenseifner", "reduce:rabenseifner", "allreduce:ring"):
            s = collkit.generate(algo, P, 3)
            a = s.arrays()
            sends = a["kind"] == SEND
            assert (a["len"][sends] > 0).all(), algo
            assert collkit.verify(s, commutative=True).ok


def test_ring_segments_cut_messages() -> None:
    s = collkit.generate("allreduce:ring(seg=16)", 4, 4 * 10)  # blocks of 10 doubles, 2 per piece
    a = s.arrays()
    lens = a["len"][a["kind"] == SEND]
    assert lens.max() == 2 and len(lens) == 4 * 2 * 3 * 5


def _rd_pattern_from_seed_002(P: int, rank: int) -> list[tuple[int, int]]:
    """(kind, peer) of every message op of `rank` in [Ruefenacht 2017]'s Algorithm 1, written
    anew.
    """
    pof2 = 1 << (P.bit_length() - 1)
    rem = P - pof2
    ops: list[tuple[int, int]] = []
    if rank < 2 * rem:
        if rank % 2 == 0:
            return [(SEND, rank + 1), (RECV, rank + 1)]
        ops.append((RECV, rank - 1))
        myrank = rank // 2
    else:
        myrank = rank - rem
    mask = 1
    while mask < pof2:
        newdst = myrank ^ mask
        dst = newdst * 2 + 1 if newdst < rem else newdst + rem
        ops += [(SEND, dst), (RECV, dst)]
        mask <<= 1
    if rank < 2 * rem:
        ops.append((SEND, rank - 1))
    return ops


def test_rd_built_from_the_fold_phase_still_follows_seed_002() -> None:
    for P in [*range(1, 40), 100, 127, 128]:
        a = collkit.generate("allreduce:rd", P, 3).arrays()
        for rank in range(P):
            mine = (a["rank"] == rank) & (a["kind"] <= RECV)
            got = list(zip(a["kind"][mine].tolist(), a["peer"][mine].tolist(), strict=True))
            assert got == _rd_pattern_from_seed_002(P, rank), (P, rank)


def test_reduce_root_stays_active_and_non_roots_leave_out_alone() -> None:
    for P in (3, 6, 13):
        for root in range(P):
            a = collkit.generate("reduce:rabenseifner", P, 5, root=root).arrays()
            OUT = 1
            writes_out = (a["buf"] == OUT) & (a["kind"] != SEND)
            assert set(a["rank"][writes_out].tolist()) == {root}


@pytest.mark.parametrize("mode", ["elim", "elim21"])
@pytest.mark.parametrize("collective", ["allreduce", "reduce"])
def test_elimination_variants_verified_every_P_up_to_128(collective: str, mode: str) -> None:
    name = f"{collective}:rabenseifner(nonpof2={mode})"
    for P in SWEEP_P:
        for count in (5, 2 * P + 1):
            for root in sorted({0, P - 1}) if collective == "reduce" else [0]:
                s = collkit.generate(name, P, count, root=root)
                r = collkit.verify(s, commutative=False)
                assert r.ok and r.consistent_noncommutative, r.summary()
    for P in (1000, 4095):
        for root in roots(collective, P)[-2:]:
            r = collkit.verify(collkit.generate(name, P, 33, root=root), commutative=False)
            assert r.ok and r.consistent_noncommutative, r.summary()


@pytest.mark.parametrize("mode", ["elim", "elim21"])
def test_elimination_variants_are_not_switch_safe_with_rd(mode: str) -> None:
    # The elimination groups (0,1,2),(3,4),(5,6) differ from the fold's pairs for P = 7: the
    # variant builds another tree, shown by compare_trees; for P = 2^k there is nothing to
    # eliminate and the trees agree.
    name = f"allreduce:rabenseifner(nonpof2={mode})"
    cmp = collkit.compare_trees(
        collkit.generate("allreduce:rd", 7, 7), collkit.generate(name, 7, 7)
    )
    assert not cmp.same_commutative and "(r5+r6)" in cmp.difference
    for P in (2, 4, 16, 64):
        assert collkit.compare_trees(
            collkit.generate("allreduce:rd", P, P + 1), collkit.generate(name, P, P + 1)
        ).same_exact


def test_elimination_sends_no_whole_vector_pre_step() -> None:
    # The fold's pre-step sends whole vectors; 3-2 elimination never sends more than half.
    for P in (3, 7, 13, 100):
        n = 1 << 10
        a = collkit.generate("allreduce:rabenseifner(nonpof2=elim)", P, n).arrays()
        assert a["len"][a["kind"] == SEND].max() <= n // 2
        f = collkit.generate("allreduce:rabenseifner", P, n).arrays()
        assert f["len"][f["kind"] == SEND].max() == n


def test_bad_nonpof2_value_is_a_clear_error() -> None:
    for collective in ("allreduce", "reduce"):
        with pytest.raises(collkit.InvalidArgumentError, match="fold, elim"):
            collkit.generate(f"{collective}:rabenseifner(nonpof2=magic)", 5, 3)


def test_reduce_elimination_gathers_at_rank_0_and_forwards_to_another_root() -> None:
    # 3-2 collects at rank 0: with root 0 no whole vector moves; with root 5 one message of the
    # whole vector goes from rank 0 to the root at the end.
    n = 64
    a = collkit.generate("reduce:rabenseifner(nonpof2=elim)", 7, n, root=0).arrays()
    assert a["len"][a["kind"] == SEND].max() <= n // 2
    b = collkit.generate("reduce:rabenseifner(nonpof2=elim)", 7, n, root=5).arrays()
    whole = (b["kind"] == SEND) & (b["len"] == n)
    assert b["rank"][whole].tolist() == [0] and b["peer"][whole].tolist() == [5]


def test_which_recursive_multiplying_schedules_are_switch_safe() -> None:
    # rm with factors 2 only (with MPICH's collapse/expand for P != 2^k) builds rd's tree, so
    # it may be switched with rabenseifner; a factor above 2 combines more ranks in one stage.
    def same(name: str, P: int) -> bool:
        a = collkit.generate(name, P, P + 1)
        return collkit.compare_trees(
            a, collkit.generate("allreduce:rabenseifner", P, P + 1)
        ).same_exact

    assert same("allreduce:rm(a2,a2,a2)", 8) and same("allreduce:rm(a2,a2,a2,a2)", 16)
    assert same("allreduce:rm(c6m2,a2,a2,e6m2)", 7)
    assert not same("allreduce:rm(a4,a2)", 8) and not same("allreduce:rm(a8)", 8)


# Against the MPI itself (the PyPI mpich wheel; skipped without it): collkit_conformance runs every
# communicator x datatype x op x count x IN_PLACE case on random data, like the executor's tests.
LARGE_ALLREDUCES = (
    "allreduce:rabenseifner;allreduce:rabenseifner(nonpof2=elim);"
    "allreduce:rabenseifner(nonpof2=elim21)"
)


@pytest.mark.mpi
@pytest.mark.parametrize("P", [2, 3, 5, 6])
def test_against_mpich_on_random_data(P: int) -> None:
    import re

    from mpi_support import built, mpich_or_skip, run_program

    mpi = mpich_or_skip()
    bindir = built(mpi)
    r = run_program(
        mpi,
        bindir,
        P,
        "collkit_conformance",
        "--algos",
        LARGE_ALLREDUCES,
        "--counts",
        "0,1,13,1009",
    )
    m = re.search(r"SUMMARY P=\d+ cases=(\d+) failures=(\d+)", r.stdout)
    assert m and int(m.group(1)) > 300 and int(m.group(2)) == 0, r.stdout[-3000:]
    # The ring declines the non-commutative op (the matrix product) with a clear message, alike on
    # every rank, and passes every other case.
    r = run_program(mpi, bindir, P, "collkit_conformance", "--algos", "allreduce:ring(seg=64)")
    m = re.search(r"SUMMARY P=\d+ cases=(\d+) failures=(\d+)", r.stdout)
    assert m and int(m.group(2)) == 0 and r.returncode == 0, r.stdout[-3000:]
    declined = re.findall(r"^DECLINED (.*)$", r.stdout, re.MULTILINE)
    assert declined and all("noncommutative" in d for d in declined), r.stdout[-3000:]
    assert all("needs a commutative op" in d for d in declined)
