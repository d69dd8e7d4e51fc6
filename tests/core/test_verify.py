"""The verifier: proves allreduce:rd over a sweep of P, and diagnoses deliberately broken
schedules (built by editing correct ones) with the right kind of problem, rank and op."""

from __future__ import annotations

import pytest

import collkit
from builder import KIND, Ops, RankWriter, empty
from conftest import EVERY_P, LARGE_P

SWEEP_P = EVERY_P
SAMPLED_P = LARGE_P


def rd(P: int, count: int = 2) -> Ops:
    return Ops.of(collkit.generate("allreduce:rd", P, count))


@pytest.mark.parametrize("P", SWEEP_P)
def test_rd_verified_every_P_up_to_256(P: int) -> None:
    for count in (0, 1, 3):
        r = collkit.verify_algorithm("allreduce:rd", P, count, commutative=False)
        assert r.ok, r.summary()
        # Rank order is kept: the same result for non-commutative ops.
        assert r.consistent_noncommutative and r.consistent_commutative


@pytest.mark.parametrize("P", SAMPLED_P)
def test_rd_verified_sampled_P_up_to_10k(P: int) -> None:
    r = collkit.verify_algorithm("allreduce:rd", P, 1, commutative=False)
    assert r.ok, r.summary()
    pof2 = 1 << (P.bit_length() - 1)
    stages = pof2.bit_length() - 1
    rem = P - pof2
    # Every active rank sends once per stage, plus one collapse and one expand message per pair.
    assert r.messages == pof2 * stages + 2 * rem


def test_rd_tree_is_seed_001s_for_13_ranks() -> None:
    # Seed 001: for 13 ranks the tree must be {[(a+b)+(c+d)]+[(e+f)+(g+h)]}+{[(i+j)+k]+[l+m]}.
    s = collkit.generate("allreduce:rd", 13, 1)
    bad = Ops.of(s)
    # Flip every reduction on rank 12 to dst-first: the tree no longer matches the other ranks'.
    for o in bad.ranks[12]:
        if o["kind"] == KIND["reduce"]:
            o["side"] ^= 1
    r = collkit.verify(bad.build(), commutative=False)
    assert not r.ok and "inconsistent_tree" in r.kinds
    msg = next(d.message for d in r.diagnostics if d.kind == "inconsistent_tree")
    assert "((((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)))+(((r8+r9)+r10)+(r11+r12)))" in msg


def test_wrong_peer_is_an_unmatched_message() -> None:
    ops = rd(8)
    i = ops.find(0, "send")
    assert ops.ranks[0][i]["peer"] == 1
    ops.ranks[0][i]["peer"] = 3  # rank 0 talks to 1 in the first stage, not 3
    r = collkit.verify(ops.build())
    assert not r.ok
    assert {"unmatched_send", "unmatched_recv"} & r.kinds
    assert any(d.rank == 0 and "to rank 3" in d.message for d in r.diagnostics) or any(
        d.rank == 1 and "from rank 0" in d.message for d in r.diagnostics
    ), r.summary()


def test_missing_receive() -> None:
    ops = rd(4)
    i = ops.find(2, "recv")
    ops.ranks[2][i].update(kind=KIND["compute"], len=0, peer=-1)
    r = collkit.verify(ops.build())
    assert not r.ok
    d = next(d for d in r.diagnostics if d.kind == "unmatched_send")
    assert d.rank == 3 and "message to rank 2 has no matching receive" in d.message
    assert "rank 2 posts" in d.message


def test_size_mismatch() -> None:
    ops = rd(4, count=3)
    i = ops.find(1, "recv")
    ops.ranks[1][i]["len"] = 2
    r = collkit.verify(ops.build())
    assert "size_mismatch" in r.kinds
    msg = r.diagnostics[0].message
    assert "sends 3 elements" in msg and "expects 2" in msg


def test_inconsistent_order_is_fine_only_for_commutative_ops() -> None:
    ops = rd(4)
    i = ops.find(3, "reduce")
    ops.ranks[3][i]["side"] ^= 1  # rank 3 swaps the operands of its first reduction
    s = ops.build()
    assert collkit.verify(s, commutative=True).ok
    r = collkit.verify(s, commutative=False)
    assert not r.ok and "inconsistent_tree" in r.kinds
    assert "differ only by swapped operands" in r.diagnostics[0].message
    assert r.consistent_commutative and not r.consistent_noncommutative


def test_inconsistent_association_fails_even_for_commutative_ops() -> None:
    # P = 3 by hand: everyone gathers the others' values, then rank 0 computes (a+b)+c and
    # ranks 1, 2 compute a+(b+c): same operands, different trees.
    ops = empty("allreduce", 3, 1)
    for me in range(3):
        w = RankWriter(ops, me)
        others = [q for q in range(3) if q != me]
        cp = w.copy("out", 0, "in", 0, 1)
        sc = {q: w.scratch(1) for q in others}
        sends = [w.send(q, "in", 0, 1) for q in others]
        recvs = {q: w.recv(q, sc[q], 0, 1) for q in others}
        if me == 0:  # (r0 + r1) + r2
            a = w.reduce("out", 0, sc[1], 0, 1, src_first=False, deps=[cp, recvs[1]])
            w.reduce("out", 0, sc[2], 0, 1, src_first=False, deps=[a, recvs[2], *sends])
        elif me == 1:  # r0 + (r1 + r2)
            a = w.reduce("out", 0, sc[2], 0, 1, src_first=False, deps=[cp, recvs[2]])
            w.reduce("out", 0, sc[0], 0, 1, src_first=True, deps=[a, recvs[0], *sends])
        else:  # r0 + (r1 + r2), built from rank 2's side
            a = w.reduce("out", 0, sc[1], 0, 1, src_first=True, deps=[cp, recvs[1]])
            w.reduce("out", 0, sc[0], 0, 1, src_first=True, deps=[a, recvs[0], *sends])
    r = collkit.verify(ops.build(), commutative=True)
    assert not r.ok and "inconsistent_tree" in r.kinds
    assert "((r0+r1)+r2)" in r.diagnostics[0].message and "(r0+(r1+r2))" in r.diagnostics[0].message


def test_out_of_rank_order_needs_commutativity() -> None:
    # Every rank computes (r0 + r2) + r1: the same tree everywhere, but not in rank order.
    ops = empty("allreduce", 3, 1)
    for me in range(3):
        w = RankWriter(ops, me)
        sc = [w.scratch(1) for _ in range(3)]
        sends = [w.send(q, "in", 0, 1) for q in range(3) if q != me]
        got = {q: w.recv(q, sc[q], 0, 1) for q in range(3) if q != me}
        c = w.copy(sc[me], 0, "in", 0, 1)
        got[me] = c
        a = w.reduce(sc[0], 0, sc[2], 0, 1, src_first=False, deps=[got[0], got[2], *sends])
        b = w.reduce(sc[0], 0, sc[1], 0, 1, src_first=False, deps=[a, got[1]])
        w.copy("out", 0, sc[0], 0, 1, deps=[b])
    s = ops.build()
    assert collkit.verify(s, commutative=True).ok
    r = collkit.verify(s, commutative=False)
    assert not r.ok and "needs_commutativity" in r.kinds
    assert "needs a commutative op" in r.diagnostics[0].message


def test_dependency_cycle() -> None:
    ops = rd(4)
    s_i, red = ops.find(1, "send"), ops.find(1, "reduce")
    ops.ranks[1][s_i]["deps"].append(red)  # the send waits on the reduce that waits on it
    r = collkit.verify(ops.build())
    assert r.kinds == {"dep_cycle"}
    d = r.diagnostics[0]
    assert d.rank == 1 and "dependency cycle" in d.message
    assert f"op {s_i}" in d.message and f"op {red}" in d.message


def test_overwritten_while_in_flight() -> None:
    ops = rd(4)
    s_i, red = ops.find(2, "send"), ops.find(2, "reduce")
    ops.ranks[2][red]["deps"].remove(s_i)  # reduce into `out` no longer waits for the send
    r = collkit.verify(ops.build())
    assert r.kinds == {"hazard"}
    assert all(d.rank == 2 for d in r.diagnostics)
    assert any(
        f"op {red} (reduce out[0:2] with s0[0:2]) may overwrite out[0:2] while the message sent"
        f" from it by op {s_i} (send out[0:2] to 3) is in flight" in d.message
        for d in r.diagnostics
    ), r.summary()


def test_read_before_receive_completes() -> None:
    ops = rd(4)
    rv, red = ops.find(0, "recv"), ops.find(0, "reduce")
    ops.ranks[0][red]["deps"].remove(rv)
    r = collkit.verify(ops.build())
    assert "hazard" in r.kinds
    assert any(
        "may read s0[0:2] while the message received into it" in d.message for d in r.diagnostics
    ), r.summary()


def test_deadlock_shows_the_cycle() -> None:
    # Each rank of a pair sends only after its receive completed: a cycle of waits.
    ops = rd(2)
    for me in (0, 1):
        s_i, rv = ops.find(me, "send"), ops.find(me, "recv")
        ops.ranks[me][s_i]["deps"].append(rv)
    r = collkit.verify(ops.build())
    assert r.kinds == {"deadlock"}
    msg = r.diagnostics[0].message
    assert "rank 0" in msg and "rank 1" in msg and "cycle" in msg


def test_relying_on_eager_sends_is_a_deadlock() -> None:
    # Both ranks receive only after their send completed: fine with eager buffering, a deadlock
    # under rendezvous, which MPI may use for any message size.
    ops = rd(2)
    for me in (0, 1):
        s_i, rv = ops.find(me, "send"), ops.find(me, "recv")
        ops.ranks[me][rv]["deps"].append(s_i)
    assert collkit.verify(ops.build()).kinds == {"deadlock"}


def test_structural_errors() -> None:
    ops = rd(4)
    ops.ranks[0][ops.find(0, "send")]["peer"] = 9
    ops.ranks[1][ops.find(1, "recv")]["len"] = 99
    ops.ranks[2][ops.find(2, "reduce")]["buf"] = 0  # writes `in`
    ops.ranks[3][ops.find(3, "reduce")]["deps"].append(1000)
    r = collkit.verify(ops.build())
    assert r.kinds == {"bad_op"}
    text = r.summary()
    assert "peer 9 is not a rank of P = 4" in text
    assert "is outside" in text
    assert "read-only" in text
    assert "does not exist" in text


def test_uninitialized_scratch() -> None:
    ops = rd(2)
    red = ops.find(0, "reduce")
    ops.scratch[0].append(2)  # a second scratch buffer that nothing writes
    ops.ranks[0][red]["src"] = 3  # s1
    r = collkit.verify(ops.build())
    assert "uninitialized" in r.kinds
    d = next(d for d in r.diagnostics if d.kind == "uninitialized")
    assert d.rank == 0 and d.op == red and "reduces data that nothing wrote" in d.message


# ---- the same machinery serves bcast, reduce, alltoall and barrier ------------------------


def linear_bcast(P: int, n: int, root: int) -> Ops:
    ops = empty("bcast", P, n, root)
    for me in range(P):
        w = RankWriter(ops, me)
        if me == root:
            for q in range(P):
                if q != root:
                    w.send(q, "out", 0, n)
        else:
            w.recv(root, "out", 0, n)
    return ops


def linear_reduce(P: int, n: int, root: int) -> Ops:
    ops = empty("reduce", P, n, root)
    for me in range(P):
        w = RankWriter(ops, me)
        if me != root:
            w.send(root, "in", 0, n)
            continue
        sc = w.scratch(n * P)
        got = {q: w.recv(q, sc, q * n, n) for q in range(P) if q != me}
        got[me] = w.copy(sc, me * n, "in", 0, n)
        last = w.copy("out", 0, sc, 0, n, deps=[got[0]])
        for q in range(1, P):
            last = w.reduce("out", 0, sc, q * n, n, src_first=False, deps=[last, got[q]])
    return ops


def linear_alltoall(P: int, n: int) -> Ops:
    ops = empty("alltoall", P, n)
    for me in range(P):
        w = RankWriter(ops, me)
        w.copy("out", me * n, "in", me * n, n)
        for k in range(1, P):
            to, frm = (me + k) % P, (me - k) % P
            w.send(to, "in", to * n, n)
            w.recv(frm, "out", frm * n, n)
    return ops


def linear_barrier(P: int) -> Ops:
    ops = empty("barrier", P, 0)
    for me in range(P):
        w = RankWriter(ops, me)
        if me == 0:
            got = [w.recv(q, "out", 0, 0) for q in range(1, P)]
            for q in range(1, P):
                w.send(q, "out", 0, 0, deps=got)
        else:
            s = w.send(0, "out", 0, 0)
            w.recv(0, "out", 0, 0, deps=[s])
    return ops


@pytest.mark.parametrize("P", [1, 2, 3, 5, 8])
def test_other_collectives_by_hand(P: int) -> None:
    for root in {0, P - 1}:
        assert collkit.verify(linear_bcast(P, 3, root).build()).ok
        r = collkit.verify(linear_reduce(P, 3, root).build(), commutative=False)
        assert r.ok, r.summary()
    assert collkit.verify(linear_alltoall(P, 2).build()).ok
    assert collkit.verify(linear_barrier(P).build()).ok


def test_bcast_from_the_wrong_root() -> None:
    ops = linear_bcast(4, 2, root=1)
    ops.root = 2  # the schedule still sends rank 1's buffer
    r = collkit.verify(ops.build())
    assert not r.ok
    assert {"uninitialized", "wrong_result"} & r.kinds


def test_alltoall_misplaced_block() -> None:
    ops = linear_alltoall(4, 1)
    rv = ops.find(2, "recv", 0)
    ops.ranks[2][rv]["off"] = (ops.ranks[2][rv]["off"] + 1) % 4
    r = collkit.verify(ops.build())
    assert not r.ok
    assert "wrong_result" in r.kinds or "hazard" in r.kinds


def test_barrier_that_does_not_wait() -> None:
    ops = linear_barrier(4)
    # Rank 0 releases rank 3 before hearing from everyone.
    send_to_3 = next(i for i, o in enumerate(ops.ranks[0]) if o["kind"] == 0 and o["peer"] == 3)
    ops.ranks[0][send_to_3]["deps"] = []
    r = collkit.verify(ops.build())
    assert r.kinds == {"wrong_result"}
    assert "rank 3 can leave before hearing from" in r.diagnostics[0].message


def test_reduce_missing_a_contribution() -> None:
    ops = linear_reduce(4, 1, root=0)
    last = len(ops.ranks[0]) - 1
    ops.ranks[0][last].update(kind=KIND["compute"], len=0)  # drop the last rank's contribution
    r = collkit.verify(ops.build())
    assert "wrong_result" in r.kinds
    assert "missing r3" in r.diagnostics[0].message


def test_verify_rejects_partial_schedule_and_bad_arguments() -> None:
    with pytest.raises(ValueError):
        collkit.verify(collkit.generate("allreduce:rd", 4, 1), max_diagnostics=-1)
    r = collkit.verify_algorithm("allreduce:rd", 3, 1)
    with pytest.raises(collkit.VerificationError):
        ops = Ops.of(collkit.generate("allreduce:rd", 3, 1))
        ops.ranks[0][ops.find(0, "send")]["peer"] = 2
        collkit.verify(ops.build()).raise_if_failed()
    assert r.raise_if_failed() is r


def test_compare_trees_same_and_different() -> None:
    a = collkit.generate("allreduce:rd", 13, 3)
    assert collkit.compare_trees(a, a).same_exact
    ops = Ops.of(a)
    for o in ops.ranks[12]:
        if o["kind"] == KIND["reduce"]:
            o["side"] ^= 1
    swapped = ops.build()
    c = collkit.compare_trees(a, swapped) if collkit.verify(swapped).ok else None
    assert c is not None
    assert not c.same_exact and c.same_commutative
    assert "element 0" in c.difference and "(r12+r11)" in c.difference
    with pytest.raises(collkit.InvalidArgumentError):
        collkit.compare_trees(a, collkit.generate("allreduce:rd", 12, 3))


def test_in_place_catches_a_schedule_that_relies_on_separate_buffers() -> None:
    # Each rank sends its input straight from `in` and reduces into `out` without waiting for the
    # send: fine with separate buffers, a hazard under MPI_IN_PLACE, where `in` is `out`.
    ops = empty("allreduce", 2, 3)
    for me in range(2):
        w = RankWriter(ops, me)
        s0 = w.scratch(3)
        w.send(1 - me, "in", 0, 3)
        rv = w.recv(1 - me, s0, 0, 3)
        cp = w.copy("out", 0, "in", 0, 3)
        w.reduce("out", 0, s0, 0, 3, src_first=me == 1, deps=[cp, rv])
    s = ops.build()
    assert collkit.verify(s, commutative=False).ok
    r = collkit.verify(s, in_place=True)
    assert not r.ok and "hazard" in r.kinds
    assert "may overwrite out[0:3] while the message sent from it" in r.diagnostics[0].message


def test_an_exact_op_takes_any_tree_but_not_a_wrong_result() -> None:
    # Swing's latency-optimal form: rank 0 of 8 combines {0,1} with {6,7}, rank 1 {0,1} with
    # {2,3}: different trees, right for an integer sum, refused for a floating-point one.
    s = collkit.generate("allreduce:swing_lat", 8, 2)
    assert not collkit.verify(s, commutative=True).ok
    r = collkit.verify(s, commutative=True, exact=True)
    assert r.ok and not r.consistent_commutative
    # exact=True still wants every rank's input once: a rank that keeps its own input is wrong.
    ops = empty("allreduce", 2, 1)
    for me in range(2):
        w = RankWriter(ops, me)
        w.copy("out", 0, "in", 0, 1)
    r = collkit.verify(ops.build(), exact=True)
    assert not r.ok and "wrong_result" in r.kinds


def test_every_reduction_algorithm_is_in_place_safe() -> None:
    for spec in collkit.algorithms():
        if spec["collective"] not in ("allreduce", "reduce") or spec["name"].endswith(":rm"):
            continue
        algo = collkit.Algorithm(spec["name"])
        for P in (1, 2, 3, 5, 8, 13):
            for root in {0, P - 1} if algo.collective == "reduce" else {0}:
                try:
                    s = algo.generate(P, 5, 8, root)
                except collkit.UnsupportedError:
                    continue
                r = collkit.verify(s, in_place=True, exact=algo.needs_exact)
                assert r.ok, r.summary()
    with pytest.raises(collkit.InvalidArgumentError, match="in-place check applies"):
        collkit.verify(collkit.generate("bcast:binomial", 4, 1), in_place=True)
