"""Algorithms written after an MPI's own: each rank posts the messages that MPI posts (the same
peers, in the same order, with the same bound on requests in flight), and what the MPI refuses
is refused with a clear error."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import collkit
from collkit.errors import CollkitError

SEND, RECV, COPY, COMPUTE = 0, 1, 3, 4


def _program(name: str, P: int, rank: int, count: int = 2, root: int = 0) -> dict[str, Any]:
    return dict(collkit.Algorithm(name).generate_rank(P, rank, count, 8, root).arrays())


def _deps(a: dict[str, Any], i: int) -> list[int]:
    return [int(d) for d in a["deps"][int(a["dep_begin"][i]) : int(a["dep_begin"][i + 1])]]


def _ancestors(a: dict[str, Any]) -> list[set[int]]:
    """Every op's transitive dependencies (ops only wait on earlier ops)."""
    out: list[set[int]] = []
    for i in range(len(a["kind"])):
        s: set[int] = set()
        for d in _deps(a, i):
            s |= {d} | out[d]
        out.append(s)
    return out


def _messages(a: dict[str, Any], kind: int) -> list[int]:
    return [i for i, k in enumerate(a["kind"]) if k == kind]


def _peers(a: dict[str, Any], kind: int) -> list[int]:
    return [int(a["peer"][i]) for i in _messages(a, kind)]


# ---- alltoall:two_proc (Open MPI) -----------------------------------------------------------


def test_two_proc_exchanges_with_the_other_rank_then_copies() -> None:
    for rank in (0, 1):
        a = _program("alltoall:two_proc", 2, rank)
        assert _peers(a, RECV) == [1 - rank] and _peers(a, SEND) == [1 - rank]
        (copy,) = _messages(a, COPY)
        assert set(_deps(a, copy)) == set(_messages(a, SEND) + _messages(a, RECV))
    r = collkit.verify(collkit.generate("alltoall:two_proc", 2, 3), commutative=False)
    assert r.ok, r.summary()


@pytest.mark.parametrize("P", [1, 3, 4, 64])
def test_two_proc_refuses_any_other_P(P: int) -> None:
    with pytest.raises(collkit.UnsupportedError, match=r"P >= 2|P <= 2"):
        collkit.Algorithm("alltoall:two_proc").generate(P, 1)
    # A restriction of the registry's (not the generator's alone): the constant-time check that
    # the interposer, tune and the conformance sets ask before any communication refuses it too.
    assert collkit.Algorithm("alltoall:two_proc").refusal(P, full=False)


def test_two_proc_refusal_reaches_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from collkit.cli import main

    assert main(["verify", "alltoall:two_proc", "-P", "3"]) == 2
    out = capsys.readouterr()
    assert "needs P <= 2, not 3" in out.out + out.err and "collkit verify: error:" in out.err


# ---- alltoall:scattered (MPICH) --------------------------------------------------------------


@pytest.mark.parametrize("P", [1, 2, 5, 8, 13])
@pytest.mark.parametrize("bound", [1, 2, 3, 0, 32])
def test_scattered_posts_mpichs_rounds(P: int, bound: int) -> None:
    b = P if bound == 0 else bound
    for rank in range(P):
        a = _program(f"alltoall:scattered(bound={bound})", P, rank)
        # MPICH: distance i receives from rank + i and sends to rank - i; i = 0 is the copy.
        assert _peers(a, RECV) == [(rank + i) % P for i in range(1, P)]
        assert _peers(a, SEND) == [(rank - i) % P for i in range(1, P)]
        anc = _ancestors(a)
        # The op of distance i, whichever kind; the copy is distance 0.
        ops = {0: _messages(a, COPY)}
        for kind in (RECV, SEND):
            for i, op in enumerate(_messages(a, kind), start=1):
                ops.setdefault(i, []).append(op)
        for i, mine in ops.items():
            for j, theirs in ops.items():
                for x in mine:
                    for y in theirs:
                        # Round i // b waits for every op of the rounds before, and for none of
                        # its own: at most b distances in flight.
                        assert (y in anc[x]) == (j // b < i // b), (rank, i, j)


@pytest.mark.parametrize("name", ["scattered", "linear_sync"])
@pytest.mark.parametrize("bound", ["-1", "x", "1.5", ""])
def test_a_bad_bound_is_refused_by_name(name: str, bound: str) -> None:
    with pytest.raises(collkit.AlgorithmNameError, match="bound"):
        collkit.Algorithm(f"alltoall:{name}(bound={bound})")


# ---- alltoall:linear_sync (Open MPI) ---------------------------------------------------------


@pytest.mark.parametrize("P", [1, 2, 5, 8, 13])
@pytest.mark.parametrize("bound", [0, 1, 3, 12, 100])
def test_linear_sync_keeps_a_window_of_bound_requests(P: int, bound: int) -> None:
    K = P - 1 if bound == 0 or bound > P - 1 else bound
    for rank in range(P):
        a = _program(f"alltoall:linear_sync(bound={bound})", P, rank)
        # Open MPI: receives from rank + 1, rank + 2, ...; sends to rank - 1, rank - 2, ...
        assert _peers(a, RECV) == [(rank + j) % P for j in range(1, P)]
        assert _peers(a, SEND) == [(rank - j) % P for j in range(1, P)]
        for kind in (RECV, SEND):
            ops = _messages(a, kind)
            for j, op in enumerate(ops):
                # Each new request of a kind replaces the one K before it.
                assert _deps(a, op) == ([ops[j - K]] if j >= K else []), (rank, kind, j)
        # The first window of receives is posted before any send, as Open MPI posts it.
        first_send = min(_messages(a, SEND), default=len(a["kind"]))
        assert sum(1 for i in _messages(a, RECV) if i < first_send) == K


# ---- allreduce:allgather_reduce (Open MPI 5) -------------------------------------------------


@pytest.mark.parametrize("gather", ["allgather:bruck", "allgather:ring", "allgather:rd"])
@pytest.mark.parametrize("P", [1, 2, 6, 8, 11])
def test_allgather_reduce_sends_what_its_allgather_sends(gather: str, P: int) -> None:
    name = f"allreduce:allgather_reduce(allgather={gather})"
    for rank in range(P):
        mine, theirs = _program(name, P, rank, 3), _program(gather, P, rank, 3)
        for kind in (SEND, RECV):
            assert _peers(mine, kind) == _peers(theirs, kind)
        # Then P - 1 reductions, one after another, each taking the next rank's vector on the
        # right: rank order, whatever the op.
        reduces = _messages(mine, 2)
        assert len(reduces) == P - 1
        assert [int(mine["side"][i]) for i in reduces] == [1] * (P - 1)
        assert [int(mine["src_off"][i]) for i in reduces] == [3 * q for q in range(1, P)]
    r = collkit.verify(collkit.generate(name, P, 3), commutative=False)
    assert r.ok and r.consistent_noncommutative, r.summary()


def test_allgather_reduce_cost_is_its_allgathers_plus_the_reductions() -> None:
    for gather in ("allgather:bruck", "allgather:ring"):
        c = collkit.Algorithm(f"allreduce:allgather_reduce(allgather={gather})").cost(12, 100)
        g = collkit.Algorithm(gather).cost(12, 100)
        assert (c["alpha"], c["beta"]) == (g["alpha"], g["beta"])
        assert c["gamma"] == g["gamma"] + 11 * 100


def test_allgather_reduce_refuses_what_is_not_an_allgather() -> None:
    with pytest.raises(collkit.AlgorithmNameError):
        collkit.Algorithm("allreduce:allgather_reduce(allgather=allreduce:rd)")


# ---- reduce:in_order_binary (Open MPI) -------------------------------------------------------


def _ompi_in_order_tree(P: int) -> dict[int, tuple[int, list[int]]]:
    """Open MPI's in-order binary tree as its pictures draw it: rank -> (parent, children).
    A range [lo, lo + s) is rooted at its largest rank; the rank below it roots the upper
    s - 1 - s // 2 ranks, the top of the lower s // 2 ranks roots those (s = 2: only the first)."""
    tree: dict[int, tuple[int, list[int]]] = {}

    def build(lo: int, s: int, parent: int) -> None:
        node = lo + s - 1
        h = 0 if s == 2 else s // 2
        kids = ([node - 1] if s >= 2 else []) + ([lo + h - 1] if h >= 1 else [])
        tree[node] = (parent, kids)
        if s >= 2:
            build(lo + h, s - 1 - h, node)
        if h >= 1:
            build(lo, h, node)

    build(0, P, -1)
    return tree


def test_in_order_tree_is_open_mpis_pictures() -> None:
    # The trees drawn above ompi_coll_base_topo_build_in_order_bintree.
    assert _ompi_in_order_tree(9) == {
        8: (-1, [7, 3]), 7: (8, [6, 5]), 6: (7, []), 5: (7, [4]), 4: (5, []),
        3: (8, [2, 1]), 2: (3, []), 1: (3, [0]), 0: (1, []),
    }  # fmt: skip
    assert _ompi_in_order_tree(4) == {3: (-1, [2, 1]), 2: (3, []), 1: (3, [0]), 0: (1, [])}
    assert _ompi_in_order_tree(2) == {1: (-1, [0]), 0: (1, [])}


@pytest.mark.parametrize("P", [2, 3, 4, 7, 9, 16, 33])
@pytest.mark.parametrize("root", [0, 1, -1])
def test_in_order_binary_sends_along_open_mpis_tree(P: int, root: int) -> None:
    root %= P
    tree = _ompi_in_order_tree(P)
    segs = 3  # 5 elements in segments of 2 (16 B of doubles)
    for rank in range(P):
        a = _program("reduce:in_order_binary(seg=16)", P, rank, 5, root)
        parent, kids = tree[rank]
        # Per segment, one receive from each child, the first child first.
        expect_recv = kids * segs
        expect_send = [parent] * segs if parent >= 0 else []
        if root != P - 1 and rank == P - 1:
            expect_send.append(root)  # the result's one hop to the root
        if root != P - 1 and rank == root:
            expect_recv.append(P - 1)
        assert _peers(a, RECV) == expect_recv, rank
        assert _peers(a, SEND) == expect_send, rank
        # Each reduction puts the child's partial result on the left: acc = child (+) acc.
        assert all(int(a["side"][i]) == 0 for i in _messages(a, 2))
    r = collkit.verify(collkit.generate("reduce:in_order_binary(seg=16)", P, 5, 8, root))
    assert r.ok and r.consistent_noncommutative, r.summary()


def test_in_order_binary_in_place_root_receives_last() -> None:
    for P, root in ((5, 0), (8, 3), (9, 8)):
        s = collkit.generate("reduce:in_order_binary", P, 4, 8, root)
        r = collkit.verify(s, commutative=False, in_place=True)
        assert r.ok, r.summary()


# ---- allreduce:segmented_ring (Open MPI) -----------------------------------------------------


def _split(n: int, parts: int) -> list[int]:
    """Open MPI's COMPUTE_BLOCKCOUNT: n into `parts`, the first n % parts one longer."""
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


def _ompi_segmented_ring(P: int, n: int, c: int, rank: int) -> tuple[list, list]:
    """The (peer, elements) of each send and receive of Open MPI's segmented ring, in order."""
    if n < P * c:
        np_ = 1
    else:
        rest = n % (P * c)
        np_ = n // (P * c) + (1 if rest >= P and rest > P * c // 2 else 0)
    blocks = _split(n, P)
    to, frm = (rank + 1) % P, (rank - 1) % P
    sends: list[tuple[int, int]] = []
    recvs: list[tuple[int, int]] = []
    for p in range(np_):
        piece = [_split(b, np_)[p] for b in blocks]
        recvs.append((frm, piece[(rank - 1) % P]))
        sends.append((to, piece[rank]))
        for k in range(2, P):
            recvs.append((frm, piece[(rank - k) % P]))
            sends.append((to, piece[(rank - k + 1) % P]))
    for k in range(P - 1):
        sends.append((to, blocks[(rank + 1 - k) % P]))
        recvs.append((frm, blocks[(rank - k) % P]))
    # Empty messages are not sent (every rank knows which are empty).
    return [m for m in sends if m[1]], [m for m in recvs if m[1]]


def _sized(a: dict[str, Any], kind: int) -> list[tuple[int, int]]:
    return [(int(a["peer"][i]), int(a["len"][i])) for i in _messages(a, kind)]


@pytest.mark.parametrize("P", [2, 3, 4, 7, 12])
@pytest.mark.parametrize(("n", "seg"), [(5, 0), (100, 16), (101, 8), (37, 8), (3, 8), (64, 0)])
def test_segmented_ring_posts_open_mpis_messages(P: int, n: int, seg: int) -> None:
    name = f"allreduce:segmented_ring(seg={seg})"
    c = n if seg == 0 else max(1, seg // 8)
    for rank in range(P):
        a = _program(name, P, rank, n)
        sends, recvs = _ompi_segmented_ring(P, n, c, rank)
        assert _sized(a, SEND) == sends, rank
        assert _sized(a, RECV) == recvs, rank
    s = collkit.generate(name, P, n)
    for in_place in (False, True):
        r = collkit.verify(s, commutative=True, in_place=in_place)
        assert r.ok, r.summary()


def test_segmented_ring_needs_a_commutative_op() -> None:
    s = collkit.generate("allreduce:segmented_ring(seg=16)", 4, 40)
    assert not collkit.verify(s, commutative=False).ok


def test_segmented_ring_cost_counts_its_phases() -> None:
    # 100 B on 4 ranks in segments of 2 B: 100 // 8 = 12 phases (the rest, 4, is not > 4).
    c = collkit.Algorithm("allreduce:segmented_ring(seg=2)").cost(4, 100)
    assert c["alpha"] == (12 + 1) * 3
    assert c["beta"] == pytest.approx(2 * 3 / 4 * 100)
    assert collkit.Algorithm("allreduce:segmented_ring").cost(4, 100)["alpha"] == 2 * 3


# ---- bcast:split_binary_tree (Open MPI) ------------------------------------------------------


def _ompi_bintree(P: int) -> dict[int, list[int]]:
    """Open MPI's fanout-2 tree (topo_build_tree) over positions: v at level l has children
    v + 2^l and v + 2^(l+1)."""
    kids: dict[int, list[int]] = {}
    for v in range(P):
        level, first = 0, 0
        while first + (1 << level) <= v:
            first += 1 << level
            level += 1
        kids[v] = [c for c in (v + (1 << level), v + (2 << level)) if c < P]
    return kids


def _ompi_split_bintree(P: int, n: int, seg: int, v: int) -> tuple[list, list]:
    """(position, offset, length) of each send and receive of position v, in Open MPI's order."""
    kids = _ompi_bintree(P)
    parent = next((p for p, ks in kids.items() if v in ks), -1)
    sizes, begins = (n // 2, n - n // 2), (0, n // 2)
    seg = seg or sizes[1]

    def pieces(h: int) -> list[tuple[int, int]]:
        return [(begins[h] + o, min(seg, sizes[h] - o)) for o in range(0, sizes[h], seg)]

    sends: list[tuple[int, int, int]] = []
    recvs: list[tuple[int, int, int]] = []
    if v == 0:
        per_kid = [pieces(h) for h in range(min(2, len(kids[0])))]
        for j in range(max(len(p) for p in per_kid)):
            for h, ps in enumerate(per_kid):
                if j < len(ps):
                    sends.append((kids[0][h], *ps[j]))
    else:
        lr = 0 if v % 2 else 1
        for piece in pieces(lr):
            recvs.append((parent, *piece))
            sends.extend((c, *piece) for c in kids[v])
    if P % 2 == 0 and v == 0:
        sends.append((P - 1, begins[1], sizes[1]))
    elif P % 2 == 0 and v == P - 1:
        recvs.append((0, begins[1], sizes[1]))
    elif v != 0:
        lr = 0 if v % 2 else 1
        twin = v + 1 if lr == 0 else v - 1
        recvs.append((twin, begins[1 - lr], sizes[1 - lr]))
        sends.append((twin, begins[lr], sizes[lr]))
    return sends, recvs


def test_open_mpis_bintree_splits_odd_and_even_positions() -> None:
    kids = _ompi_bintree(15)
    assert kids[0] == [1, 2] and kids[1] == [3, 5] and kids[2] == [4, 6] and kids[3] == [7, 11]


def _placed(a: dict[str, Any], kind: int, P: int, root: int) -> list[tuple[int, int, int]]:
    return [
        ((int(a["peer"][i]) - root) % P, int(a["off"][i]), int(a["len"][i]))
        for i in _messages(a, kind)
    ]


@pytest.mark.parametrize("P", [2, 3, 4, 7, 8, 13])
@pytest.mark.parametrize(("n", "seg"), [(2, 0), (7, 0), (40, 8), (41, 3), (9, 1)])
@pytest.mark.parametrize("root", [0, 2])
def test_split_binary_tree_posts_open_mpis_messages(P: int, n: int, seg: int, root: int) -> None:
    root %= P
    name = f"bcast:split_binary_tree(seg={seg})"
    for rank in range(P):
        v = (rank - root) % P
        a = dict(collkit.Algorithm(name).generate_rank(P, rank, n, 1, root).arrays())
        sends, recvs = _ompi_split_bintree(P, n, seg, v)
        assert _placed(a, SEND, P, root) == sends, v
        assert _placed(a, RECV, P, root) == recvs, v
    r = collkit.verify(collkit.generate(name, P, n, 1, root))
    assert r.ok, r.summary()


def test_split_binary_tree_one_element_is_a_chain() -> None:
    for rank in range(5):
        a = _program("bcast:split_binary_tree", 5, rank, 1)
        assert _peers(a, RECV) == ([rank - 1] if rank else [])
        assert _peers(a, SEND) == ([rank + 1] if rank < 4 else [])


# ---- alltoall:pairwise_sendrecv_replace (MPICH) ----------------------------------------------


@pytest.mark.parametrize("P", [1, 2, 5, 8])
def test_sendrecv_replace_swaps_pairs_in_mpichs_global_order(P: int) -> None:
    for rank in range(P):
        a = _program("alltoall:pairwise_sendrecv_replace", P, rank, 3)
        # MPICH: pairs (i, j), i < j, lexicographically: rank r meets 0..r-1, then r+1..P-1.
        order = [p for p in range(P) if p != rank]
        assert _peers(a, SEND) == order and _peers(a, RECV) == order
        anc = _ancestors(a)
        sends, recvs = _messages(a, SEND), _messages(a, RECV)
        for k in range(1, P - 1):
            # Each exchange after the previous one, both halves (a blocking sendrecv_replace).
            assert {sends[k - 1], recvs[k - 1]} <= anc[sends[k]] & anc[recvs[k]]
        # The block is sent from scratch (packed first), so out[peer] may receive at once.
        assert all(int(a["buf"][i]) >= 2 for i in sends)
    r = collkit.verify(collkit.generate("alltoall:pairwise_sendrecv_replace", P, 3))
    assert r.ok, r.summary()


@pytest.mark.parametrize("P", [2, 3, 6, 11])
def test_sendrecv_replace_cost_is_the_simulated_critical_path(P: int) -> None:
    c = collkit.Algorithm("alltoall:pairwise_sendrecv_replace").cost(P, 0)
    t = collkit.simulate("alltoall:pairwise_sendrecv_replace", P, count=1, alpha="1us")
    assert t.makespan == pytest.approx(c["alpha"] * 1000)  # ns


# ---- reduce_scatter_block:recursive_doubling (MPICH) -----------------------------------------


def _mpich_rsb_rd(P: int, n: int, rank: int) -> tuple[list, list]:
    """(peer, elements) of each send and receive of MPICH's recursive doubling, in order."""

    def outside(root: int, m: int) -> int:
        return (P - min(root + m, P) + root) * n

    sends: list[tuple[int, int]] = []
    recvs: list[tuple[int, int]] = []
    mask, i = 1, 0
    while mask < P:
        dst = rank ^ mask
        dst_root, my_root = dst >> i << i, rank >> i << i
        if dst < P:
            sends.append((dst, outside(my_root, mask)))
            recvs.append((dst, outside(dst_root, mask)))
        if dst_root + mask > P:
            done = P - my_root - mask
            k = mask.bit_length() - 1
            tm = mask >> 1
            while tm:
                peer, tree_root = rank ^ tm, rank >> k << k
                if peer > rank and rank < tree_root + done and peer >= tree_root + done:
                    sends.append((peer, outside(dst_root, mask)))
                elif peer < rank and peer < tree_root + done and rank >= tree_root + done:
                    recvs.append((peer, outside(dst_root, mask)))
                tm >>= 1
                k -= 1
        mask <<= 1
        i += 1
    return sends, recvs


@pytest.mark.parametrize("P", [1, 2, 3, 5, 6, 8, 11, 13, 16])
def test_rsb_recursive_doubling_posts_mpichs_messages(P: int) -> None:
    name = "reduce_scatter_block:recursive_doubling"
    for rank in range(P):
        a = _program(name, P, rank, 2)
        sends, recvs = _mpich_rsb_rd(P, 2, rank)
        assert _sized(a, SEND) == sends and _sized(a, RECV) == recvs, rank
    s = collkit.generate(name, P, 2)
    for in_place in (False, True):
        r = collkit.verify(s, commutative=False, in_place=in_place)
        assert r.ok and r.consistent_noncommutative, r.summary()


@pytest.mark.parametrize("P", [2, 4, 8, 16])
def test_rsb_recursive_doubling_sends_what_its_cost_says(P: int) -> None:
    # P = 2^k: every rank sends (P lg P - P + 1) blocks in lg P messages.
    lg = P.bit_length() - 1
    for rank in range(P):
        a = _program("reduce_scatter_block:recursive_doubling", P, rank, 1)
        assert len(_messages(a, SEND)) == lg
        assert sum(int(a["len"][i]) for i in _messages(a, SEND)) == P * lg - P + 1


# ---- bcast:pipelined_tree (MPICH) ------------------------------------------------------------


def _mpich_chunks(n: int, c: int) -> list[tuple[int, int]]:
    """MPIR_Algo_calculate_pipeline_chunk_info: the remainder first, then whole chunks."""
    if c <= 0 or c >= n:
        return [(0, n)]
    first = n % c or c
    return [(0, first)] + [(o, c) for o in range(first, n, c)]


@pytest.mark.parametrize("P", [2, 5, 9, 16])
@pytest.mark.parametrize(("k", "seg", "n"), [(2, 8192, 100), (2, 16, 100), (3, 7, 30), (1, 4, 9)])
@pytest.mark.parametrize("root", [0, 3])
def test_pipelined_tree_posts_mpichs_messages(P: int, k: int, seg: int, n: int, root: int) -> None:
    root %= P
    name = f"bcast:pipelined_tree(k={k},seg={seg})"
    chunks = _mpich_chunks(n, seg)
    for rank in range(P):
        v = (rank - root) % P
        a = dict(collkit.Algorithm(name).generate_rank(P, rank, n, 1, root).arrays())
        kids = [(v * k + j + root) % P for j in range(1, k + 1) if v * k + j < P]
        parent = [((v - 1) // k + root) % P] if v else []
        assert _placed(a, RECV, 1, 0) == [(0, o, ln) for o, ln in chunks for _ in parent]
        assert [int(a["peer"][i]) for i in _messages(a, RECV)] == parent * len(chunks)
        sends = [(p, o, ln) for o, ln in chunks for p in kids]
        got = [(int(a["peer"][i]), int(a["off"][i]), int(a["len"][i])) for i in _messages(a, SEND)]
        assert got == sends, v
        # Three receives pre-posted; each later one waits for the one before it.
        recvs = _messages(a, RECV)
        for i, op in enumerate(recvs):
            expect = [recvs[i - 1]] if len(recvs) > 3 and i >= 3 else []
            assert _deps(a, op) == expect
    r = collkit.verify(collkit.generate(name, P, n, 1, root))
    assert r.ok, r.summary()


def test_pipelined_tree_refuses_a_bad_k() -> None:
    for k in ("0", "65", "x"):
        with pytest.raises(collkit.AlgorithmNameError, match="k"):
            collkit.Algorithm(f"bcast:pipelined_tree(k={k})")


# ---- recursive exchange (MPICH: allreduce, barrier, allgather recexch) ----------------------


def _mpich_recexch(P: int, k: int, rank: int) -> dict[str, Any]:
    """MPII_Recexchalgo_get_neighbors, as recexchalgo.c computes it (digits and all)."""
    if k > P:
        k = P if P > 2 else 2
    pofk, lg = 1, 0
    while pofk <= P:
        pofk *= k
        lg += 1
    pofk //= k
    lg -= 1
    rem = P - pofk
    T = rem * k // (k - 1)
    sendto, recvfrom, newrank = -1, [], -1
    if rank < T:
        if rank % k != k - 1:
            sendto = rank + (k - 1 - rank % k)
            if sendto > T - 1:
                sendto = T
        else:
            recvfrom = [rank - i - 1 for i in range(k - 1)]
            newrank = rank // k
    else:
        newrank = rank - rem
        if rank == T and (T - 1) % k != k - 1 and T >= 1:
            ns = (T - 1) % k + 1
            recvfrom = [T - ns + j for j in range(ns - 1, -1, -1)]
    nbrs: list[list[int]] = []
    if sendto == -1:
        digit = [0] * lg
        t, i = newrank, 0
        while t:
            digit[i], t = t % k, t // k
            i += 1
        for phase in range(lg):
            cbit, row = digit[phase], []
            for d in range(k):
                if d != cbit:
                    digit[phase] = d
                    nbr = sum(digit[j] * k**j for j in range(lg))
                    row.append(nbr * k + k - 1 if nbr < rem // (k - 1) else nbr + rem)
            digit[phase] = cbit
            nbrs.append(row)
    return {"k": k, "rem": rem, "T": T, "lg": lg, "sendto": sendto, "recvfrom": recvfrom,
            "nbrs": nbrs}  # fmt: skip


def _messages_in_order(a: dict[str, Any]) -> list[tuple[str, int, int, int]]:
    """(kind, peer, offset, length) of every send and receive, in program order."""
    names = {SEND: "send", RECV: "recv"}
    return [
        (names[int(kd)], int(a["peer"][i]), int(a["off"][i]), int(a["len"][i]))
        for i, kd in enumerate(a["kind"])
        if int(kd) in names
    ]


def _mpich_allreduce_recexch(P: int, k: int, single: bool, n: int, rank: int) -> list[tuple]:
    """The messages of MPIR_Allreduce_intra_recexch on `rank`, in the order it posts them."""
    if P == 1:
        return []
    g = _mpich_recexch(P, k, rank)
    k, nb = g["k"], g["nbrs"]
    if g["sendto"] >= 0:
        return [("send", g["sendto"], 0, n), ("recv", g["sendto"], 0, n)]
    out = [("recv", q, 0, n) for q in g["recvfrom"]]
    phase = 0
    while phase < g["lg"]:
        for j in range(1 if single else 2):
            if phase + j < g["lg"]:
                out += [("recv", q, 0, n) for q in nb[phase + j]]
        out += [("send", q, 0, n) for q in nb[phase]]
        if not single:
            phase += 1
            if phase < g["lg"]:
                out += [("send", q, 0, n) for q in nb[phase]]
        phase += 1
    return out + [("send", q, 0, n) for q in g["recvfrom"]]


def test_mpich_recexch_groups_by_hand() -> None:
    # k = 3, P = 5: ranks 0 and 1 fold into 2; step-2 ranks 2, 3, 4 form one group.
    assert _mpich_recexch(5, 3, 0)["sendto"] == 2 and _mpich_recexch(5, 3, 2)["recvfrom"] == [1, 0]
    assert _mpich_recexch(5, 3, 3)["nbrs"] == [[2, 4]]
    # k = 4, P = 6: a short run (0, 1) folds into T = 2, past its own end.
    assert _mpich_recexch(6, 4, 0)["sendto"] == 2 and _mpich_recexch(6, 4, 2)["recvfrom"] == [1, 0]
    # k = 2, P = 8: recursive doubling.
    assert _mpich_recexch(8, 2, 5)["nbrs"] == [[4], [7], [1]]


@pytest.mark.parametrize("P", [1, 2, 3, 4, 5, 6, 7, 9, 10, 16, 17, 27, 30])
@pytest.mark.parametrize("k", [2, 3, 4, 5])
@pytest.mark.parametrize("single", [0, 1])
def test_allreduce_recexch_posts_mpichs_messages(P: int, k: int, single: int) -> None:
    name = f"allreduce:recexch(k={k},single_phase_recv={single})"
    for rank in range(P):
        a = _program(name, P, rank, 3)
        assert _messages_in_order(a) == _mpich_allreduce_recexch(P, k, bool(single), 3, rank), rank
    r = collkit.verify(collkit.generate(name, P, 3), commutative=False)
    assert r.ok and r.consistent_noncommutative, r.summary()


@pytest.mark.parametrize("P", [1, 2, 3, 5, 8, 9, 13])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_barrier_recexch_is_the_allreduce_of_nothing(P: int, k: int) -> None:
    for single in (0, 1):
        bar = f"barrier:recexch(k={k},single_phase_recv={single})"
        for rank in range(P):
            a = _program(bar, P, rank, 0)
            expect = _mpich_allreduce_recexch(P, k, bool(single), 0, rank)
            assert [(m[0], m[1], m[3]) for m in _messages_in_order(a)] == [
                (m[0], m[1], 0) for m in expect
            ], rank
        r = collkit.verify(collkit.generate(bar, P, 0))
        assert r.ok, r.summary()


@pytest.mark.parametrize("name", ["allreduce:recexch", "barrier:recexch"])
@pytest.mark.parametrize("param", ["k=1", "k=65", "k=x", "single_phase_recv=2", "single=1"])
def test_recexch_refuses_a_bad_parameter(name: str, param: str) -> None:
    with pytest.raises(collkit.AlgorithmNameError, match=param.split("=")[0]):
        collkit.Algorithm(f"{name}({param})")


@pytest.mark.parametrize(("P", "k"), [(8, 2), (9, 3), (16, 4), (25, 5)])
def test_allreduce_recexch_cost_at_a_power_of_k_is_a_ranks_sends(P: int, k: int) -> None:
    name = f"allreduce:recexch(k={k})"
    c = collkit.Algorithm(name).cost(P, 8 * 3)
    for rank in range(P):
        sends = _messages(_program(name, P, rank, 3), SEND)
        assert c["alpha"] == len(sends) and c["beta"] == 8 * 3 * len(sends) == c["gamma"]
    assert collkit.Algorithm("barrier:recexch(k=3)").cost(9, 0)["alpha"] == 4
    # Past k^m the folding rank receives and sends back k - 1 more vectors.
    assert collkit.Algorithm("allreduce:recexch(k=3)").cost(14, 8)["alpha"] == 4 + 2 * 2


def _mpich_count_and_offset(rank: int, phase: int, k: int, P: int) -> tuple[int, int]:
    """MPII_Recexchalgo_get_count_and_offset: (count, offset) in blocks."""
    pofk = 1
    while pofk <= P:
        pofk *= k
    pofk //= k
    rem = P - pofk
    T = rem * k // (k - 1)
    step2 = rank // k if rank < T else rank - rem

    def orig(s: int) -> int:
        return s * k + k - 1 if s < rem // (k - 1) else s + rem

    lo = step2 // k**phase * k**phase - 1
    hi = lo + k**phase
    olo = orig(lo) if lo >= 0 else lo
    return orig(hi) - olo, olo + 1


def _mpich_reverse_digits(rank: int, P: int, k: int) -> int:
    g = _mpich_recexch(P, k, rank)
    pofk = k ** g["lg"]
    rem = P - pofk
    T = rem * k // (k - 1)
    s = rank // k if rank < T else rank - rem
    digits = [(s // k**i) % k for i in range(g["lg"])]
    rev = sum(digits[g["lg"] - 1 - i] * k**i for i in range(g["lg"]))
    return rev * k + k - 1 if rev < rem // (k - 1) else rev + rem


def _mpich_allgather_recexch(
    P: int, k: int, halving: bool, single: bool, n: int, rank: int
) -> list[tuple]:
    """The messages of MPIR_Allgather_intra_recexch on `rank`, in the order it posts them."""
    g = _mpich_recexch(P, k, rank)
    k, nb, lg = g["k"], g["nbrs"], g["lg"]
    if g["sendto"] >= 0:
        return [("send", g["sendto"], 0, n), ("recv", g["sendto"], 0, P * n)]

    def blocks(kind: str, peer: int, whose: int, phase: int) -> tuple:
        cnt, off = _mpich_count_and_offset(whose, phase, k, P)
        return (kind, peer, off * n, cnt * n)

    out = [("recv", q, q * n, n) for q in g["recvfrom"]]
    rev = _mpich_reverse_digits(rank, P, k) if halving else rank
    if halving and rev != rank:
        out += [blocks("send", rev, rank, 0), blocks("recv", rev, rev, 0)]
    phase = recv_phase = lg - 1 if halving else 0
    step = -1 if halving else 1
    j = 0
    while j < lg:
        for it in range(1 if single else 2):
            if j + it < lg:
                for q in nb[recv_phase]:
                    whose = _mpich_reverse_digits(q, P, k) if halving else q
                    out.append(blocks("recv", q, whose, j + it))
                recv_phase += step
        out += [blocks("send", q, rev, j) for q in nb[phase]]
        phase += step
        if not single:
            j += 1
            if j < lg:
                out += [blocks("send", q, rev, j) for q in nb[phase]]
                phase += step
        j += 1
    return out + [("send", q, 0, P * n) for q in g["recvfrom"]]


@pytest.mark.parametrize("P", [1, 2, 3, 4, 5, 6, 7, 9, 10, 16, 17, 27, 30])
@pytest.mark.parametrize("k", [2, 3, 4, 5])
@pytest.mark.parametrize("variant", ["doubling", "halving"])
def test_allgather_recexch_posts_mpichs_messages(P: int, k: int, variant: str) -> None:
    for single in (0, 1):
        name = f"allgather:recexch_{variant}(k={k},single_phase_recv={single})"
        for rank in range(P):
            a = _program(name, P, rank, 2)
            expect = _mpich_allgather_recexch(P, k, variant == "halving", bool(single), 2, rank)
            assert _messages_in_order(a) == expect, rank
        s = collkit.generate(name, P, 2)
        for in_place in (False, True):
            r = collkit.verify(s, in_place=in_place)
            assert r.ok, r.summary()


@pytest.mark.parametrize(("P", "k"), [(8, 2), (9, 3), (16, 4), (25, 5)])
@pytest.mark.parametrize("variant", ["doubling", "halving"])
def test_allgather_recexch_cost_at_a_power_of_k_is_a_ranks_sends(
    P: int, k: int, variant: str
) -> None:
    name = f"allgather:recexch_{variant}(k={k})"
    c = collkit.Algorithm(name).cost(P, 8 * 2)
    for rank in range(P):
        a = _program(name, P, rank, 2)
        # Halving's first swap is one more message, left out of the phases' count here.
        sends = [i for i in _messages(a, SEND) if variant == "doubling" or int(a["stage"][i]) > 1]
        assert c["beta"] >= 8 * sum(int(a["len"][i]) for i in sends)
        if variant == "doubling":
            assert c["alpha"] == len(sends) and c["beta"] == 8 * 2 * (P - 1)


def _mpich_k_reduce_scatter_allgather(P: int, k: int, single: bool, n: int, rank: int) -> list:
    """The messages of MPIR_Allreduce_intra_k_reduce_scatter_allgather on `rank`, in order."""
    if P == 1:
        return []
    g = _mpich_recexch(P, k, rank)
    k, nb, lg = g["k"], g["nbrs"], g["lg"]
    if g["sendto"] >= 0:
        return [("send", g["sendto"], 0, n), ("recv", g["sendto"], 0, n)]
    out = [("recv", q, 0, n) for q in g["recvfrom"]]
    pofk, rem = k**lg, g["rem"]
    cnts = [0] * P
    for i in range(pofk - 1):
        cnts[i * k + k - 1 if i < rem // (k - 1) else i + rem] = n // pofk
    # MPICH writes (p_of_k - 1 * k) + (k - 1) here, never taken: rem / (k - 1) < p_of_k.
    last = (pofk - 1 * k) + (k - 1) if pofk - 1 < rem // (k - 1) else pofk - 1 + rem
    cnts[last] = n - n // pofk * (pofk - 1)
    displs = [sum(cnts[:i]) for i in range(P)]

    def seg(kind: str, peer: int, whose: int, j: int) -> tuple:
        cnt, off = _mpich_count_and_offset(_mpich_reverse_digits(whose, P, k), j, k, P)
        return (kind, peer, displs[off], sum(cnts[off : off + cnt]))

    for phase in range(lg):
        for dst in nb[phase]:
            out += [seg("send", dst, dst, lg - 1 - phase), seg("recv", dst, rank, lg - 1 - phase)]
    phase = recv_phase = lg - 1
    j = 0
    while j < lg:
        for it in range(1 if single else 2):
            if j + it < lg:
                out += [seg("recv", q, q, j + it) for q in nb[recv_phase]]
                recv_phase -= 1
        out += [seg("send", q, rank, j) for q in nb[phase]]
        phase -= 1
        if not single:
            j += 1
            if j < lg:
                out += [seg("send", q, rank, j) for q in nb[phase]]
                phase -= 1
        j += 1
    return out + [("send", q, 0, n) for q in g["recvfrom"]]


@pytest.mark.parametrize("P", [1, 2, 3, 4, 5, 6, 7, 9, 10, 16, 17, 27, 30])
@pytest.mark.parametrize("k", [2, 3, 4, 5])
@pytest.mark.parametrize("n", [1, 7, 100])
def test_k_reduce_scatter_allgather_posts_mpichs_messages(P: int, k: int, n: int) -> None:
    for single in (0, 1):
        name = f"allreduce:k_reduce_scatter_allgather(k={k},single_phase_recv={single})"
        for rank in range(P):
            a = _program(name, P, rank, n)
            expect = _mpich_k_reduce_scatter_allgather(P, k, bool(single), n, rank)
            assert _messages_in_order(a) == expect, rank
        s = collkit.generate(name, P, n)
        for in_place in (False, True):
            r = collkit.verify(s, commutative=True, in_place=in_place)
            assert r.ok, r.summary()


def test_k_reduce_scatter_allgather_needs_a_commutative_op() -> None:
    algo = collkit.Algorithm("allreduce:k_reduce_scatter_allgather(k=3)")
    assert algo.spec["restrictions"]["commutative_op"]
    assert not collkit.verify(algo.generate(9, 9), commutative=False).ok


@pytest.mark.parametrize(("P", "k"), [(8, 2), (9, 3), (16, 4), (25, 5)])
def test_k_reduce_scatter_allgather_cost_at_a_power_of_k_is_a_ranks_sends(P: int, k: int) -> None:
    name = f"allreduce:k_reduce_scatter_allgather(k={k})"
    c = collkit.Algorithm(name).cost(P, 8 * P)
    for rank in range(P):
        a = _program(name, P, rank, P)
        sent = sum(int(a["len"][i]) for i in _messages(a, SEND))
        assert c["alpha"] == len(_messages(a, SEND)) and c["beta"] == 8 * sent == 2 * 8 * (P - 1)


def _mpich_rsb_recexch(P: int, k: int, n: int, rank: int) -> list[tuple]:
    """The messages of MPIR_TSP_Ireduce_scatter_block_sched_intra_recexch on `rank`, in order."""
    g = _mpich_recexch(P, k, rank)
    k, nb, lg = g["k"], g["nbrs"], g["lg"]
    if g["sendto"] >= 0:
        return [("send", g["sendto"], 0, P * n), ("recv", g["sendto"], 0, n)]
    out = [("recv", q, 0, P * n) for q in g["recvfrom"]]
    for phase in range(lg - 1, -1, -1):
        for dst in nb[phase]:
            cnt, off = _mpich_count_and_offset(dst, phase, k, P)
            mine, _ = _mpich_count_and_offset(rank, phase, k, P)
            out += [("send", dst, off * n, cnt * n), ("recv", dst, 0, mine * n)]
    return out + [("send", q, q * n, n) for q in g["recvfrom"]]


@pytest.mark.parametrize("P", [1, 2, 3, 4, 5, 6, 7, 9, 10, 16, 17, 27, 30])
@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_rsb_recexch_posts_mpichs_messages(P: int, k: int) -> None:
    name = f"reduce_scatter_block:recexch(k={k})"
    for rank in range(P):
        assert _messages_in_order(_program(name, P, rank, 2)) == _mpich_rsb_recexch(P, k, 2, rank)
    s = collkit.generate(name, P, 2)
    for in_place in (False, True):
        r = collkit.verify(s, commutative=True, in_place=in_place)
        assert r.ok, r.summary()


@pytest.mark.parametrize(("P", "k"), [(8, 2), (9, 3), (16, 4), (25, 5)])
def test_rsb_recexch_cost_at_a_power_of_k_is_a_ranks_sends(P: int, k: int) -> None:
    name = f"reduce_scatter_block:recexch(k={k})"
    c = collkit.Algorithm(name).cost(P, 8)
    for rank in range(P):
        a = _program(name, P, rank, 1)
        sent = sum(int(a["len"][i]) for i in _messages(a, SEND))
        assert c["alpha"] == len(_messages(a, SEND)) and c["beta"] == 8 * sent == 8 * (P - 1)


# ---- allreduce:tree (MPICH) ------------------------------------------------------------------


def _mpich_tree(kind: str, P: int, k: int, rank: int) -> tuple[int, list[int]]:
    """(parent, children) of MPII_Treeutil_tree_{kary,knomial_1,knomial_2}_init, root 0."""
    if kind == "kary":
        return (-1 if rank == 0 else (rank - 1) // k), [
            c for c in range(rank * k + 1, rank * k + k + 1) if c < P
        ]
    if kind == "knomial_1":
        maxstep, t = 0, P - 1
        while t:
            maxstep, t = maxstep + 1, t // k
        parent, current, running, step = -1, 0, 1, 0
        while rank != current:
            for _ in range(1, k):
                w = k ** (maxstep - step - 1)
                if running <= rank < running + w:
                    parent, current, running = current, running, running + 1
                    break
                running += w
            step += 1
        kids, crank = [], rank + 1
        for i in range(step, maxstep):
            for _ in range(1, k):
                if crank < P:
                    kids.append(crank)
                crank += k ** (maxstep - i - 1)
        return parent, kids
    depth, p = 1, k - 1  # tree_ilog(k, P - 1)
    while p - 1 < P - 1:
        depth, p = depth + 1, p * k

    def digit(x: int, i: int) -> int:
        return x // k**i % k

    parent = -1
    for i in range(depth if rank > 0 else 0):
        if digit(rank, i):
            parent = rank - digit(rank, i) * k**i
            break
    flip = []
    for j in range(depth):
        if digit(rank, j):
            break
        flip.append(j)
    kids = [rank + i * k**j for j in reversed(flip) for i in range(k - 1, 0, -1)]
    return parent, [c for c in kids if c < P]


def test_mpich_trees_by_hand() -> None:
    # knomial_1, k = 2, P = 8: the largest subtree first (0: [1, 5), [5, 7), [7]).
    assert _mpich_tree("knomial_1", 8, 2, 0) == (-1, [1, 5, 7])
    assert _mpich_tree("knomial_1", 8, 2, 1) == (0, [2, 4])
    assert _mpich_tree("knomial_1", 8, 2, 6) == (5, [])
    # knomial_2: the binomial tree, children from the largest down.
    assert _mpich_tree("knomial_2", 8, 2, 0) == (-1, [4, 2, 1])
    assert _mpich_tree("knomial_2", 8, 2, 6) == (4, [7])
    assert _mpich_tree("kary", 10, 3, 2) == (0, [7, 8, 9])


@pytest.mark.parametrize("P", [1, 2, 3, 5, 8, 9, 13, 16, 28])
@pytest.mark.parametrize("tree", ["knomial_1", "knomial_2", "kary"])
@pytest.mark.parametrize(("k", "seg", "n"), [(2, 0, 5), (3, 16, 5), (2, 8, 7), (5, 24, 20)])
def test_allreduce_tree_posts_mpichs_messages(P: int, tree: str, k: int, seg: int, n: int) -> None:
    name = f"allreduce:tree(k={k},tree={tree},seg={seg})"
    c = seg // 8
    # MPIR_Algo_calculate_pipeline_chunk_info: the remainder first, then whole chunks.
    if c < 1 or c >= n:
        pieces = [(0, n)]
    else:
        pieces = [(0, n % c or c)] + [(o, c) for o in range(n % c or c, n, c)]
    for rank in range(P):
        parent, kids = _mpich_tree(tree, P, k, rank)
        expect: list[tuple] = []
        for off, ln in pieces if P > 1 else []:
            expect += [("recv", q, off, ln) for q in kids]
            if parent >= 0:
                expect += [("send", parent, off, ln), ("recv", parent, off, ln)]
            expect += [("send", q, off, ln) for q in kids]
        assert _messages_in_order(_program(name, P, rank, n)) == expect, rank
    s = collkit.generate(name, P, n)
    r = collkit.verify(s, commutative=tree != "knomial_1")
    assert r.ok, r.summary()
    if tree == "knomial_1":
        assert r.consistent_noncommutative
        assert not collkit.Algorithm(name).needs_commutative()
    else:
        assert collkit.Algorithm(name).needs_commutative()


def test_allreduce_tree_of_nothing_sends_nothing() -> None:
    # MPICH's pipeline of count 0 has no chunks.
    for rank in range(5):
        assert _messages_in_order(_program("allreduce:tree", 5, rank, 0)) == []


def test_allreduce_tree_refuses_an_unknown_tree() -> None:
    for t in ("binomial", "", "KARY"):
        with pytest.raises(collkit.AlgorithmNameError, match="tree"):
            collkit.Algorithm(f"allreduce:tree(tree={t})")


# ---- allreduce:swing (De Sensi et al., NSDI 2024) --------------------------------------------


def _rho(j: int) -> int:
    return sum((-2) ** i for i in range(j + 1))


def _swing_peers(dims: list[int], rank: int, direct: bool = False) -> list[int]:
    """The paper's pi(r, s) on each dimension in turn (row-major ranks), as its library steps:
    lg d steps on a power of two, ceil(lg d) mod d on an even size (`direct`)."""
    strides = [math.prod(dims[i + 1 :]) for i in range(len(dims))]
    left = [(d - 1).bit_length() if direct else d.bit_length() - 1 for d in dims]
    taken, out = [0] * len(dims), []
    for s in range(sum(left)):
        t = s % len(dims)
        while taken[t] == left[t]:
            t = (t + 1) % len(dims)
        c = rank // strides[t] % dims[t]
        shift = _rho(taken[t]) if c % 2 == 0 else -_rho(taken[t])
        out.append(rank + ((c + shift) % dims[t] - c) * strides[t])
        taken[t] += 1
    return out


def test_swing_peers_are_the_papers() -> None:
    # 1D, 8 ranks: even ranks go +1, -1, +3; odd ones -1, +1, -3 (mod 8).
    assert _swing_peers([8], 0) == [1, 7, 3] and _swing_peers([8], 5) == [4, 6, 2]
    # 4x4: the row coordinate moves first, then the column, then the row again.
    assert _swing_peers([4, 4], 0) == [4, 1, 12, 3]


@pytest.mark.parametrize("dims", [[2], [8], [32], [2, 2], [4, 4], [8, 4], [2, 16], [4, 2, 2]])
def test_swing_sends_to_the_papers_peers_halving_then_doubling(dims: list[int]) -> None:
    P = math.prod(dims)
    name = (
        f"allreduce:swing(dims={'x'.join(map(str, dims))})" if len(dims) > 1 else "allreduce:swing"
    )
    L = P.bit_length() - 1
    for rank in range(P):
        a = _program(name, P, rank, P)  # one element per block
        peers = _swing_peers(dims, rank)
        order = peers + peers[::-1]
        assert _peers(a, SEND) == order and _peers(a, RECV) == order, rank
        # Reduce-scatter step s moves 2^(L-1-s) blocks; the allgather the same in reverse.
        sizes = [1 << (L - 1 - s) for s in range(L)]
        assert [int(a["len"][i]) for i in _messages(a, SEND)] == sizes + sizes[::-1]
    s = collkit.generate(name, P, 3 * P + 1)
    for in_place in (False, True):
        r = collkit.verify(s, commutative=True, in_place=in_place)
        assert r.ok, r.summary()


def test_swing_hops_are_shorter_than_recursive_doublings() -> None:
    # On a ring of 64, Swing's peers are at |rho(s)| = 1, 1, 3, 5, 11, 21: 42 hops in all, not
    # recursive doubling's 1 + 2 + ... + 32 = 63.
    hops = [min(q, 64 - q) for q in _swing_peers([64], 0)]
    assert sum(hops) == 42
    for rank in range(64):
        got = _peers(_program("allreduce:swing", 64, rank, 64), SEND)[:6]
        assert [min((q - rank) % 64, (rank - q) % 64) for q in got] == hops


@pytest.mark.parametrize("dims", ["0", "x", "8x", "axb", "4x0", "2x2x2x2x2x2x2x2x2"])
@pytest.mark.parametrize("form", ["swing", "swing_lat"])
def test_swing_refuses_bad_dims_by_name(form: str, dims: str) -> None:
    with pytest.raises(collkit.AlgorithmNameError, match="dims"):
        collkit.Algorithm(f"allreduce:{form}(dims={dims})")


@pytest.mark.parametrize(("dims", "P"), [("4x4", 8), ("4x4", 32), ("3x5", 16)])
@pytest.mark.parametrize("form", ["swing", "swing_lat"])
def test_swing_refuses_a_torus_that_is_not_P(form: str, dims: str, P: int) -> None:
    with pytest.raises(collkit.UnsupportedError, match=r"dims"):
        collkit.Algorithm(f"allreduce:{form}(dims={dims})").generate(P, 4)


# Powers of two, primes, awkward composites; tori of powers of two and of other sizes.
SWING_SHAPES = [
    *[("P", P) for P in (1, 2, 3, 5, 6, 7, 8, 12, 13, 16, 24, 31, 33, 48, 63, 64)],
    *[(d, math.prod(map(int, d.split("x")))) for d in ("4x4", "8x4", "3x3", "3x5", "6x4", "5x7")],
    *[(d, math.prod(map(int, d.split("x")))) for d in ("2x3x4", "3x3x3", "1x5", "7x1x2")],
]


def _swing_name(form: str, dims: str) -> str:
    """allreduce:swing, allreduce:swing(nonpof2=direct), allreduce:swing_lat, with dims."""
    base, _, params = form.partition("(")
    args = [p for p in (params.rstrip(")"), f"dims={dims}" if dims != "P" else "") if p]
    return f"allreduce:{base}" + (f"({','.join(args)})" if args else "")


SWING_FORMS = ["swing", "swing(nonpof2=direct)", "swing_lat"]


@pytest.mark.parametrize(("dims", "P"), SWING_SHAPES)
@pytest.mark.parametrize("form", SWING_FORMS)
def test_swing_is_verified_on_any_P_and_torus(form: str, dims: str, P: int) -> None:
    name = _swing_name(form, dims)
    exact = form == "swing_lat"
    for count in (0, 1, 5, 2 * P + 3):
        s = collkit.generate(name, P, count)
        for in_place in (False, True):
            r = collkit.verify(s, commutative=True, in_place=in_place, exact=exact)
            assert r.ok, f"{name} P={P} count={count}: " + r.summary()


@pytest.mark.parametrize("dims", ["P", "4x4", "8x2", "2x2x4"])
def test_swing_direct_is_swing_on_powers_of_two(dims: str) -> None:
    P = 64 if dims == "P" else math.prod(map(int, dims.split("x")))
    fold, direct = (_swing_name(f, dims) for f in ("swing", "swing(nonpof2=direct)"))
    for rank in range(P):
        a, b = _program(fold, P, rank, 3 * P + 1), _program(direct, P, rank, 3 * P + 1)
        assert _messages_in_order(a) == _messages_in_order(b), rank


@pytest.mark.parametrize("dims", [[6], [10], [12], [24], [48], [96], [6, 4], [6, 6], [2, 10]])
def test_swing_direct_on_even_sizes_sends_each_block_once_to_the_papers_peers(
    dims: list[int],
) -> None:
    # No rank folds away: ceil(lg d) steps per dimension to pi(r, s) mod d, the reduce-scatter
    # then the allgather in reverse; a block goes only where it is not yet, so each rank sends
    # P - 1 blocks in the reduce-scatter and receives P - 1 in the allgather (one element a
    # block: (P-1)/P of the vector each way, the bandwidth-optimal volume).
    P = math.prod(dims)
    name = _swing_name("swing(nonpof2=direct)", "x".join(map(str, dims)) if len(dims) > 1 else "P")
    L = sum((d - 1).bit_length() for d in dims)
    for rank in range(P):
        a = _program(name, P, rank, P)
        peers = _swing_peers(dims, rank, direct=True)
        assert len(peers) == L
        assert _peers(a, SEND) == peers + peers[::-1] == _peers(a, RECV), rank
        sent = [int(a["len"][i]) for i in _messages(a, SEND)]
        got = [int(a["len"][i]) for i in _messages(a, RECV)]
        assert sum(sent[:L]) == sum(got[L:]) == P - 1, rank
        assert sent[:L] == got[L:][::-1] and got[:L] == sent[L:][::-1], rank


@pytest.mark.parametrize("P", [3, 5, 7, 13, 31])
def test_swing_direct_folds_one_pair_of_an_odd_ring(P: int) -> None:
    # Ranks 0 and 1 pair up (0 folds into 1 and gets the result back); the other P - 1 run the
    # even ring's ceil(lg (P-1)) steps.
    name = "allreduce:swing(nonpof2=direct)"
    a = _program(name, P, 0, 4)
    assert _peers(a, SEND) == [1] == _peers(a, RECV)
    L = (P - 2).bit_length()
    for rank in range(1, P):
        a = _program(name, P, rank, P - 1)
        folds = 1 if rank == 1 else 0  # rank 1: the fold's receive, the unfold's send
        assert len(_peers(a, SEND)) == len(_peers(a, RECV)) == 2 * L + folds, rank


def test_swing_refuses_an_unknown_nonpof2_by_name() -> None:
    for v in ("", "FOLD", "elim", "even"):
        with pytest.raises(collkit.AlgorithmNameError, match="nonpof2"):
            collkit.Algorithm(f"allreduce:swing(nonpof2={v})")


def _fold_pairs(d: int) -> list[tuple[int, int]]:
    """The fold of d coordinates onto a power of two: (folded away, kept) pairs, MPICH's."""
    rem = d - (1 << (d.bit_length() - 1))
    return [(2 * v, 2 * v + 1) for v in range(rem)]


@pytest.mark.parametrize(("dims", "P"), [("P", 12), ("3x5", 15), ("6x4", 24), ("2x3x4", 24)])
def test_swing_folds_each_dimension_one_hop(dims: str, P: int) -> None:
    # A rank folded away in dimension t sends its vector to its neighbour there and gets the
    # result back from it; before (and after) it, it folds in (and out) only its own partners
    # of earlier dimensions: one hop each, none of the swing steps.
    sizes = [P] if dims == "P" else [int(x) for x in dims.split("x")]
    strides = [math.prod(sizes[i + 1 :]) for i in range(len(sizes))]
    name = "allreduce:swing_lat" + (f"(dims={dims})" if dims != "P" else "")
    away = set()
    for rank in range(P):
        coords = [rank // strides[t] % sizes[t] for t in range(len(sizes))]
        for t, d in enumerate(sizes):
            if any(coords[t] == a for a, _ in _fold_pairs(d)):
                away.add(rank)
                a = _program(name, P, rank, 4)
                q = rank + strides[t]
                assert _peers(a, SEND)[0] == q and _peers(a, RECV)[-1] == q, rank
                assert len(_peers(a, SEND)) == len(_peers(a, RECV)) <= t + 1
                assert all(abs(p - rank) in strides for p in _peers(a, SEND)), rank
                break
    V = math.prod(1 << (d.bit_length() - 1) for d in sizes)
    assert len(away) == P - V
    for rank in set(range(P)) - away:
        a = _program(name, P, rank, 4)
        # lg V swing steps, plus the folds it takes in and hands back
        assert len(_peers(a, SEND)) >= (V.bit_length() - 1)


@pytest.mark.parametrize("P", [8, 16, 64])
def test_swing_lat_sends_the_whole_vector_to_the_swing_peers(P: int) -> None:
    for rank in range(P):
        a = _program("allreduce:swing_lat", P, rank, 10)
        assert _peers(a, SEND) == _swing_peers([P], rank) == _peers(a, RECV)
        assert [int(a["len"][i]) for i in _messages(a, SEND)] == [10] * (P.bit_length() - 1)


def test_swing_lat_needs_an_op_exact_under_any_grouping() -> None:
    # Its ranks combine different groupings (rank 0 of 8: {0,1} with {6,7}; rank 1: {0,1} with
    # {2,3}): consistent only for an op whose result does not depend on the grouping.
    algo = collkit.Algorithm("allreduce:swing_lat")
    assert algo.needs_exact and not collkit.Algorithm("allreduce:swing").needs_exact
    s = algo.generate(8, 3)
    r = collkit.verify(s, commutative=True)
    assert not r.ok and "inconsistent_tree" in r.summary()
    assert collkit.verify(s, commutative=True, exact=True).ok
    assert "exact" in algo.refusal(8, 3)
    assert algo.refusal(8, 3, exact=True) == ""
    assert collkit.Algorithm("allreduce:swing").refusal(8, 3) == ""


@pytest.mark.parametrize(("dims", "P"), [("P", 12), ("3x5", 15), ("8x8", 64)])
def test_swing_costs_count_the_fold(dims: str, P: int) -> None:
    sizes = [P] if dims == "P" else [int(x) for x in dims.split("x")]
    V = math.prod(1 << (d.bit_length() - 1) for d in sizes)
    f = sum(d & (d - 1) != 0 for d in sizes)
    L = V.bit_length() - 1
    suffix = f"(dims={dims})" if dims != "P" else ""
    lat = collkit.Algorithm("allreduce:swing_lat" + suffix).cost(P, 800)
    assert lat["alpha"] == L + 2 * f and lat["beta"] == (L + 2 * f) * 800
    bw = collkit.Algorithm("allreduce:swing" + suffix).cost(P, 800)
    assert bw["alpha"] == 2 * L + 2 * f
    assert bw["gamma"] == pytest.approx((V - 1) / V * 800 + f * 800)


def test_swing_beats_rabenseifner_on_a_congested_torus() -> None:
    # The paper's point, in the simulator: the same bytes as Rabenseifner's halving and doubling,
    # over shorter paths, so less link sharing on an 8x8 torus (1 MiB, links of 10 GB/s).
    torus = "torus(dims=8x8,hop=50ns,link=0.1ns)"
    t = {
        a: collkit.simulate(a, 64, count=1 << 17, topology=torus).makespan
        for a in ("allreduce:swing(dims=8x8)", "allreduce:rabenseifner")
    }
    assert t["allreduce:swing(dims=8x8)"] < 0.75 * t["allreduce:rabenseifner"], t


# ---- the new parameters take any text: a name, or a clear error -----------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(
        [
            "allreduce:swing(dims={})",
            "allreduce:swing_lat(dims={})",
            "allreduce:tree(tree={})",
            "allreduce:tree(k={})",
            "allreduce:recexch(k={})",
            "barrier:recexch(single_phase_recv={})",
            "allgather:recexch_halving(k={})",
            "allreduce:k_reduce_scatter_allgather(single_phase_recv={})",
        ]
    ),
    value=st.one_of(
        st.text(max_size=12),
        st.from_regex(r"[0-9x]{0,12}", fullmatch=True),
        st.integers(-(2**70), 2**70).map(str),
    ),
    P=st.integers(1, 40),
)
def test_new_parameters_parse_or_fail_clearly(name: str, value: str, P: int) -> None:
    try:
        algo = collkit.Algorithm(name.format(value))
    except collkit.AlgorithmNameError:
        return
    try:
        s = algo.generate(P, 3)
    except CollkitError as e:
        assert str(e)
        return
    assert s.P == P


# ---- bcast:scatter_rd_allgather (MPICH) ------------------------------------------------------


def _mpich_scatter_rd_bcast(P: int, n: int) -> list[list[tuple[str, int, int, int]]]:
    """(kind, peer position, offset, length) of every message of every position, in program
    order, as MPICH's MPII_Scatter_for_bcast + MPIR_Bcast_intra_scatter_recursive_doubling_allgather
    post them (1-byte elements). A receive's length is what its sender sent (MPIR_Get_count); a
    zero-length message's offset is taken as min(offset, n)."""
    out: list[list[tuple[str, int, int, int]]] = [[] for _ in range(P)]
    if n == 0 or P == 1:
        return out
    s = -(-n // P)  # scatter_size
    sent: dict[tuple[int, int], int] = {}  # (from, to): bytes, scatter
    for v in range(P):  # a parent (v - mask) comes before its children
        c = n if v == 0 else 0
        mask = 1
        while mask < P:
            if v & mask:
                if n - v * s > 0:
                    c = sent[(v - mask, v)]
                    out[v].append(("recv", v - mask, v * s, c))
                break
            mask <<= 1
        mask >>= 1
        while mask > 0:
            if v + mask < P and c - s * mask > 0:
                sent[(v, v + mask)] = c - s * mask
                out[v].append(("send", v + mask, s * (v + mask), c - s * mask))
                c = s * mask
            mask >>= 1
    curr = [max(0, min(s, n - v * s)) for v in range(P)]
    recv_size = [0] * P
    mask, i = 1, 0
    while mask < P:
        start = list(curr)  # the exchange is a Sendrecv: both send what they held before it
        for v in range(P):
            dst = v ^ mask
            if dst < P:
                out[v].append(("send", dst, min(n, (v >> i << i) * s), start[v]))
                out[v].append(("recv", dst, min(n, (dst >> i << i) * s), start[dst]))
                recv_size[v] = start[dst]
                curr[v] += start[dst]
        m, k = mask >> 1, i
        while m:  # the fix-up, one level of the halving tree at a time
            gives: dict[tuple[int, int], int] = {}
            for v in range(P):
                dst_root, my_root = (v ^ mask) >> i << i, v >> i << i
                done = P - my_root - mask
                if dst_root + mask <= P:
                    continue
                peer, tree_root = v ^ m, v >> k << k
                if peer > v and v < tree_root + done and peer >= tree_root + done:
                    gives[(v, peer)] = recv_size[v]
                    out[v].append(("send", peer, min(n, s * (my_root + mask)), recv_size[v]))
            for v in range(P):
                dst_root, my_root = (v ^ mask) >> i << i, v >> i << i
                done = P - my_root - mask
                if dst_root + mask <= P:
                    continue
                peer, tree_root = v ^ m, v >> k << k
                if peer < v and peer < tree_root + done and v >= tree_root + done:
                    recv_size[v] = gives[(peer, v)]
                    out[v].append(("recv", peer, min(n, s * (my_root + mask)), recv_size[v]))
                    curr[v] += recv_size[v]
            m >>= 1
            k -= 1
        mask <<= 1
        i += 1
    assert curr == [n] * P  # MPICH's MPIR_ERR_COLL_CHECK_SIZE
    return out


@pytest.mark.parametrize("P", range(1, 31))
def test_scatter_rd_allgather_posts_mpichs_messages(P: int) -> None:
    # Open MPI's ompi_coll_base_bcast_intra_scatter_allgather posts the same for n >= P; for
    # n < P it runs a linear bcast (why it is not named an equivalent).
    for n in (0, 1, 5, P, 2 * P + 3, 100):
        want = _mpich_scatter_rd_bcast(P, n)
        for root in sorted({0, P - 1}):
            for rank in range(P):
                v = (rank - root) % P
                a = dict(
                    collkit.Algorithm("bcast:scatter_rd_allgather")
                    .generate_rank(P, rank, n, 1, root)
                    .arrays()
                )
                got = [(k, (p - root) % P, o, ln) for k, p, o, ln in _messages_in_order(a)]
                assert got == want[v], (P, n, root, v)


@pytest.mark.parametrize("P", [2, 3, 4, 5, 6, 7, 8, 12, 16, 23, 32])
def test_scatter_rd_allgather_cost_is_the_postal_critical_path(P: int) -> None:
    # count P: one element a block, every message of the port above is sent.
    c = collkit.Algorithm("bcast:scatter_rd_allgather").cost(P, P)
    t = collkit.simulate("bcast:scatter_rd_allgather", P, count=P, elem_size=1, alpha="1us")
    lg = (P - 1).bit_length()
    assert c["alpha"] == 2 * lg
    assert c["beta"] == pytest.approx(2 * (P - 1))
    if P & (P - 1) == 0:
        assert t.makespan == pytest.approx(c["alpha"] * 1000)  # ns
    else:  # the fix-up steps lengthen the path; the model leaves them out
        assert t.makespan > c["alpha"] * 1000
