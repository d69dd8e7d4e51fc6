"""The pipelining postal model of [Ruefenacht 2017], b_opt against a brute-force minimisation of
Eq. 4,
and the search for large N against exhaustive enumeration."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import collkit
from collkit.analysis import recmult
from collkit.analysis.recmult import PipelinedPostal

M = PipelinedPostal(alpha_p=1.34e-6, alpha_r=0.34e-6, beta=0.4e-9, gamma=0.1e-9)


@pytest.mark.parametrize(("b", "k"), [(1, 3), (3, 2), (7, 2), (2, 4)])
@pytest.mark.parametrize("nbytes", [0, 8, 4096])
def test_uniform_schedule_cost_is_eq4(b: int, k: int, nbytes: int) -> None:
    N = (b + 1) ** k
    stages = ",".join([f"a{b + 1}"] * k)
    cost = recmult.schedule_cost(stages, M, nbytes, N=N)
    assert cost == pytest.approx(recmult.eq4_cost(b, N, M, nbytes), rel=1e-12)
    per_stage = M.alpha_p + b * (M.alpha_r + nbytes * M.beta + nbytes * M.gamma)  # Eq. 3
    assert cost == pytest.approx(k * per_stage, rel=1e-12)


def test_factored_cost_is_the_seeds_sum_and_order_free() -> None:
    m = PipelinedPostal(1.0, 0.25)
    # alpha_p s + alpha_r sum(b_i)
    assert recmult.schedule_cost("a8,a3,a4", m, N=96) == pytest.approx(3 * 1.0 + 0.25 * 12)
    assert recmult.schedule_cost("a4,a3,a8", m, N=96) == recmult.schedule_cost("a8,a3,a4", m, N=96)


def test_split_and_merge_costs() -> None:
    m = PipelinedPostal(1.0, 0.25)
    # c6m2 (alpha_p + alpha_r) + 2 a2 + e6m2 (alpha_p + alpha_r): seed Eq. 2's two extra stages
    assert recmult.schedule_cost("c6m2,a2,a2,e6m2", m, N=7) == pytest.approx(4 * 1.25)
    # merge: remainder sends to 3; inverse merge: a group rank sends to 1 peer and 1 remainder
    assert recmult.schedule_cost("m1g2a3,n1g3a2", m, N=7) == pytest.approx(2 + 0.25 * (3 + 2))


@pytest.mark.parametrize("ratio", [1.0, 1.1, 1.5, 2, 3, 4, 6, 10, 30, 100, 1000])
def test_b_opt_closed_form_equals_brute_force(ratio: float) -> None:
    assert recmult.b_opt(ratio) == pytest.approx(recmult.b_opt_brute(ratio), rel=1e-6)


@pytest.mark.parametrize("ratio", [1.5, 2, 4, 10, 100])
def test_seed_eq5_is_not_the_minimum(ratio: float) -> None:
    def f(b: float) -> float:
        return float(recmult.eq4_cost(b, 1e6, PipelinedPostal(ratio, 1.0)))

    good, seed = recmult.b_opt(ratio), recmult.b_opt_eq5(ratio)
    assert seed > good * 1.2
    assert f(good) < f(seed)
    assert recmult.b_opt_eq5(1.0) == pytest.approx(recmult.b_opt(1.0)) == pytest.approx(math.e - 1)


@pytest.mark.parametrize("ratio", [1, 2, 4, 8, 16])
def test_integer_optimum_is_next_to_b_opt(ratio: float) -> None:
    m = PipelinedPostal(float(ratio), 1.0)
    best = min(range(1, 200), key=lambda b: recmult.eq4_cost(b, 1e6, m))
    assert best in (math.floor(recmult.b_opt(ratio)), math.ceil(recmult.b_opt(ratio)))


@settings(max_examples=200, deadline=None)
@given(st.floats(-1 / math.e, 1e12))
def test_lambert_w_inverts_w_exp_w(x: float) -> None:
    w = recmult.lambert_w0(x)
    assert w >= -1
    assert w * math.exp(w) == pytest.approx(x, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1.34us", 1.34e-6),
        ("500ns", 5e-7),
        ("0.4ns", 4e-10),
        ("2e-6s", 2e-6),
        ("1 ms", 1e-3),
        ("500", 5e-7),  # a bare number is ns, as in every command
    ],
)
def test_parse_time(text: str, seconds: float) -> None:
    assert recmult.parse_time(text) == pytest.approx(seconds)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=20))
def test_parse_time_hostile(text: str) -> None:
    try:
        assert recmult.parse_time(text) >= 0
    except collkit.InvalidArgumentError as e:
        assert "is not a time" in str(e) or "finite time" in str(e) or "not a time" in str(e)


def test_model_rejects_bad_parameters() -> None:
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(collkit.InvalidArgumentError):
            PipelinedPostal(bad, 1.0)
    with pytest.raises(collkit.InvalidArgumentError):
        recmult.b_opt(0.0)
    with pytest.raises(collkit.InvalidArgumentError):
        recmult.lambert_w0(-1.0)


def test_search_finds_the_exhaustive_optimum_up_to_256() -> None:
    for N in range(1, 257):
        nbytes = 8 if N % 2 else 4096
        ranked = recmult.rank_schedules(N, M, nbytes, top=1)
        found = recmult.search(N, M, nbytes)
        assert found.cost == pytest.approx(ranked[0].cost, rel=1e-12), N
        # the schedule it names exists, has that cost and is enumerated
        assert recmult.schedule_cost(found.schedule, M, nbytes, N=N) == pytest.approx(found.cost)


def test_search_per_family_and_fanout() -> None:
    for fam in ("factored", "split", "merged"):
        for N in (7, 30, 97):
            listed = recmult.rank_schedules(N, M, 8, max_fanout=4, families=[fam])
            if not listed:
                with pytest.raises(collkit.InvalidArgumentError, match="no schedule"):
                    recmult.search(N, M, 8, max_fanout=4, families=[fam])
                continue
            got = recmult.search(N, M, 8, max_fanout=4, families=[fam])
            assert got.family == fam
            assert got.cost == pytest.approx(listed[0].cost, rel=1e-12)


def test_search_a_million_ranks() -> None:
    found = recmult.search(10**6, M, 8)
    p = recmult.plan(found.schedule, 10**6)
    assert recmult.schedule_cost(p, M, 8) == pytest.approx(found.cost)
    # one rank of it generates alone
    prog = collkit.generate_rank(f"allreduce:rm({found.schedule})", P=10**6, rank=123457, count=1)
    assert len(prog) > 0


@pytest.mark.parametrize("N", [*range(1, 33), 48, 60, 64, 96, 97, 120, 128, 210])
def test_the_top_of_the_ranking_is_the_exhaustive_rankings_first_rows(N: int) -> None:
    # rank_schedules(top=k) opens shells cheapest bound first and stops early (the full
    # walk takes minutes at 65536 ranks); it must give the same rows, in the same order
    for model, nbytes, fanout in ((M, 8, 8), (M, 4096, 8), (M, 0, 4), (M, 8, 2)):
        full = recmult.rank_schedules(N, model, nbytes, max_fanout=fanout)
        for top in (1, 3, 10):
            got = recmult.rank_schedules(N, model, nbytes, max_fanout=fanout, top=top)
            assert got == full[:top], (N, nbytes, fanout, top)
    for fam in ("split", "merged"):
        full = recmult.rank_schedules(N, M, 8, families=[fam])
        assert recmult.rank_schedules(N, M, 8, families=[fam], top=3) == full[:3]
    assert recmult.rank_schedules(N, M, 8, top=0) == []


def test_the_top_at_65536_ranks_is_the_searchs_optimum_first() -> None:
    # unchecked: candidates("allreduce", 65536) did not finish in 300 s
    ranked = recmult.rank_schedules(65536, M, 8, top=3)
    assert len(ranked) == 3
    assert ranked[0].cost == pytest.approx(recmult.search(65536, M, 8).cost, rel=1e-12)
    assert [r.cost for r in ranked] == sorted(r.cost for r in ranked)
    for r in ranked:
        assert recmult.schedule_cost(r.schedule, M, 8, N=65536) == pytest.approx(r.cost)
