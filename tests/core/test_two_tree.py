"""bcast:two_tree and reduce:two_tree: the two trees are complementary in-order binary trees
(Sanders, Speck, Träff 2009; NCCL's double binary tree), each carrying half of the message;
both verified for every root, their costs against the simulated makespan."""

from __future__ import annotations

from typing import Any

import pytest

import collkit

SEND, RECV = 0, 1


def _arrays(name: str, P: int, rank: int, n: int, root: int = 0) -> dict[str, Any]:
    return dict(collkit.Algorithm(name).generate_rank(P, rank, n, 1, root).arrays())


def _trees(P: int, root: int = 0, n: int = 8) -> list[dict[int, tuple[int, list[int]]]]:
    """Each tree as {label: (parent label, child labels)}, read from bcast:two_tree(seg=0)'s
    messages (labels: rank - root mod P; the first half starts at 0, the second at n/2)."""
    out: list[dict[int, tuple[int, list[int]]]] = [{}, {}]
    for rank in range(P):
        a = _arrays("bcast:two_tree(seg=0)", P, rank, n, root)
        x = (rank - root) % P
        for t, base in enumerate((0, (n + 1) // 2)):
            at = [i for i in range(len(a["kind"])) if int(a["off"][i]) == base]
            par = [(int(a["peer"][i]) - root) % P for i in at if a["kind"][i] == RECV]
            kids = [(int(a["peer"][i]) - root) % P for i in at if a["kind"][i] == SEND]
            assert len(par) == (0 if x == 0 else 1), (rank, t)
            out[t][x] = (par[0] if par else -1, kids)
    return out


def _inorder(tree: dict[int, tuple[int, list[int]]], x: int) -> list[int]:
    """Labels of x's subtree in order (left child, x, right child)."""
    kids = tree[x][1]
    left = _inorder(tree, kids[0]) if kids and kids[0] < x else []
    right = [y for k in kids if k > x for y in _inorder(tree, k)]
    return [*left, x, *right]


def _depth(tree: dict[int, tuple[int, list[int]]], x: int) -> int:
    return 1 + max((_depth(tree, k) for k in tree[x][1]), default=0)


@pytest.mark.parametrize("P", [2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 31, 33, 64, 100])
def test_the_trees_are_complementary_in_order_binary_trees(P: int) -> None:
    t1, t2 = _trees(P)
    m = P - 1
    (r1,) = t1[0][1]
    (r2,) = t2[0][1]
    # Tree 1: the in-order tree on 1 .. m, at most two children, rooted at the top power of 2.
    assert r1 == 1 << (m.bit_length() - 1)
    assert _inorder(t1, r1) == list(range(1, m + 1))
    assert all(len(k) <= 2 for _, k in t1.values())
    assert _depth(t1, r1) == m.bit_length() == _depth(t2, r2)
    # Tree 2: mirrored (m even) or shifted by one (m odd).
    f = (lambda x: m + 1 - x) if m % 2 == 0 else (lambda x: x % m + 1)
    for x in range(1, P):
        p1, k1 = t1[f(x)]
        p2, k2 = t2[x]
        assert sorted(f(k) for k in k2) == sorted(k1), x
        assert (p1 == 0 and p2 == 0) or f(p2) == p1, x
    # Complementary: a rank is an inner node of both trees at most once.
    both = [x for x in range(1, P) if t1[x][1] and t2[x][1]]
    assert len(both) <= 1, both


@pytest.mark.parametrize("root", [0, 3])
def test_each_half_goes_down_its_own_tree(root: int) -> None:
    P, n = 9, 10
    for rank in range(P):
        a = _arrays("bcast:two_tree(seg=2)", P, rank, n, root)
        recvs = [(int(a["off"][i]), int(a["len"][i])) for i, k in enumerate(a["kind"]) if k == RECV]
        if rank == root:
            assert recvs == []
            sends = [int(a["off"][i]) for i, k in enumerate(a["kind"]) if k == SEND]
            assert sends == [0, 5, 2, 7, 4, 9]  # segment by segment: first half, second half
        else:
            assert recvs == [(0, 2), (5, 2), (2, 2), (7, 2), (4, 1), (9, 1)]


@pytest.mark.parametrize("P", range(1, 49))
def test_reduce_every_root(P: int) -> None:
    algo = collkit.Algorithm("reduce:two_tree(seg=16)")
    for root in range(P):
        r = collkit.verify(algo.generate(P, 5, 8, root), commutative=True)
        assert r.ok, r.summary()


def test_reduce_refuses_a_non_commutative_op() -> None:
    r = collkit.verify(collkit.generate("reduce:two_tree", 5, 9), commutative=False)
    assert not r.ok


@pytest.mark.parametrize("name", ["bcast", "reduce"])
@pytest.mark.parametrize("P", [2, 3, 4, 5, 8, 9, 16, 17, 31, 64])
@pytest.mark.parametrize("n", [2, 8, 32])
def test_cost_is_the_simulated_makespan(name: str, P: int, n: int) -> None:
    # alpha only, one-byte segments: the cost's message count is the critical path where the
    # trees are full (P a power of two) and at most one message more than it elsewhere.
    algo = f"{name}:two_tree(seg=1)"
    c = collkit.Algorithm(algo).cost(P, n)["alpha"] * 1000
    t = collkit.simulate(algo, P, count=n, elem_size=1, alpha="1us", beta=0).makespan
    if P & (P - 1) == 0:
        assert t == pytest.approx(c), (P, n)
    else:
        assert c - 1000 <= t <= c, (P, n)


def test_two_tree_beats_the_binomial_tree_for_a_long_message() -> None:
    # The point of two trees: n beta (1 + O(1/S)) where a binomial tree pays lg P n beta.
    P, n = 64, 1 << 16
    kw: dict[str, Any] = {"count": n, "elem_size": 8, "alpha": "1us", "beta": "1ns"}
    two = collkit.simulate("bcast:two_tree(seg=8KiB)", P, **kw).makespan
    binomial = collkit.simulate("bcast:binomial", P, **kw).makespan
    assert two < binomial / 2, (two, binomial)


@pytest.mark.parametrize("seg", ["-1", "x"])
def test_a_bad_segment_is_refused_by_name(seg: str) -> None:
    with pytest.raises(collkit.AlgorithmNameError, match="seg"):
        collkit.Algorithm(f"bcast:two_tree(seg={seg})")
