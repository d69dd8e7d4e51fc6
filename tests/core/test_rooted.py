"""Rooted collectives (bcast, reduce) and barriers: verified for every root, segmented and not,
with the tree shapes checked through the messages the schedules send."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import collkit

# Segment sizes small enough that count 5 (8-byte elements) is cut into several segments.
ROOTED = [
    "bcast:linear",
    "bcast:pipeline(seg=16)",
    "bcast:binary(seg=16)",
    "bcast:binomial(seg=24)",
    "bcast:knomial(k=3,seg=8)",
    "bcast:knomial",
    "bcast:scatter_allgather",
    "bcast:circ_graph(seg=16)",
    "bcast:two_tree(seg=16)",
    "reduce:linear",
    "reduce:pipeline(seg=16)",
    "reduce:binary(seg=16)",
    "reduce:binomial(seg=24)",
    "reduce:knomial(k=3,seg=8)",
    "reduce:knomial",
]
BARRIERS = [
    "barrier:dissemination",
    "barrier:dissemination(k=2)",
    "barrier:dissemination(k=5)",
    "barrier:tree",
    "barrier:tree(k=3)",
]
SEND, RECV = 0, 1  # OpKind order in schedule.hpp


def _check(s: collkit.Schedule) -> None:
    r = collkit.verify(s, commutative=False)
    assert r.ok, r.summary()
    assert r.consistent_noncommutative, r.summary()


def _sweep(name: str, max_p: int) -> None:
    algo = collkit.Algorithm(name)
    for P in range(1, max_p + 1):
        for root in range(P):
            _check(algo.generate(P, 5, 8, root))


@pytest.mark.parametrize("name", ROOTED)
def test_every_root_up_to_48(name: str) -> None:
    _sweep(name, 48)


@pytest.mark.slow
@pytest.mark.parametrize("name", ROOTED)
def test_every_root_up_to_128(name: str) -> None:
    _sweep(name, 128)


@pytest.mark.parametrize("name", BARRIERS)
def test_barriers_every_P(name: str) -> None:
    algo = collkit.Algorithm(name)
    for P in [*range(1, 130), 243, 256, 1000]:
        r = collkit.verify(algo.generate(P, 0))
        assert r.ok, r.summary()


def _sends(s: collkit.Schedule) -> np.ndarray:
    a = s.arrays()
    return np.stack([a["rank"][a["kind"] == SEND], a["peer"][a["kind"] == SEND]], axis=1)


@pytest.mark.parametrize("P", [2, 7, 16, 33])
def test_bcast_trees_send_one_message_per_rank_and_segment(P: int) -> None:
    for name, segments in [
        ("bcast:binomial", 1),
        ("bcast:binary(seg=8)", 5),
        ("bcast:pipeline(seg=16)", 3),
        ("bcast:linear", 1),
    ]:
        for root in (0, P - 1):
            sends = _sends(collkit.generate(name, P, 5, root=root))
            assert len(sends) == (P - 1) * segments, name
            receivers, per = np.unique(sends[:, 1], return_counts=True)
            assert root not in receivers
            assert len(receivers) == P - 1 and (per == segments).all(), name


def _depth(P: int, sends: np.ndarray, root: int) -> int:
    parent = {int(peer): int(rank) for rank, peer in sends}
    depth = 0
    for r in range(P):
        d, x = 0, r
        while x != root:
            x, d = parent[x], d + 1
            assert d <= P, "not a tree"
        depth = max(depth, d)
    return depth


@pytest.mark.parametrize("P", [2, 5, 8, 31, 64, 100])
def test_bcast_tree_shapes(P: int) -> None:
    """Heights: binomial = bits of P - 1, chain = P - 1, flat = 1, binary <= lg P,
    k-nomial <= ceil(log_k P) levels; fan-out: binary <= 2, k-nomial <= (k - 1) per level."""
    for root in (0, P // 2):

        def sends(name: str) -> np.ndarray:
            return _sends(collkit.generate(name, P, 1, root=root))  # noqa: B023

        assert _depth(P, sends("bcast:linear"), root) == 1
        assert _depth(P, sends("bcast:pipeline"), root) == P - 1
        binomial_height = max(bin(v).count("1") for v in range(P))
        assert _depth(P, sends("bcast:binomial"), root) == binomial_height
        binary = sends("bcast:binary")
        assert _depth(P, binary, root) <= math.floor(math.log2(P))
        assert np.unique(binary[:, 0], return_counts=True)[1].max() <= 2
        knomial = sends("bcast:knomial(k=3)")
        assert _depth(P, knomial, root) <= math.ceil(math.log(P, 3) - 1e-9) * 2


def test_dissemination_rounds_and_messages() -> None:
    for k in (1, 2, 3):
        for P in (2, 3, 9, 10, 64, 100):
            s = collkit.generate(f"barrier:dissemination(k={k})", P, 0)
            rounds = math.ceil(math.log(P, k + 1) - 1e-9)
            a = s.arrays()
            sends_per_rank = np.bincount(a["rank"][a["kind"] == SEND], minlength=P)
            # k messages per round, fewer in the last round when (k+1)^i j reaches P
            assert (sends_per_rank <= k * rounds).all()
            assert (sends_per_rank == sends_per_rank[0]).all()
            assert sends_per_rank[0] >= rounds
            assert int(a["len"].max(initial=0)) == 0  # no data


def test_reduce_non_root_ranks_never_write_out() -> None:
    for name in ("reduce:binomial", "reduce:pipeline(seg=8)", "reduce:linear", "reduce:binary"):
        for root in (0, 3, 6):
            a = collkit.generate(name, 7, 4, root=root).arrays()
            writes_out = (a["buf"] == 1) & (a["kind"] != SEND)
            assert set(np.unique(a["rank"][writes_out]).tolist()) <= {root}, name


def test_reduce_trees_differ_but_each_is_rank_ordered() -> None:
    P = 13
    a = collkit.generate("reduce:binomial", P, 2, root=5)
    b = collkit.generate("reduce:linear", P, 2, root=5)
    assert not collkit.compare_trees(a, b).same_commutative
    for s in (a, b):
        _check(s)


def test_segmented_pipeline_reduce_verifies_with_uneven_last_segment() -> None:
    for count in (1, 2, 7, 13):
        for seg in (8, 24, 40):
            _check(collkit.generate(f"reduce:pipeline(seg={seg})", 6, count, root=2))
            _check(collkit.generate(f"bcast:pipeline(seg={seg})", 6, count, root=4))


def test_scatter_allgather_with_full_and_partial_blocks() -> None:
    for P in (2, 5, 8, 13):
        for count in (P - 1, P, 2 * P + 3):
            for root in (0, P // 2, P - 1):
                _check(collkit.generate("bcast:scatter_allgather", P, count, root=root))
    # every rank but the root receives (P - 1) / P of the vector in the ring, once
    a = collkit.generate("bcast:scatter_allgather", 8, 64, root=3).arrays()
    recv = a["kind"] == RECV
    assert np.bincount(a["rank"][recv], weights=a["len"][recv], minlength=8)[3] == 64 - 8


def test_zero_count_sends_nothing() -> None:
    for name in ROOTED:
        assert len(_sends(collkit.generate(name, 9, 0, root=4))) == 0


@pytest.mark.parametrize(
    "bad",
    [
        "bcast:knomial(k=1)",
        "bcast:knomial(k=65)",
        "reduce:pipeline(seg=-1)",
        "reduce:pipeline(seg=lots)",
        "bcast:binary(fanout=3)",
        "barrier:dissemination(k=0)",
        "barrier:tree(k=x)",
        "bcast:linear(seg=8)",
    ],
)
def test_bad_parameters_are_name_errors(bad: str) -> None:
    with pytest.raises(collkit.AlgorithmNameError):
        collkit.Algorithm(bad)


def test_bad_root_is_an_argument_error() -> None:
    for name in ("bcast:binomial", "reduce:knomial"):
        for root in (-1, 8):
            with pytest.raises(collkit.InvalidArgumentError):
                collkit.generate(name, 8, 1, root=root)
    with pytest.raises(collkit.InvalidArgumentError):
        collkit.generate("barrier:tree", 8, 0, root=1)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(
        [
            "bcast:pipeline",
            "reduce:binary",
            "bcast:knomial",
            "barrier:dissemination",
            "barrier:tree",
            "reduce:knomial",
        ]
    ),
    st.text(max_size=20),
)
def test_hostile_parameters_give_a_clear_error(base: str, arg: str) -> None:
    with contextlib.suppress(collkit.CollkitError):
        collkit.Algorithm(f"{base}({arg})")


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(ROOTED),
    st.integers(1, 40),
    st.integers(0, 9),
    st.integers(0, 1000),
    st.sampled_from([1, 2, 4, 8]),
)
def test_random_problems_verify(name: str, P: int, count: int, root_seed: int, esize: int) -> None:
    _check(collkit.generate(name, P, count, elem_size=esize, root=root_seed % P))
