"""The irregular collectives proven: every algorithm of allgatherv, alltoallv, gatherv,
scatterv, reduce_scatter, scan and exscan through the verifier over P (powers of two, primes,
awkward composites; up to 256 under -m slow) x classes of count vectors x packed and displaced
layouts x MPI_IN_PLACE where MPI allows it, in rank order unless the algorithm needs a
commutative op; broken schedules refused; simulated under every model and exported to GOAL."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import collkit
from builder import KIND, Ops
from collkit.collectives import collective
from collkit.sim.options import MODELS

IRREGULAR = ("allgatherv", "alltoallv", "gatherv", "scatterv", "reduce_scatter", "scan", "exscan")
QUICK = (1, 2, 3, 4, 5, 7, 8, 12, 16, 31, 64)
SLOW = (100, 127, 128, 255, 256)


def names() -> list[str]:
    return sorted(s["name"] for s in collkit.algorithms() if s["collective"] in IRREGULAR)


# Count-vector classes: entry i of n (n = P, or P^2 for alltoallv: i = r P + q).
def _one_rank(P: int, pairs: bool, base: int, special: int) -> list[int]:
    k = P // 2
    if not pairs:
        return [special if i == k else base for i in range(P)]
    return [special if k in (i // P, i % P) else base for i in range(P * P)]


def _random(P: int, pairs: bool) -> list[int]:
    rng = np.random.default_rng(P)  # zeros among them
    return [int(x) for x in rng.integers(0, 3, P * P if pairs else P, endpoint=True)]


CLASSES: dict[str, Callable[[int, bool], list[int]]] = {
    "equal": lambda P, pairs: [3] * (P * P if pairs else P),
    "zero": lambda P, pairs: [0] * (P * P if pairs else P),
    "one_zero": lambda P, pairs: _one_rank(P, pairs, 2, 0),
    "one_huge": lambda P, pairs: _one_rank(P, pairs, 1, 41),
    "random": _random,
    "increasing": lambda P, pairs: (
        [(i % P) + 1 for i in range(P * P)] if pairs else list(range(1, P + 1))
    ),
}


def reversed_with_gaps(lens: list[int]) -> list[int]:
    """Displacements that put the blocks in reverse order with a one-element gap after each."""
    out = [0] * len(lens)
    at = 0
    for b in reversed(range(len(lens))):
        out[b] = at
        at += lens[b] + 1
    return out


def displaced(name: str, P: int, counts: list[int]) -> dict[str, list[int]]:
    """The collective's displacements laid out reversed with gaps (P entries, alike on every
    rank; alltoallv: P^2, each rank's own row and column)."""
    spec = collective(name)
    out: dict[str, list[int]] = {}
    if spec["counts"] == "per_pair":
        rows = [reversed_with_gaps(counts[r * P : r * P + P]) for r in range(P)]
        cols = [reversed_with_gaps([counts[q * P + r] for q in range(P)]) for r in range(P)]
        return {
            "in_displs": [x for row in rows for x in row],
            "out_displs": [x for col in cols for x in col],
        }
    if spec["in_displs"]:
        out["in_displs"] = reversed_with_gaps(counts)
    if spec["out_displs"]:
        out["out_displs"] = reversed_with_gaps(counts)
    return out


def sweep(name: str, Ps: tuple[int, ...]) -> None:
    algo = collkit.Algorithm(name)
    spec = collective(algo.collective)
    needs_comm = algo.needs_commutative()
    roots = lambda P: sorted({0, P // 2, P - 1}) if spec["rooted"] else [0]  # noqa: E731
    checked = 0
    for P in Ps:
        if spec["counts"] == "none":  # scan, exscan: one count, the classes as counts
            problems: list[tuple[str, dict[str, object]]] = [
                (f"count={c}", {"count": c}) for c in (0, 1, 5)
            ]
        else:
            problems = []
            for cls, make in CLASSES.items():
                counts = make(P, spec["counts"] == "per_pair")
                problems.append((cls, {"counts": counts}))
                problems.append(
                    (
                        cls + "+displs",
                        {"counts": counts, **displaced(name.split(":")[0], P, counts)},
                    )
                )
        for what, kw in problems:
            for root in roots(P):
                try:
                    s = algo.generate(P, root=root, **kw)  # type: ignore[arg-type]
                except collkit.UnsupportedError:
                    continue
                modes = [False, True] if spec["in_place"] != "none" else [False]
                for in_place in modes:
                    r = collkit.verify(s, commutative=needs_comm, in_place=in_place)
                    assert r.ok, f"{name} P={P} {what} root={root} in_place={in_place}: " + (
                        r.summary()
                    )
                    if not needs_comm:
                        assert r.consistent_noncommutative, (name, P, what)
                    checked += 1
    assert checked > 0, f"{name}: refused every P"


@pytest.mark.parametrize("name", names())
def test_every_irregular_algorithm_every_count_class(name: str) -> None:
    sweep(name, QUICK)


@pytest.mark.slow
@pytest.mark.parametrize("name", names())
def test_every_irregular_algorithm_up_to_256(name: str) -> None:
    sweep(name, SLOW)


def test_every_irregular_collective_has_algorithms() -> None:
    have = {s["collective"] for s in collkit.algorithms()}
    assert set(IRREGULAR) <= have


def test_without_counts_a_v_collective_is_its_regular_form() -> None:
    for v, regular in (
        ("allgatherv:ring", "allgather:ring"),
        ("gatherv:binomial", "gather:binomial"),
    ):
        a = collkit.generate(v, 6, 3, root=0)
        b = collkit.generate(regular, 6, 3, root=0)
        assert a.counts == [] and a.out_elems(0) == b.out_elems(0) == 18
        ra, rb = collkit.verify(a), collkit.verify(b)
        assert ra.ok and (ra.messages, ra.bytes) == (rb.messages, rb.bytes)


def test_a_prefix_past_rank_r_is_rejected() -> None:
    # scan:linear with rank 1 copying rank 0's prefix over its input instead of adding it:
    # rank 1 ends with rank 0's input alone, rank 2 with ranks 0 and 2.
    ops = Ops.of(collkit.generate("scan:linear", 4, 2))
    i = ops.find(1, "reduce")
    ops.ranks[1][i]["kind"] = KIND["copy"]
    r = collkit.verify(ops.build())
    assert not r.ok
    assert any("missing r1" in d.message for d in r.diagnostics)


def test_exscan_that_includes_the_own_rank_is_rejected() -> None:
    # exscan with scan's program: rank r's out holds ranks 0..r, one rank past its range.
    scan = Ops.of(collkit.generate("scan:linear", 3, 1))
    scan.collective = "exscan"
    r = collkit.verify(scan.build())
    assert not r.ok
    assert any("outside the range: r1" in d.message for d in r.diagnostics)


def test_out_of_order_prefix_needs_a_commutative_op() -> None:
    ops = Ops.of(collkit.generate("scan:recursive_doubling", 4, 1))
    for o in ops.ranks[3]:
        if o["kind"] == KIND["reduce"] and o["buf"] == 1:
            o["side"] ^= 1  # rank 3 puts its own input before the lower ranks' partial
    noncomm = collkit.verify(ops.build(), commutative=False)
    assert not noncomm.ok and "needs_commutativity" in noncomm.kinds
    assert collkit.verify(ops.build(), commutative=True).ok


def test_a_block_sent_to_the_wrong_place_is_a_wrong_result() -> None:
    s = collkit.generate("allgatherv:ring", 4, counts=[2, 1, 3, 1])
    ops = Ops.of(s)
    i = ops.find(2, "recv")
    ops.ranks[2][i]["off"] += 1  # one element past block 1's place
    r = collkit.verify(ops.build())
    # Rank 2 writes part of another block's place too: unordered with that block's receive.
    assert not r.ok and r.kinds & {"wrong_result", "hazard"}


def test_reduce_scatter_ring_needs_a_commutative_op() -> None:
    s = collkit.generate("reduce_scatter:ring", 5, counts=[1, 2, 0, 3, 1])
    assert collkit.verify(s, commutative=True).ok
    r = collkit.verify(s, commutative=False)
    assert not r.ok and "needs_commutativity" in r.kinds


def test_noncommutative_reduce_scatter_is_in_rank_order() -> None:
    s = collkit.generate("reduce_scatter:noncommutative", 8, counts=[3, 0, 1, 4, 2, 2, 0, 5])
    r = collkit.verify(s, commutative=False)
    assert r.ok and r.consistent_noncommutative
    with pytest.raises(collkit.UnsupportedError, match="power of two"):
        collkit.generate("reduce_scatter:noncommutative", 6, counts=[1] * 6)


def test_bad_count_vectors_are_clear_errors() -> None:
    with pytest.raises(collkit.InvalidArgumentError, match="has 2 entries, not P = 3"):
        collkit.generate("allgatherv:ring", 3, counts=[1, 2])
    with pytest.raises(collkit.InvalidArgumentError, match="P\\^2 = 9"):
        collkit.generate("alltoallv:linear", 3, counts=[1, 2, 3])
    with pytest.raises(collkit.InvalidArgumentError, match="largest entry"):
        collkit.generate("allgatherv:ring", 3, 7, counts=[1, 2, 3])
    with pytest.raises(collkit.InvalidArgumentError, match="overlap"):
        collkit.generate("gatherv:linear", 3, counts=[2, 2, 2], out_displs=[0, 1, 4])
    with pytest.raises(collkit.InvalidArgumentError, match="one count for every rank"):
        collkit.generate("scan:linear", 3, counts=[1, 1, 1])
    with pytest.raises(collkit.InvalidArgumentError, match=r"counts\[1\] must be an integer"):
        collkit.generate("allgatherv:ring", 3, counts=[1, 2.5, 3])
    with pytest.raises(collkit.InvalidArgumentError, match="no displacements for in"):
        collkit.generate("allgatherv:ring", 2, counts=[1, 1], in_displs=[0, 1])


ALL_MODELS = sorted(MODELS)


@pytest.mark.parametrize("name", names())
def test_simulated_under_every_model_and_exported_to_goal(name: str) -> None:
    algo = collkit.Algorithm(name)
    spec = collective(algo.collective)
    P = 8
    kw: dict[str, object] = {"count": 4}
    if spec["counts"] != "none":
        kw = {"counts": CLASSES["random"](P, spec["counts"] == "per_pair")}
    for model in ALL_MODELS:
        res = collkit.simulate(name, P, model=model, **kw)  # type: ignore[arg-type]
        assert res.makespan >= 0
    s = algo.generate(P, **kw)  # type: ignore[arg-type]
    goal = collkit.io.dumps(s, "goal")
    back = collkit.io.loads(goal, "goal")
    assert back == s and back.counts == s.counts
    # The simulator reads the exported file as it reads the generated schedule.
    assert collkit.simulate(back, model="loggp").makespan == pytest.approx(
        collkit.simulate(s, model="loggp").makespan
    )
