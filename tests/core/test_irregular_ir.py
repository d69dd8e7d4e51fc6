"""The IR of the irregular collectives: count vectors and displacements in the header (every
format round-trips them), buffer sizes from them, and the prefix postcondition of scan and
exscan, proven on schedules written op by op (no generator involved)."""

from __future__ import annotations

import pytest

import collkit
from builder import Ops, RankWriter, empty


def chain_scan(P: int, n: int, exclusive: bool = False, extra: bool = False) -> Ops:
    """A linear scan (exscan) written by hand: rank r receives ranks 0..r-1's prefix from r - 1,
    adds its own input after it and passes the sum on. `extra`: rank 1 adds rank 2's input too
    (a prefix that includes rank r + 1)."""
    ops = empty("exscan" if exclusive else "scan", P, n)
    for r in range(P):
        w = RankWriter(ops, r)
        if r == 0:
            if exclusive:
                w.send(1, "in", 0, n) if P > 1 else None
            else:
                c = w.copy("out", 0, "in", 0, n)
                if P > 1:
                    w.send(1, "out", 0, n, deps=[c])
            continue
        if exclusive:
            got = w.recv(r - 1, "out", 0, n)
            if r + 1 < P:
                s = w.scratch(n)
                c = w.copy(s, 0, "in", 0, n)
                red = w.reduce(s, 0, "out", 0, n, src_first=True, deps=[got, c])
                w.send(r + 1, s, 0, n, deps=[red])
            continue
        s = w.scratch(n)
        got = w.recv(r - 1, s, 0, n)
        c = w.copy("out", 0, "in", 0, n)
        red = w.reduce("out", 0, s, 0, n, src_first=True, deps=[got, c])
        last = red
        if extra and r == 1 and P > 2:
            t = w.scratch(n)
            g2 = w.recv(2, t, 0, n)
            last = w.reduce("out", 0, t, 0, n, src_first=False, deps=[g2, red])
        if r + 1 < P:
            w.send(r + 1, "out", 0, n, deps=[last])
        if extra and r == 2:
            w.send(1, "in", 0, n)
    return ops


@pytest.mark.parametrize("P", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("exclusive", [False, True])
def test_a_chain_is_a_prefix_in_rank_order(P: int, exclusive: bool) -> None:
    r = collkit.verify(chain_scan(P, 3, exclusive).build(), commutative=False)
    assert r.ok, r.summary()
    assert r.consistent_noncommutative


def test_a_prefix_that_includes_rank_r_plus_1_is_rejected() -> None:
    r = collkit.verify(chain_scan(4, 2, extra=True).build(), commutative=True)
    assert not r.ok
    msg = " ".join(d.message for d in r.diagnostics)
    assert "rank 1 out[0]" in msg and "over ranks 0..1" in msg
    assert "outside the range: r2" in msg


def test_operands_out_of_rank_order_need_a_commutative_op() -> None:
    ops = chain_scan(3, 1)
    # Rank 2 adds its own input before rank 0..1's prefix: out = in + s, not s + in.
    i = ops.find(2, "reduce")
    ops.ranks[2][i]["side"] = 1
    noncomm = collkit.verify(ops.build(), commutative=False)
    assert not noncomm.ok and "needs_commutativity" in noncomm.kinds
    assert collkit.verify(ops.build(), commutative=True).ok


def test_exscan_rank_0_out_is_unspecified_and_rank_1_needs_rank_0() -> None:
    ops = chain_scan(3, 2, exclusive=True)
    w = RankWriter(ops, 0)
    w.copy("out", 0, "in", 0, 2)  # rank 0 may write anything to its out
    assert collkit.verify(ops.build()).ok
    bad = chain_scan(3, 2, exclusive=True)
    j = bad.find(1, "recv")
    bad.ranks[1][j]["len"] = 1  # rank 1's out[1] never gets rank 0's input
    bad.ranks[0][bad.find(0, "send")]["len"] = 1
    r = collkit.verify(bad.build())
    assert not r.ok and any("rank 1 out[1]" in d.message for d in r.diagnostics)


def gatherv_by_hand(counts: list[int], displs: list[int], write_gap: bool = False) -> Ops:
    P = len(counts)
    ops = empty("gatherv", P, max(counts))
    ops.counts, ops.out_displs = counts, displs
    for r in range(P):
        w = RankWriter(ops, r)
        if r == 0:
            w.copy("out", displs[0], "in", 0, counts[0])
            for q in range(1, P):
                w.recv(q, "out", displs[q], counts[q])
            if write_gap:
                w.copy("out", displs[0] + counts[0], "in", 0, 1)
        else:
            w.send(0, "in", 0, counts[r])
    return ops


def test_displacements_place_blocks_and_gaps_stay_untouched() -> None:
    counts, displs = [2, 0, 3], [5, 0, 0]  # block 2 first, a gap [3, 5), block 1 empty
    s = gatherv_by_hand(counts, displs).build()
    assert s.out_elems(0) == 7 and s.in_elems(2) == 3 and s.out_elems(1) == 0
    assert collkit.verify(s).ok
    bad = collkit.verify(gatherv_by_hand(counts, [0, 0, 3], write_gap=True).build())
    assert not bad.ok
    assert any("between the blocks" in d.message for d in bad.diagnostics)


def test_a_block_in_the_wrong_place_is_a_wrong_result() -> None:
    ops = gatherv_by_hand([2, 1, 3], [0, 2, 3])
    i = ops.find(0, "recv", 1)  # rank 2's block: at 3, received at 2
    ops.ranks[0][i]["off"] = 2
    r = collkit.verify(ops.build())
    assert not r.ok


def vectors_schedule() -> collkit.Schedule:
    counts = [1, 0, 2, 3, 0, 1, 2, 0, 1]  # P = 3: rank r sends counts[3 r + q] to q
    P = 3
    ops = empty("alltoallv", P, max(counts))
    ops.counts = counts
    ops.in_displs = [0, 1, 1, 0, 3, 3, 3, 2, 0]  # each rank its own layout, with a gap
    ops.out_displs = []
    for r in range(P):
        w = RankWriter(ops, r)
        recv_at = 0
        for q in range(P):
            n_in = counts[r * P + q]
            if n_in and q != r:
                w.send(q, "in", ops.in_displs[r * P + q], n_in)
            n_out = counts[q * P + r]
            if q == r and n_out:
                w.copy("out", recv_at, "in", ops.in_displs[r * P + r], n_out)
            elif n_out:
                w.recv(q, "out", recv_at, n_out)
            recv_at += n_out
    return ops.build()


@pytest.mark.parametrize("fmt", ["text", "json", "goal"])
def test_count_vectors_round_trip_in_every_format(fmt: str) -> None:
    s = vectors_schedule()
    assert collkit.verify(s).ok
    back = collkit.io.loads(collkit.io.dumps(s, fmt), fmt)
    assert back.counts == s.counts and back.in_displs == s.in_displs
    assert back.out_displs == s.out_displs and back == s
    assert collkit.verify(back).ok
    g = collkit.io.loads(collkit.io.dumps(gatherv_by_hand([2, 0, 3], [5, 0, 0]).build(), fmt), fmt)
    assert g.out_displs == [5, 0, 0] and g.counts == [2, 0, 3]


def test_a_regular_header_is_written_as_before() -> None:
    text = collkit.io.dumps(collkit.generate("allgather:ring", 3, 2), "text")
    assert "counts" not in text and "displs" not in text


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("counts 1 2", "has 2 entries, not P = 3"),
        ("counts 1 2 -1", "an element count"),
        ("counts 1 2 4", "largest entry"),
        ("in_displs 0 0 0", "no displacements for in"),
        ("out_displs 0 1 1", "overlap"),
        ("counts 1 x 3", "an element count"),
    ],
)
def test_bad_count_lines_are_format_errors(line: str, needle: str) -> None:
    text = (
        "# collkit schedule v1\ncollective allgatherv\nP 3\ncount 3\n"
        f"{line}\nrank 0\nrank 1\nrank 2\n"
    )
    with pytest.raises(collkit.ScheduleFormatError, match=needle):
        collkit.from_text(text)


def test_scan_takes_no_count_vector() -> None:
    with pytest.raises(collkit.ScheduleFormatError, match="one count for every rank"):
        collkit.Schedule.from_arrays(
            empty("scan", 2, 1).build().arrays(), collective="scan", P=2, count=1, counts=[1, 1]
        )


def test_spec_table_describes_the_new_collectives() -> None:
    specs = {c["name"]: c for c in collkit.collectives.collectives()}
    assert specs["alltoallv"]["counts"] == "per_pair"
    assert specs["allgatherv"]["counts"] == "per_rank" and specs["allgatherv"]["out_displs"]
    assert specs["scatterv"]["in_displs"] and not specs["scatterv"]["out_displs"]
    assert specs["scan"]["postcondition"]["source"] == "prefix"
    assert specs["exscan"]["postcondition"]["source"] == "exclusive_prefix"
    assert specs["reduce_scatter"]["in_place"] == "every_rank"


def test_a_pair_matrix_past_4096_ranks_is_refused_saying_its_limit() -> None:
    """The header holds alltoallv's P^2 counts whole, at most P = 4096 (2^24 entries): past it
    the core, simulate and --counts say so (docs/alltoall.md, the non-uniform study's limit)."""
    from collkit.counts import parse_counts

    with pytest.raises(collkit.InvalidArgumentError, match=r"not P\^2 \(P <= 4096\)"):
        collkit.generate("alltoallv:linear", P=4097, counts=[1] * 4097)
    with pytest.raises(collkit.InvalidArgumentError, match=r"not P\^2 \(P <= 4096\)"):
        collkit.simulate("alltoallv:two_phase_bruck", 5000, counts=[1] * 5000, elem_size=1)
    with pytest.raises(collkit.InvalidArgumentError, match="holds at most P = 4096"):
        parse_counts("random(1,16)").vector(4097, per_pair=True)
    # Below it a P-entry vector is still the wrong length, and says the P^2 it wants.
    with pytest.raises(collkit.InvalidArgumentError, match=r"not P\^2 = 9"):
        collkit.generate("alltoallv:linear", P=3, counts=[1, 1, 1])
