"""All-to-all: spread-out, pairwise, radix-r Bruck and modified Bruck ([Fan 2022]).

Default run: every P <= 128 with sampled radixes (2, 3, 4, ceil sqrt P, P/2, P-1, P and two
random ones), a few P up to 700, and the poster's numC / numD against the generated schedules for
every P <= 512 and every r. The `slow` tests sweep every r <= P for every P <= 128 and sample
P up to 2048 (`pytest -m slow tests/core/test_alltoall.py`).
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import collkit
from collkit.analysis import bruck
from conftest import EVERY_P, up_to

BRUCKS = ("alltoall:bruck", "alltoall:bruck_modified")
SEND, RECV, COPY = 0, 1, 3


def verified(name: str, P: int, count: int = 1) -> None:
    r = collkit.verify(collkit.generate(name, P, count), commutative=False)
    assert r.ok, r.summary()


def sampled_radixes(P: int, rng: random.Random) -> list[int]:
    rs = {2, 3, bruck.sqrt_rule(P), max(2, P // 2), max(2, P)}
    rs |= {rng.randint(2, max(2, P))}
    return sorted(r for r in rs if r <= max(2, P))


# ---- every block lands in its place ---------------------------------------------------------


@pytest.mark.parametrize("name", ["alltoall:linear", "alltoall:pairwise"])
def test_spread_out_and_pairwise_every_P(name: str) -> None:
    for P in up_to(EVERY_P, 128):
        verified(name, P, 1 if P > 40 else 2)
    for P in (1, 7, 16):
        verified(name, P, 0)


@pytest.mark.parametrize("name", BRUCKS)
def test_bruck_every_P_sampled_r(name: str) -> None:
    # Every P <= 64 with sampled r, then a sample of P <= 128 (the verifier's hazard pass grows
    # about as P^3 for r = 2; the full sweep is the slow test below).
    rng = random.Random(3)
    for P in [*range(1, 65), 65, 81, 96, 100, 121, 127, 128]:
        for r in sampled_radixes(P, rng):
            verified(f"{name}(r={r})", P)


@pytest.mark.parametrize("name", BRUCKS)
def test_bruck_counts_zero_and_several_elements(name: str) -> None:
    for P, r in ((1, 2), (6, 4), (13, 3), (16, 2), (31, 31)):
        for count in (0, 3):
            verified(f"{name}(r={r})", P, count)


@pytest.mark.parametrize("name", BRUCKS)
def test_bruck_sampled_large_P(name: str) -> None:
    for P, r in ((200, 3), (300, 17)):
        verified(f"{name}(r={r})", P)


@pytest.mark.slow
@pytest.mark.parametrize("name", BRUCKS)
def test_bruck_every_P_every_r_slow(name: str) -> None:
    for P in up_to(EVERY_P, 128):
        for r in range(2, max(2, P) + 1):
            verified(f"{name}(r={r})", P)


@pytest.mark.slow
@pytest.mark.parametrize("name", [*BRUCKS, "alltoall:linear", "alltoall:pairwise"])
def test_sampled_P_to_2048_slow(name: str) -> None:
    for P in (1024, 1531, 2048):
        if name in BRUCKS:
            for r in (bruck.sqrt_rule(P), P // 3, P):
                verified(f"{name}(r={r})", P)
        else:
            verified(name, P)


def test_r_at_least_P_is_r_equals_P() -> None:
    for name in BRUCKS:
        a = collkit.generate(f"{name}(r=9)", 9, 2).arrays()
        b = collkit.generate(f"{name}(r=1000)", 9, 2).arrays()
        for key in ("kind", "peer", "buf", "off", "len"):
            assert (a[key] == b[key]).all()


# ---- the structure of each algorithm --------------------------------------------------------


def test_linear_posts_everything_at_once_in_shifted_order() -> None:
    P = 7
    for rank in range(P):
        a = collkit.generate_rank("alltoall:linear", P, rank, 1).arrays()
        assert len(a["deps"]) == 0  # nothing waits
        sends = a["peer"][a["kind"] == SEND]
        recvs = a["peer"][a["kind"] == RECV]
        assert list(sends) == [(rank + k) % P for k in range(1, P)]
        assert list(recvs) == [(rank - k) % P for k in range(1, P)]


@pytest.mark.parametrize("P", [8, 12])
def test_pairwise_partners(P: int) -> None:
    for rank in range(P):
        a = collkit.generate_rank("alltoall:pairwise", P, rank, 1).arrays()
        sends = list(a["peer"][a["kind"] == SEND])
        recvs = list(a["peer"][a["kind"] == RECV])
        if P == 8:  # power of two: XOR, each step a perfect matching
            assert sends == recvs == [rank ^ k for k in range(1, P)]
        else:
            assert sends == [(rank + k) % P for k in range(1, P)]
            assert recvs == [(rank - k) % P for k in range(1, P)]
        # Each step waits for the previous one: the ops of step k list those of step k-1.
        comm = np.flatnonzero((a["kind"] == SEND) | (a["kind"] == RECV))
        for i in comm[2:]:
            deps = set(a["deps"][a["dep_begin"][i] : a["dep_begin"][i + 1]])
            assert len(deps) == 2 and max(deps) < i


def test_modified_bruck_drops_the_final_rotation() -> None:
    P, r = 13, 3
    std = collkit.generate_rank(f"alltoall:bruck(r={r})", P, 5, 1).arrays()
    mod = collkit.generate_rank(f"alltoall:bruck_modified(r={r})", P, 5, 1).arrays()
    # The same messages (lengths), in the opposite direction.
    std_sends = std["kind"] == SEND
    mod_sends = mod["kind"] == SEND
    assert list(std["len"][std_sends]) == list(mod["len"][mod_sends])
    assert list((std["peer"][std_sends] - 5) % P) == list((5 - mod["peer"][mod_sends]) % P)
    # No copy into `out` after the first message, and one scratch buffer fewer.
    first_send = int(np.flatnonzero(mod_sends)[0])
    after = np.arange(len(mod["kind"])) > first_send
    out_copies_std = int(((std["kind"] == COPY) & (std["buf"] == 1)).sum())
    assert out_copies_std == P  # the inverse rotation: one copy per block
    n_std = len(collkit.generate_rank(f"alltoall:bruck(r={r})", P, 5, 1).scratch)
    n_mod = len(collkit.generate_rank(f"alltoall:bruck_modified(r={r})", P, 5, 1).scratch)
    assert n_mod == n_std - 1
    # in `out`, the modified variant only unpacks received blocks after the reflection
    unpack_srcs = mod["src"][after & (mod["kind"] == COPY) & (mod["buf"] == 1)]
    assert (unpack_srcs != 0).all()  # nothing read from `in` after the reflection


def test_steps_of_one_round_overlap() -> None:
    # r = P: one round of P-1 single-block steps, all independent: no send waits on a receive.
    a = collkit.generate_rank("alltoall:bruck(r=6)", 6, 0, 1).arrays()
    kinds = a["kind"]
    for i in np.flatnonzero(kinds == SEND):
        deps = a["deps"][a["dep_begin"][i] : a["dep_begin"][i + 1]]
        assert all(kinds[d] != RECV for d in deps)


# ---- numC and numD: the poster's closed forms, the step list and the schedules ---------------


def check_poster_against_schedules(max_P: int) -> None:
    """For each P <= max_P and r in [2, P]: numC and the numD of every step from the poster's
    formulas equal the messages of the generated schedule (rank 0; counts do not depend on the
    rank, checked below)."""
    algos: dict[int, collkit.Algorithm] = {}
    for P in range(2, max_P + 1):
        for r in range(2, P + 1):
            if r not in algos:
                algos[r] = collkit.Algorithm(f"alltoall:bruck(r={r})")
            c = bruck.schedule_counts(algos[r], P)
            poster = bruck._poster_steps(P, r)
            assert c.num_c == bruck.poster_num_c(P, r) == len(poster), (P, r)
            assert c.num_d == tuple(int(v) for v in poster), (P, r)


def test_poster_counts_match_schedules_every_P_to_160_every_r() -> None:
    check_poster_against_schedules(160)


@pytest.mark.slow
def test_poster_counts_match_schedules_every_P_to_512_every_r_slow() -> None:
    check_poster_against_schedules(512)


def test_poster_totals_match_step_list_every_P_to_512_every_r() -> None:
    """numC and total numD, closed forms against the generators' step list, every P <= 512 and
    r <= P (the per-message check against whole schedules is the slow test above)."""
    for P in range(1, 513):
        for r in range(2, max(2, P) + 1):
            assert bruck.step_counts(P, r) == (
                bruck.poster_num_c(P, r),
                bruck.poster_num_d_total(P, r),
            ), (P, r)


def test_counts_are_the_same_on_every_rank_and_both_variants() -> None:
    for P, r in ((13, 3), (31, 4), (64, 8), (100, 10)):
        ref = bruck.schedule_counts(f"alltoall:bruck(r={r})", P)
        for rank in (1, P // 2, P - 1):
            for name in BRUCKS:
                assert bruck.schedule_counts(f"{name}(r={r})", P, rank) == ref


def test_step_list_matches_poster_per_step() -> None:
    for P in (5, 64, 100, 243, 511):
        for r in (2, 3, 7, bruck.sqrt_rule(P), P):
            for x, z, dist, blocks in bruck.bruck_steps(P, r):
                assert dist == z * r**x < P
                assert blocks == bruck.poster_num_d(P, r, x, z)
                # and by brute force over the block indices
                assert blocks == sum(1 for i in range(P) if (i // r**x) % r == z)


def test_known_values() -> None:
    # r = 2: ceil(lg P) steps of about P/2 blocks; r = P: the spread-out count P-1 of each.
    assert bruck.poster_num_c(1024, 2) == 10
    assert bruck.poster_num_d_total(1024, 2) == 10 * 512
    assert bruck.poster_num_c(100, 100) == bruck.poster_num_d_total(100, 100) == 99
    assert bruck.poster_num_c(1, 2) == 0 and bruck.poster_num_d_total(1, 2) == 0


def test_poster_printed_ranges_overcount() -> None:
    """The poster prints 0 <= z <= r and -1 <= x <= w; taken literally the form counts blocks
    that never move (z = 0) and phantom steps (z = r), so the sum is wrong. Only x in [0, w),
    z in [1, r) are steps (docs/alltoall.md)."""
    P, r = 100, 4
    w = bruck.rounds(P, r)
    literal = sum(bruck.poster_num_d(P, r, x, z) for x in range(0, w) for z in range(0, r + 1))
    assert literal != bruck.poster_num_d_total(P, r)


def test_float_log_w_is_sometimes_one_too_many_and_the_form_survives_it() -> None:
    """ceil(log P / log r) in floating point overshoots for P = 125, r = 5 and P = 216, r = 6
    (P <= 512); for an exact power the formula w(r-1) - floor((r^w - P) / r^(w-1)) still gives the
    right numC with the overshot w (the extra round loses all its r-1 steps)."""
    wrong = [
        (P, r)
        for P in range(2, 513)
        for r in range(2, P + 1)
        if bruck.poster_rounds_float(P, r) != bruck.rounds(P, r)
    ]
    assert wrong == [(125, 5), (216, 6)]
    for P, r in wrong:
        w = bruck.poster_rounds_float(P, r)
        assert bruck.poster_num_c(P, r, w=w) == bruck.poster_num_c(P, r)


# ---- choosing r -----------------------------------------------------------------------------


def test_auto_is_the_model_minimum() -> None:
    for P in (2, 3, 17, 64, 300, 1024):
        for N in (0, 8, 1024, 65536, 1 << 22):
            got = bruck.choose_r(P, N)["r_model"]
            times = {r: bruck.model_seconds(P, r, N) for r in range(2, max(2, P) + 1)}
            assert times[got] == min(times.values()), (P, N)
            assert got == min(r for r, t in times.items() if t == times[got])


def test_auto_moves_from_small_r_to_large_r_as_blocks_grow() -> None:
    P = 1024
    small = bruck.choose_r(P, 1)["r_model"]
    large = bruck.choose_r(P, 1 << 24)["r_model"]
    assert small == 2  # start-ups dominate: fewest steps
    # bandwidth dominates: each block sent once (r = P-1 ties with r = P: P-1 steps, P-1 blocks)
    assert large >= P - 1 and bruck.step_counts(P, large) == (P - 1, P - 1)
    assert bruck.resolved_radix("alltoall:bruck(r=auto)", P, 1, 1) == small
    assert bruck.resolved_radix("alltoall:bruck(r=auto)", P, 1 << 21, 8) == large


def test_auto_generates_the_chosen_radix() -> None:
    P, count = 40, 512
    r = bruck.resolved_radix("alltoall:bruck(r=auto)", P, count)
    a = collkit.generate_rank("alltoall:bruck(r=auto)", P, 0, count).arrays()
    b = collkit.generate_rank(f"alltoall:bruck(r={r})", P, 0, count).arrays()
    assert (a["len"] == b["len"]).all() and (a["peer"] == b["peer"]).all()
    verified("alltoall:bruck_modified(r=auto)", P, 2)


def test_sqrt_rule() -> None:
    assert [bruck.sqrt_rule(P) for P in (1, 2, 4, 5, 64, 65, 4096)] == [2, 2, 2, 3, 8, 9, 64]
    assert all(bruck.sqrt_rule(P) == max(2, math.ceil(math.sqrt(P))) for P in range(1, 5000))


# ---- bad input: a clear error, never a crash -----------------------------------------------


@pytest.mark.parametrize("r", ["0", "1", "-3", "x", "2.5", "auto2", "99999999999", ""])
def test_bad_radix_is_a_name_error(r: str) -> None:
    for name in BRUCKS:
        with pytest.raises(collkit.CollkitError):
            collkit.generate(f"{name}(r={r})", 4, 1)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12))
def test_hostile_radix_text(text: str) -> None:
    try:
        s = collkit.generate_rank(f"alltoall:bruck(r={text})", 5, 2, 1)
    except collkit.CollkitError:
        return
    assert s is not None  # it parsed: it must be "auto" or an integer >= 2


@settings(max_examples=100, deadline=None)
@given(st.integers(-5, 100), st.integers(-(2**40), 2**40), st.integers(-5, 10**7))
def test_counting_helpers_reject_bad_input(P: int, r: int, N: int) -> None:
    try:
        bruck.model_seconds(P, r, N)
        bruck.poster_num_c(P, r)
    except collkit.CollkitError:
        assert P < 1 or r < 2 or r > 2**31 or N < 0


# ---- the simulator (skipped where collkit.simulate is not available) ------------------------

needs_simulator = pytest.mark.skipif(
    not hasattr(collkit, "simulate"), reason="the simulator (collkit.simulate) is not here"
)
LOGGP = {"model": "loggp", "L": "1.5us", "o": "300ns", "g": "300ns", "G": "0.1ns"}


@needs_simulator
@pytest.mark.parametrize("name", BRUCKS)
def test_simulated_messages_and_bytes_are_numc_and_numd(name: str) -> None:
    P, r, N = 50, 4, 24
    res = collkit.simulate(f"{name}(r={r})", P, count=N, elem_size=1, **LOGGP)  # type: ignore[attr-defined]
    num_c, num_d = bruck.step_counts(P, r)
    assert res.messages == P * num_c
    assert res.bytes_sent == P * num_d * N


@needs_simulator
def test_simulated_tradeoff_of_the_poster() -> None:
    """Latency-bound (tiny blocks): r = 2 beats the spread-out; bandwidth-bound (large blocks):
    the spread-out beats r = 2 ([Fan 2022]'s trade-off), under LogGP."""
    P = 64

    def t(name: str, N: int) -> float:
        sim = collkit.simulate(name, P, count=N, elem_size=1, **LOGGP)  # type: ignore[attr-defined]
        return float(sim.makespan)

    assert t("alltoall:bruck(r=2)", 8) < t("alltoall:linear", 8)
    assert t("alltoall:linear", 1 << 20) < t("alltoall:bruck(r=2)", 1 << 20)


@needs_simulator
def test_choose_r_simulated_is_the_simulated_minimum() -> None:
    c = bruck.choose_r_simulated(30, 512, **LOGGP)
    times = c["times_ns"]
    assert c["r_simulated"] in times and times[c["r_simulated"]] == min(times.values())
    assert c["r_model"] in times and c["r_sqrt"] in times
