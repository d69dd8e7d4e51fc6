"""Topologies (core/src/sim/topology.cpp, collkit/sim/topology.py): latency per hop of each kind,
node sizes and placement, congestion on shared links, and the specs read by the core's grammar."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import collkit
from builder import RankWriter, empty
from collkit import io
from collkit.errors import InvalidArgumentError
from collkit.sim import Topology, parse_topology, placed_topology, simulate
from collkit.sim.topology import KINDS


def fan_out(P: int) -> collkit.Schedule:
    ops = empty("allreduce", P, 1)
    r0 = RankWriter(ops, 0)
    for q in range(1, P):
        r0.send(q, "out", 0, 1)
        RankWriter(ops, q).recv(0, "out", 0, 1)
    return ops.build()


def arrivals(topology: str, P: int = 4) -> list[float]:
    r = simulate(fan_out(P), model="pipelined-postal", alpha_p=100, alpha_r=0, topology=topology)
    return [float(x) for x in r.finish[1:]]


def test_topology_latencies() -> None:
    assert arrivals("none") == [100, 100, 100]
    assert arrivals("fattree(k=2,hop=100ns)") == [300, 500, 500]
    assert arrivals("fattree(k=2,hop=100ns,rpn=2,intra=7ns)") == [107, 300, 300]
    assert arrivals("torus(dims=4,hop=10ns)") == [110, 120, 110]
    assert arrivals("torus(dims=2x2,hop=10ns)") == [110, 110, 120]
    assert arrivals("dragonfly(p=1,a=2,hop=10ns,global=1us)") == [130, 1140, 1140]
    assert arrivals("dragonfly(p=2,a=1,hop=10ns)") == [120, 140, 140]


def test_topology_too_small_is_an_error() -> None:
    with pytest.raises(collkit.CollkitError, match="cannot hold"):
        simulate("allreduce:rd", 16, topology="torus(dims=2x2,hop=1ns)")


def test_topology_needs_its_cost_and_each_key_once() -> None:
    with pytest.raises(InvalidArgumentError, match="needs hop=TIME"):
        parse_topology("fattree(k=4)")
    with pytest.raises(InvalidArgumentError, match="'hop' given twice"):
        parse_topology("fattree(k=4,hop=10ns,hop=20ns)")
    r = collkit.simulate("allreduce:rd", 8, topology="fattree(k=2,hop=10ns)")
    assert "topology=fattree(k=2,hop=10ns)" in r.summary()
    assert parse_topology(r.topology.describe()) == r.topology


CONGESTION = (
    "# collkit schedule v1\ncollective barrier\nP 4\ncount 1000\nelem_size 1\nroot 0\n"
    "rank 0 scratch 1000\n  0: send s0[0:1000] to 2\n"
    "rank 1 scratch 1000\n  0: send s0[0:1000] to 3\n"
    "rank 2 scratch 1000\n  0: recv s0[0:1000] from 0\n"
    "rank 3 scratch 1000\n  0: recv s0[0:1000] from 1\n"
)


@pytest.mark.parametrize(
    "topology",
    [
        "none(rpn=2,link=1ns)",  # the two messages share node 0's NIC
        "fattree(k=2,hop=0ns,link=1ns)",  # ... switch 0's up link
        "torus(dims=4,hop=0ns,link=1ns)",  # ... the link from node 1 to node 2
        "dragonfly(p=1,a=2,hop=0ns,link=1ns)",  # ... the global link between the two groups
    ],
)
def test_congestion_messages_share_links(topology: str) -> None:
    s = io.from_text(CONGESTION)
    free = collkit.simulate(
        s, model="postal", alpha=100, topology=topology.replace(",link=1ns", "")
    )
    shared = collkit.simulate(s, model="postal", alpha=100, topology=topology)
    assert free.makespan == 100.0
    # The second message waits until the first has crossed the shared link: 1000 B at 1 ns/B.
    assert shared.makespan == 1100.0 and sorted(shared.finish) == [100.0, 100.0, 1100.0, 1100.0]
    assert "link=1ns" in shared.summary()


def test_congestion_leaves_lone_messages_alone() -> None:
    # Without a shared link the link model changes nothing (messages between different nodes of
    # a torus in different rows).
    topo = "fattree(k=16,hop=50ns,rpn=4)"
    a = collkit.simulate("allreduce:rd", 64, bytes=8, model="loggops", topology=topo)
    b = collkit.simulate(
        "allreduce:rd", 64, bytes=8, model="loggops", topology=topo[:-1] + ",link=0ns)"
    )
    assert a.makespan == b.makespan


def test_fattree_hops_grow_with_the_level_of_the_common_switch() -> None:
    # k = 4: nodes 1-3 share node 0's leaf switch (2 hops), 4-15 its level-2 switch (4 hops), and
    # 16+ meet it only at level 3 (6 hops).
    got = arrivals("fattree(k=4,hop=10ns)", P=20)
    assert got[:3] == [120.0] * 3
    assert got[3:15] == [140.0] * 12
    assert got[15:] == [160.0] * 4


def test_torus_takes_the_shorter_way_round() -> None:
    # A ring of 8 nodes: distances 1, 2, 3, 4, 3, 2, 1 from node 0.
    got = arrivals("torus(dims=8,hop=10ns)", P=8)
    assert got == [110.0, 120.0, 130.0, 140.0, 130.0, 120.0, 110.0]


def test_round_robin_placement_moves_ranks_between_nodes() -> None:
    # rpn=2 with 4 ranks: contiguous puts 0,1 on node 0; round-robin puts 0,2 on node 0. The
    # topology takes the node size and order from the placement.
    def finish(order: str) -> list[float]:
        r = simulate(
            "bcast:linear", 4, bytes=8, model="pipelined-postal", alpha_p=100, alpha_r=0,
            topology="fattree(k=2,hop=100ns,intra=7ns)", placement=collkit.Placement(2, order),
        )  # fmt: skip
        assert r.topology.ranks_per_node == 2 and r.topology.order == order
        return [float(x) for x in r.finish]

    assert finish("contiguous") == [0.0, 107.0, 300.0, 300.0]
    assert finish("round_robin") == [0.0, 300.0, 107.0, 300.0]


def test_placement_and_topology_agree_on_the_node_size() -> None:
    with pytest.raises(InvalidArgumentError, match="rpn=4 disagrees"):
        placed_topology(parse_topology("fattree(k=2,hop=1ns,rpn=4)"), collkit.Placement(2))


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("mesh(hop=1ns)", "unknown kind 'mesh'"),
        ("fattree(4,hop=1ns)", "bad argument '4'"),
        ("fattree(k=4,hop=1ns,p=2)", "bad argument 'p=2'"),
        ("torus(hop=1ns)", "needs dims"),
        ("torus(dims=4xx,hop=1ns)", "must look like 8x8x8"),
        ("fattree(k=1,hop=1ns)", r"k must be in \[2, 2\^31\]"),
        ("fattree(k=two,hop=1ns)", "not an integer"),
        ("fattree(k=2,hop=1ns", r"expected ',' or '\)'"),
    ],
)
def test_bad_topologies_are_clear_errors(spec: str, match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        parse_topology(spec)


def test_the_link_cost_takes_a_bandwidth() -> None:
    assert parse_topology("fattree(k=2,hop=0ns,link=10GB/s)").link == pytest.approx(0.1)
    assert parse_topology("none(rpn=2,link=0.5ns/B)").link == pytest.approx(0.5)


_SPECS = st.builds(
    Topology,
    kind=st.sampled_from(sorted(KINDS)),
    ranks_per_node=st.integers(0, 64),
    intra=st.sampled_from([0.0, 7.0, 1500.0]),
    hop=st.sampled_from([0.0, 10.0, 250.0]),
    global_=st.sampled_from([0.0, 1000.0]),
    k=st.integers(2, 32),
    p=st.integers(1, 8),
    a=st.integers(1, 8),
    dims=st.lists(st.integers(1, 16), min_size=1, max_size=3).map(tuple),
    link=st.sampled_from([0.0, 0.25, 2.0]),
)


@settings(max_examples=300, deadline=None)
@given(_SPECS)
def test_describe_reads_back(t: Topology) -> None:
    # What a kind does not use is left at its default: describe() leaves it out.
    t = Topology(
        kind=t.kind,
        ranks_per_node=t.ranks_per_node,
        intra=t.intra,
        hop=t.hop if t.kind != "none" else 0.0,
        global_=t.global_ if t.kind == "dragonfly" else 0.0,
        k=t.k if t.kind == "fattree" else 2,
        p=t.p if t.kind == "dragonfly" else 1,
        a=t.a if t.kind == "dragonfly" else 1,
        dims=t.dims if t.kind == "torus" else (),
        link=t.link,
    )
    assert parse_topology(t.describe()) == t
