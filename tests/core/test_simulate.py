"""The simulator: closed forms of [Ruefenacht 2017], hand-computed tiny cases for every model,
the critical path and bad input (noise: test_noise.py; topologies: test_topology.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import collkit
from builder import KIND, Ops, RankWriter, empty
from collkit.simulate import simulate


def two_ranks(
    n_elems: int = 10, elem_size: int = 1, P: int = 2
) -> tuple[Ops, RankWriter, RankWriter]:
    ops = empty("allreduce", P, max(n_elems, 1))
    ops.elem_size = elem_size
    return ops, RankWriter(ops, 0), RankWriter(ops, 1)


def local(w: RankWriter, kind: str, ns: int, deps: list[int] | None = None) -> int:
    return w._add(kind=KIND[kind], len=ns, deps=deps or [])


def ping(n: int = 80) -> collkit.Schedule:
    """rank 0 sends n bytes to rank 1."""
    ops, r0, r1 = two_ranks(n)
    r0.send(1, "out", 0, n)
    r1.recv(0, "out", 0, n)
    return ops.build()


# --- closed forms ([Ruefenacht 2017] Eq. 1 and 2)
# -------------------------------------------------------


@pytest.mark.parametrize("P", [2**k for k in range(1, 11)])
@pytest.mark.parametrize("nbytes", [8, 4096])
def test_rd_postal_equals_eq1_for_powers_of_two(P: int, nbytes: int) -> None:
    alpha, beta, gamma = 1340.0, 0.37, 0.11
    r = simulate(
        "allreduce:rd", P, bytes=nbytes, model="postal", alpha=alpha, beta=beta, gamma=gamma
    )
    expected = math.log2(P) * (alpha + nbytes * beta + nbytes * gamma)  # Eq. 1
    assert r.makespan == pytest.approx(expected, rel=1e-12)
    assert np.allclose(r.finish, expected, rtol=1e-12)  # every rank finishes together


@pytest.mark.parametrize("P", [3, 5, 6, 7, 12, 13, 31, 33, 100, 255, 257, 1000])
def test_rd_postal_small_n_equals_eq2_off_powers_of_two(P: int) -> None:
    alpha = 500.0
    r = simulate("allreduce:rd", P, bytes=8, model="postal", alpha=alpha)
    assert r.makespan == pytest.approx(alpha * (math.floor(math.log2(P)) + 2))  # Eq. 2


@pytest.mark.parametrize("P", [3, 6, 13, 100])
def test_rd_postal_with_bandwidth_and_reduction_off_powers_of_two(P: int) -> None:
    alpha, beta, gamma, n = 700.0, 0.5, 0.25, 1024
    r = simulate("allreduce:rd", P, bytes=n, model="postal", alpha=alpha, beta=beta, gamma=gamma)
    # the registered cost (coefficients of alpha, beta, gamma) under the postal model
    c = collkit.Algorithm("allreduce:rd").cost(P, n)
    assert r.makespan == pytest.approx(c["alpha"] * alpha + c["beta"] * beta + c["gamma"] * gamma)
    # the two extra message stages and one extra reduction of the collapse / expand
    lg = math.floor(math.log2(P))
    assert r.makespan == pytest.approx((lg + 2) * (alpha + n * beta) + (lg + 1) * n * gamma)


@pytest.mark.parametrize("P", [2, 8, 64])
def test_rd_pipelined_postal_is_eq3_with_one_send_per_stage(P: int) -> None:
    ap, ar, beta, base, n = 500.0, 100.0, 0.4, 10.0, 8
    r = simulate(
        "allreduce:rd",
        P,
        bytes=n,
        model="pipelined-postal",
        alpha_p=ap,
        alpha_r=ar,
        beta=beta,
        reduce_base=base,
    )
    assert r.makespan == pytest.approx(math.log2(P) * (ap + 1 * (ar + n * beta) + base))


def test_messages_and_bytes_are_counted() -> None:
    r = simulate("allreduce:rd", 8, bytes=64)
    assert r.messages == 8 * 3 and r.bytes_sent == 8 * 3 * 64
    r = simulate("allreduce:rd", 6, bytes=64)
    assert r.messages == 2 + 4 * 2 + 2  # collapse, two stages on 4 ranks, expand


def test_streamed_generator_and_whole_schedule_agree() -> None:
    for P in (1, 7, 13, 130):  # 130: ranks are stored in blocks of 64, with holes
        a = simulate(
            "allreduce:rd",
            P,
            bytes=100,
            model="loggp",
            G=0.3,
            noise="uniform(0,20ns)",
            trials=3,
            seed=5,
        )
        b = simulate(
            collkit.generate("allreduce:rd", P, 13),
            model="loggp",
            G=0.3,
            noise="uniform(0,20ns)",
            trials=3,
            seed=5,
        )
        assert np.array_equal(a.makespans, b.makespans)
        assert np.array_equal(a.finish, b.finish)


@pytest.mark.parametrize("name", ["bcast:binomial", "bcast:knomial(k=3)", "bcast:pipeline(seg=8)"])
def test_tree_bcasts_generate_one_rank_per_program_class(name: str) -> None:
    # Their ranks run a few programs up to relabelling mod P: the generator is asked for one rank
    # of each (programs_read), not for every rank, as P grows.
    for lg in (8, 12, 16):
        r = simulate(name, 1 << lg, bytes=8, model="loggops")
        assert r.programs <= r.programs_read <= 2 * lg + 2
    # And the runs are those of the whole Schedule (every rank read). (A timeline holds the whole
    # Schedule in both: the C++ test test_sim.cpp compares recorded runs from the generator.)
    for P in (37, 100):
        kw: dict[str, object] = dict(
            model="loggops",
            G=0.1,
            S=64,
            noise="exponential(20ns)",
            skew="uniform(0,50ns)",
            topology="fattree(k=2,hop=30ns,link=0.5ns,rpn=1)",
            trials=2,
            seed=3,
        )
        a = simulate(name, P, count=24, root=P // 3, **kw)  # type: ignore[arg-type]
        b = simulate(collkit.generate(name, P, 24, root=P // 3), **kw)  # type: ignore[arg-type]
        assert a.programs_read < P == b.programs_read and a.programs == b.programs
        assert (a.ops, a.messages, a.events) == (b.ops, b.messages, b.events)
        assert np.array_equal(a.makespans, b.makespans)
        assert np.array_equal(a.finish, b.finish)


# --- postal and pipelined postal by hand -------------------------------------------------------


def test_postal_one_message() -> None:
    r = simulate(ping(80), model="postal", alpha=100, beta=1.0)
    assert list(r.finish) == [180.0, 180.0]  # the send completes when its message has arrived


def test_postal_sends_one_message_at_a_time() -> None:
    ops, r0, r1 = two_ranks(80, P=3)
    r2 = RankWriter(ops, 2)
    r0.send(1, "out", 0, 80)
    r0.send(2, "out", 0, 80)
    r1.recv(0, "out", 0, 80)
    r2.recv(0, "out", 0, 80)
    r = simulate(ops.build(), model="postal", alpha=100, beta=1.0)
    assert list(r.finish) == [360.0, 180.0, 360.0]


def test_pipelined_postal_overlaps_sends_as_eq3() -> None:
    b = 3
    ops, r0, _ = two_ranks(80, P=b + 1)
    for q in range(1, b + 1):
        r0.send(q, "out", 0, 80)
        RankWriter(ops, q).recv(0, "out", 0, 80)
    r = simulate(ops.build(), model="pipelined-postal", alpha_p=100, alpha_r=20, beta=1.0)
    # the k-th send leaves the port at k (alpha_r + n beta) and arrives alpha_p later
    assert list(r.finish) == [300.0, 200.0, 300.0, 400.0]
    assert r.makespan == 100 + b * (20 + 80)  # Eq. 3: alpha_p + b (alpha_r + n beta)


def test_local_ops_cost_and_run_one_at_a_time() -> None:
    ops, r0, _ = two_ranks(10, P=2)
    ops.elem_size = 8
    r0.reduce("out", 0, "in", 0, 10, True)  # 80 bytes
    r0.copy("out", 0, "in", 0, 10)
    local(r0, "compute", 100)
    local(r0, "sleep", 7)
    r = simulate(ops.build(), model="postal", gamma=0.5, reduce_base=10, copy_beta=0.25)
    assert r.finish[0] == (10 + 40) + 20 + 100 + 7
    assert r.finish[1] == 0.0


def test_an_op_with_many_successors_releases_them_all() -> None:
    ops, r0, r1 = two_ranks(1)
    root = local(r0, "compute", 10)
    for k in range(5):  # five successors: more than the two kept inline
        local(r0, "compute", 10 * (k + 1), deps=[root])
    s = r0.send(1, "out", 0, 1, deps=[root])
    r1.recv(0, "out", 0, 1)
    r = simulate(ops.build(), model="postal", alpha=100)
    # the CPU runs the five computes one after another: 10 + (10 + 20 + 30 + 40 + 50)
    assert r.finish[0] == 160 and r.finish[1] == 110 and s == 6


# --- LogP, LogGP, LogGOPS by hand ---------------------------------------------------------------


def test_logp_ping_pong_is_two_times_2o_plus_L() -> None:
    ops, r0, r1 = two_ranks(1)
    s = r0.send(1, "out", 0, 1)
    r0.recv(1, "out", 0, 1, deps=[s])
    rr = r1.recv(0, "out", 0, 1)
    r1.send(0, "out", 0, 1, deps=[rr])
    r = simulate(ops.build(), model="logp", L=500, o=100, g=150)
    assert r.finish[1] == 700 + 100  # recv done at o + L + o, then its send's o
    assert r.finish[0] == 2 * (2 * 100 + 500)


def test_logp_gap_spaces_consecutive_sends() -> None:
    ops, r0, r1 = two_ranks(1, P=3)
    r0.send(1, "out", 0, 1)
    r0.send(2, "out", 0, 1)
    r1.recv(0, "out", 0, 1)
    RankWriter(ops, 2).recv(0, "out", 0, 1)
    r = simulate(ops.build(), model="logp", L=500, o=100, g=150)
    assert list(r.finish) == [250.0, 700.0, 150 + 100 + 500 + 100]


def test_loggp_charges_G_per_byte_after_the_first() -> None:
    n = 101
    ops, r0, r1 = two_ranks(n, P=3)
    r0.send(1, "out", 0, n)
    r0.send(2, "out", 0, n)
    r1.recv(0, "out", 0, n)
    RankWriter(ops, 2).recv(0, "out", 0, n)
    r = simulate(ops.build(), model="loggp", L=500, o=100, g=150, G=2)
    gap = 150 + (n - 1) * 2  # the second send waits for g + (n-1) G
    assert r.finish[1] == 100 + 500 + 100 + (n - 1) * 2
    assert r.finish[2] == gap + 100 + 500 + 100 + (n - 1) * 2
    assert r.finish[0] == gap + 100


def test_loggops_eager_below_S_and_rendezvous_above() -> None:
    n = 101
    common = {"L": 500, "o": 100, "g": 150, "G": 2, "O": 1}
    eager = simulate(ping(n), model="loggops", S=1000, **common)
    assert eager.finish[0] == 100 + (n - 1) * 1  # the sender's CPU: o + (n-1) O
    assert eager.finish[1] == 100 + 500 + 100 + max((n - 1) * 1, (n - 1) * 2)
    rdv = simulate(ping(n), model="loggops", S=50, **common)
    # A rendezvous send completes when its message meets the posted receive: when the receiver
    # starts processing it (o + L), as in LogGOPSim; the receive ends as the eager one does.
    assert rdv.finish[0] == 100 + 500
    assert rdv.finish[1] == eager.finish[1]


def test_loggops_rendezvous_send_waits_for_a_late_receive() -> None:
    n = 101
    ops, r0, r1 = two_ranks(n)
    r0.send(1, "out", 0, n)
    late = local(r1, "sleep", 2000)
    r1.recv(0, "out", 0, n, deps=[late])
    sched = ops.build()
    # The message arrives at 600 but rank 1's CPU sleeps until 2000, then spends o on it; the
    # receive is posted at 2000 and meets the message then: the rendezvous send completes at
    # 2000 (LogGOPSim's rule), the receive at 2100.
    r = simulate(sched, model="loggops", L=500, o=100, g=150, S=50)
    assert list(r.finish) == [2000.0, 2100.0]
    eager = simulate(sched, model="loggops", L=500, o=100, g=150, S=1000)
    assert list(eager.finish) == [100.0, 2100.0]


def test_logp_ignores_G_O_S() -> None:
    a = simulate(ping(101), model="logp", L=500, o=100, g=150)
    b = simulate(ping(101), model="loggops", L=500, o=100, g=150)
    assert np.array_equal(a.finish, b.finish)


# --- recording: per-op times, messages, critical path ------------------------------------------


def test_critical_path_on_a_known_case() -> None:
    def case(compute1: int) -> tuple[collkit.SimResult, list[tuple[int, int]]]:
        ops, r0, r1 = two_ranks(1)
        c0 = local(r0, "compute", 100)
        r0.send(1, "out", 0, 1, deps=[c0])
        c1 = local(r1, "compute", compute1)
        rv = r1.recv(0, "out", 0, 1)
        r1.reduce("out", 0, "in", 0, 1, True, deps=[c1, rv])
        r = simulate(ops.build(), model="postal", alpha=100, timeline=True)
        assert r.critical_path is not None and r.rank_op_begin is not None
        rank = r.op_rank()
        return r, [(int(rank[k]), int(k - r.rank_op_begin[rank[k]])) for k in r.critical_path]

    r, path = case(500)  # rank 1's own compute is the longer way
    assert path == [(1, 0), (1, 2)] and r.makespan == 500
    r, path = case(50)  # the message is: compute, send, recv, reduce
    assert path == [(0, 0), (0, 1), (1, 1), (1, 2)] and r.makespan == 200


def test_critical_path_of_rd_spans_the_run() -> None:
    r = simulate(
        "allreduce:rd", 8, bytes=8, model="pipelined-postal", reduce_base=10, timeline=True
    )
    assert r.critical_path is not None and r.op_start is not None and r.op_end is not None
    cp = r.critical_path
    assert r.op_end[cp[-1]] == r.makespan
    assert r.op_start[cp[0]] == 0.0
    assert np.all(np.diff(r.op_end[cp]) >= 0)
    assert len(set(r.op_rank()[cp])) > 1  # it crosses ranks through messages


def test_recording_across_blocks_of_ranks() -> None:
    r = simulate(
        "allreduce:rd", 100, bytes=8, model="loggp", noise="uniform(0,50ns)", timeline=True
    )
    assert r.op_end is not None and r.op_start is not None and r.critical_path is not None
    assert np.nanmax(r.op_end) == r.makespan and not np.isnan(r.op_end).any()
    rank = r.op_rank()
    for q in range(r.P):  # each rank's last op ends when the rank finishes
        assert r.op_end[rank == q].max() == r.finish[q]
    assert r.op_end[r.critical_path[-1]] == r.makespan
    assert r.msg_send is not None and r.msg_recv is not None
    assert np.all(r.op_rank()[r.msg_send] != r.op_rank()[r.msg_recv])


def test_recorded_messages_and_ops() -> None:
    r = simulate("allreduce:rd", 4, bytes=16, model="postal", alpha=100, beta=1, timeline=True)
    assert r.msg_send is not None and r.msg_arrive is not None and r.msg_depart is not None
    assert len(r.msg_send) == r.messages == 8
    assert np.allclose(r.msg_arrive - r.msg_depart, 116.0)
    assert r.op_start is not None and r.op_end is not None
    assert np.all(r.op_end >= r.op_start)
    assert len(r.op_start) == r.ops


# --- bad input ---------------------------------------------------------------------------------


def test_unmatched_send_and_receive_are_errors() -> None:
    ops, r0, _ = two_ranks(1)
    r0.send(1, "out", 0, 1)
    with pytest.raises(collkit.CollkitError, match="unmatched send"):
        simulate(ops.build())
    ops, _, r1 = two_ranks(1)
    r1.recv(0, "out", 0, 1)
    with pytest.raises(collkit.CollkitError, match=r"stalled.*rank 1 op 0.*unmatched receive"):
        simulate(ops.build())


def test_dependency_cycle_is_an_error() -> None:
    ops, r0, _ = two_ranks(1)
    local(r0, "compute", 1, deps=[1])
    local(r0, "compute", 1, deps=[0])
    with pytest.raises(collkit.CollkitError, match="stalled"):
        simulate(ops.build())


def test_message_larger_than_its_receive_is_an_error() -> None:
    ops, r0, r1 = two_ranks(8)
    r0.send(1, "out", 0, 8)
    r1.recv(0, "out", 0, 4)
    with pytest.raises(collkit.CollkitError, match="receives 4 bytes"):
        simulate(ops.build())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"alpha": -1},
        {"alpha": "-1us"},
        {"alpha": "fast"},
        {"alpha": math.nan},
        {"beta": math.inf},
        {"model": "no-such-model"},
        {"model": "postal", "L": 5},
        {"noise": "gaussian(1ns)"},
        {"noise": "uniform(5ns,1ns)"},
        {"noise": "uniform(1ns)"},
        {"noise": "exponential(-3ns)"},
        {"noise": "lognormal(0,1)"},
        {"noise": "file(/nonexistent/samples.txt)"},
        {"skew": "constant(x)"},
        {"topology": "ring(n=3)"},
        {"topology": "fattree(k=1,hop=1ns)"},
        {"topology": "torus(hop=1ns)"},
        {"trials": 0},
        {"seed": -1},
        {"count": 1, "bytes": 8},
    ],
)
def test_bad_input_raises_a_collkit_error(kwargs: dict[str, object]) -> None:
    with pytest.raises(collkit.CollkitError):
        simulate("allreduce:rd", 4, **kwargs)  # type: ignore[arg-type]


# --- every registered algorithm ------------------------------------------------------------------


@pytest.mark.parametrize("name", [a["name"] for a in collkit.algorithms()])
@pytest.mark.parametrize("model", ["postal", "pipelined-postal", "logp", "loggp", "loggops"])
def test_every_algorithm_simulates_under_every_model(name: str, model: str) -> None:
    for P in (1, 2, 3, 5, 7, 8, 16, 31, 64, 65):
        try:
            bound = collkit.Algorithm(name)
            s = bound.generate(P, 3, 8, 0)
        except collkit.UnsupportedError:
            continue  # e.g. an algorithm for powers of two only
        r = simulate(s, model=model, noise="exponential(10ns)", trials=2, seed=P)
        assert r.ops == s.total_ops
        assert np.all(np.isfinite(r.makespans)) and np.all(r.makespans >= 0)
        assert r.finish.shape == (P,) and r.makespan == r.finish.max()
        assert (r.messages > 0) == (P > 1)


# --- hostile schedules ---------------------------------------------------------------------------


@st.composite
def random_schedules(draw: st.DrawFn) -> collkit.Schedule:
    """Small schedules with arbitrary ops: unmatched messages, bad peers, cycles, negative sizes."""
    P = draw(st.integers(1, 5))
    ops = empty("allreduce", P, 4)
    for r in range(P):
        w = RankWriter(ops, r)
        n = draw(st.integers(0, 6))
        for i in range(n):
            kind = draw(st.sampled_from(list(KIND)))
            deps = draw(st.lists(st.integers(0, i), max_size=2))  # i: a self-dependency
            peer = draw(st.integers(-1, P))
            length = draw(st.integers(-1, 4))
            if kind in ("send", "recv"):
                w._add(kind=KIND[kind], peer=peer, len=length, deps=deps)
            else:
                w._add(kind=KIND[kind], len=length, deps=deps, src=0, buf=1)

    try:
        return ops.build()
    except collkit.CollkitError:
        return collkit.generate("allreduce:rd", P, 1)


@settings(max_examples=300, deadline=None)
@given(random_schedules(), st.sampled_from(["postal", "pipelined-postal", "loggops"]))
def test_hostile_schedules_finish_or_raise_a_clear_error(s: collkit.Schedule, model: str) -> None:
    try:
        r = simulate(s, model=model, S=2, noise="uniform(0,5ns)", skew="uniform(0,10ns)")
    except collkit.CollkitError as e:
        assert str(e)  # a message a user can act on
        return
    assert r.ops == s.total_ops and np.all(np.isfinite(r.finish))
