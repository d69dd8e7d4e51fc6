"""allreduce:bucket (Jain, Sabharwal, ICS 2010): ring reduce-scatters along each torus dimension
in turn, then ring allgathers in the reverse order. Its peers, its bytes, its time under the
postal model, and that no two of its messages share a torus link."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import collkit

SEND, RECV = 0, 1


def _program(name: str, P: int, rank: int, count: int) -> dict[str, Any]:
    return dict(collkit.Algorithm(name).generate_rank(P, rank, count, 8, 0).arrays())


def _messages(a: dict[str, Any], kind: int) -> list[tuple[int, int]]:
    return [(int(a["peer"][i]), int(a["len"][i])) for i, k in enumerate(a["kind"]) if k == kind]


def _coords(rank: int, dims: list[int]) -> list[int]:
    out = []
    for d in reversed(dims):
        out.append(rank % d)
        rank //= d
    return out[::-1]


def _name(dims: list[int]) -> str:
    return f"allreduce:bucket(dims={'x'.join(map(str, dims))})"


@pytest.mark.parametrize("dims", [[5], [4, 4], [3, 4], [4, 3], [2, 3, 2], [8, 1, 2]])
def test_each_dimension_rings_to_its_neighbours_reduce_scatters_then_allgathers(
    dims: list[int],
) -> None:
    P = math.prod(dims)
    strides = [math.prod(dims[i + 1 :]) for i in range(len(dims))]
    count = 7 * P  # no empty block anywhere
    for rank in range(P):
        a = _program(_name(dims), P, rank, count)
        c = _coords(rank, dims)
        # Per dimension of size > 1: (the +1 neighbour, the -1 neighbour, d - 1 steps).
        rings = [
            (
                rank + ((c[t] + 1) % d - c[t]) * strides[t],
                rank + ((c[t] - 1) % d - c[t]) * strides[t],
                d - 1,
            )
            for t, d in enumerate(dims)
            if d > 1
        ]
        # Reduce-scatters dimension 0 first, then the allgathers last dimension first.
        order = rings + rings[::-1]
        sends = [right for right, _, k in order for _ in range(k)]
        recvs = [left for _, left, k in order for _ in range(k)]
        peers = [int(a["peer"][i]) for i, k in enumerate(a["kind"]) if k == SEND]
        froms = [int(a["peer"][i]) for i, k in enumerate(a["kind"]) if k == RECV]
        assert peers == sends and froms == recvs, rank
        # Each rank sends (d_t - 1) / d_t of the part it holds along each dimension, twice.
        lens = [int(a["len"][i]) for i, k in enumerate(a["kind"]) if k == SEND]
        part, want = float(count), 0.0
        for d in dims:
            want += 2 * (d - 1) / d * part
            part /= d
        assert sum(lens) == pytest.approx(want, abs=2 * len(lens))
    s = collkit.generate(_name(dims), P, 3 * P + 2)
    for in_place in (False, True):
        r = collkit.verify(s, commutative=True, in_place=in_place)
        assert r.ok, r.summary()


def test_one_dimension_is_the_ring() -> None:
    # dims=P: one ring of P, the steps and bytes of allreduce:ring (unsegmented).
    for P in (2, 5, 8):
        for rank in range(P):
            a = _program("allreduce:bucket", P, rank, 3 * P)
            b = _program("allreduce:ring(seg=0)", P, rank, 3 * P)
            for kind in (SEND, RECV):
                got = [
                    (int(a["peer"][i]), int(a["len"][i]))
                    for i, k in enumerate(a["kind"])
                    if k == kind
                ]
                ref = [
                    (int(b["peer"][i]), int(b["len"][i]))
                    for i, k in enumerate(b["kind"])
                    if k == kind
                ]
                assert got == ref, (P, rank)


@pytest.mark.parametrize("shape", ["8x8", "4x3", "2x3x4"])
def test_postal_time_is_the_closed_form_and_no_link_is_shared(shape: str) -> None:
    # Each step a message of the part's block to the neighbour: alpha + block beta, summed over
    # 2 (d_t - 1) steps per dimension. On the torus with links of the NIC's speed every message
    # is alone on its one link, so congestion adds nothing.
    dims = [int(x) for x in shape.split("x")]
    P = math.prod(dims)
    n = 8 * P * 56  # bytes: every part divides evenly
    model = {"model": "postal", "alpha": "1us", "beta": "0.02ns"}
    want, part = 0.0, float(n)
    for d in dims:
        want += 2 * (d - 1) * (1000 + part / d * 0.02)
        part /= d
    name = f"allreduce:bucket(dims={shape})"
    alone = collkit.simulate(name, P=P, bytes=n, **model).makespan
    torus = f"torus(dims={shape},hop=0ns,link=0.02ns)"
    shared = collkit.simulate(name, P=P, bytes=n, topology=torus, **model).makespan
    assert alone == pytest.approx(want, rel=1e-9)
    assert shared == alone
    # Recursive doubling's halving on the same torus does share links: it is slower there.
    rab = collkit.simulate("allreduce:rabenseifner", P=P, bytes=n, **model).makespan
    rab_shared = collkit.simulate(
        "allreduce:rabenseifner", P=P, bytes=n, topology=torus, **model
    ).makespan
    if shape == "8x8":
        assert rab_shared > rab


def test_cost_model_is_the_sum_over_dimensions() -> None:
    c = collkit.Algorithm("allreduce:bucket(dims=4x2)").cost(8, 1024.0)
    assert c["alpha"] == 2 * 3 + 2 * 1
    assert c["beta"] == pytest.approx(2 * 0.75 * 1024 + 2 * 0.5 * 256)


@pytest.mark.parametrize("dims", ["0", "x", "8x", "axb", "2x2x2x2x2x2x2x2x2", "-1"])
def test_bad_dims_are_refused_by_name(dims: str) -> None:
    with pytest.raises(collkit.AlgorithmNameError, match="dims"):
        collkit.Algorithm(f"allreduce:bucket(dims={dims})")


@pytest.mark.parametrize(("dims", "P"), [("4x4", 8), ("4x3", 13), ("3x3", 10)])
def test_a_torus_that_is_not_P_is_unsupported(dims: str, P: int) -> None:
    with pytest.raises(collkit.UnsupportedError, match="dims"):
        collkit.Algorithm(f"allreduce:bucket(dims={dims})").generate(P, 4)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3))
def test_any_torus_of_sizes_is_read_and_verified(dims: list[int]) -> None:
    P = math.prod(dims)
    algo = collkit.Algorithm(_name(dims))
    r = collkit.verify(algo.generate(P, P + 1), commutative=True)
    assert r.ok, r.summary()


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789xX-+ P,", max_size=12))
def test_a_dims_text_is_a_torus_or_an_error_by_name(text: str) -> None:
    parts = text.split("x")
    good = text == "P" or (
        len(parts) <= 8
        and all(p.isdigit() and len(p) <= 10 and 1 <= int(p) <= 2**31 for p in parts)
    )
    if "," in text or text.strip() != text or text == "":
        return  # the name grammar's own business (a second argument, spaces)
    if good:
        collkit.Algorithm(f"allreduce:bucket(dims={text})")
    else:
        with pytest.raises(collkit.CollkitError):
            collkit.Algorithm(f"allreduce:bucket(dims={text})")
