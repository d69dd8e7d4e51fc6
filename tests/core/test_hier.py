"""Node-aware algorithms: the placement of ranks on nodes, carried in the
schedule's header; allreduce:hier and alltoall:bruck_local composed from named algorithms on
node groups, proven by the verifier over sweeps of P and ranks per node in both orders; the
simulator's topology taking its node size from the placement."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import collkit
from collkit import io
from collkit.errors import AlgorithmNameError, InvalidArgumentError, UnsupportedError
from collkit.simulate import simulate_file
from conftest import QUICK_P, up_to

HIER = [
    "allreduce:hier",  # reduce:binomial, allreduce:rd, bcast:binomial
    "allreduce:hier(intra=reduce:knomial(k=3),inter=allreduce:ring,bcast=bcast:knomial(k=3))",
    "allreduce:hier(intra=allreduce:rd,inter=allreduce:rd)",  # [Ruefenacht 2017]'s on-node stage
    "allreduce:hier(inter=allreduce:hier(inter=allreduce:rabenseifner))",  # nested
]
BRUCK_LOCAL = ["alltoall:bruck_local", "alltoall:bruck_local(r=3)", "alltoall:bruck_local(r=auto)"]
ALLGATHER = ["allgather:hier", "allgather:hier(gather=gather:linear,inter=allgather:ring)"]
P_SWEEP = up_to(QUICK_P, 32)


def _rpns(P: int) -> list[int]:
    return sorted({1, 2, 3, 4, max(1, P // 2), P})


def _verify(name: str, P: int, placement: collkit.Placement, count: int) -> bool:
    """Verify, as the algorithm claims for this placement; False when it refuses the problem."""
    algo = collkit.Algorithm(name)
    try:
        s = algo.generate(P, count, placement=placement)
    except UnsupportedError:
        return False
    comm = algo.needs_commutative(placement)
    r = collkit.verify(s, commutative=comm)
    assert r.ok, (name, P, placement, r.summary())
    if algo.collective == "allgather":  # MPI_IN_PLACE: the input is the rank's block of out
        r = collkit.verify(s, in_place=True)
        assert r.ok, (name, P, placement, "in place", r.summary())
    if not comm:
        assert r.consistent_noncommutative, (name, P, placement)
    return True


@pytest.mark.parametrize("name", HIER + BRUCK_LOCAL + ALLGATHER)
@pytest.mark.parametrize("order", ["contiguous", "round_robin"])
def test_verified_over_P_and_ranks_per_node(name: str, order: str) -> None:
    ran = 0
    for P in P_SWEEP:
        for rpn in _rpns(P):
            for count in (0, 3):
                ran += _verify(name, P, collkit.Placement(rpn, order), count)
    assert ran > len(P_SWEEP)  # most combinations run, not all refused


def test_hier_runs_where_rpn_does_not_divide_P_and_claims_rank_order() -> None:
    # Contiguous, uneven nodes (4, 4, 2): still rank order, so non-commutative ops are fine.
    a = collkit.Algorithm("allreduce:hier")
    place = collkit.Placement(4)
    assert not a.needs_commutative(place)
    r = collkit.verify(a.generate(10, 2, placement=place), commutative=False)
    assert r.ok and r.consistent_noncommutative


def test_round_robin_nodes_break_rank_order_so_a_commutative_op_is_claimed() -> None:
    a = collkit.Algorithm("allreduce:hier")
    place = collkit.Placement(4, "round_robin")
    assert a.needs_commutative(place)
    s = a.generate(12, 2, placement=place)
    assert collkit.verify(s, commutative=True).ok
    # The claim is needed: in rank order the node groups {0,3,6,9}, ... do not reduce alike.
    assert not collkit.verify(s, commutative=False).ok


def test_the_parts_claims_carry_through() -> None:
    place = collkit.Placement(4)
    assert collkit.Algorithm("allreduce:hier(inter=allreduce:rm(a2))").needs_commutative(place)
    assert collkit.Algorithm("allreduce:hier(inter=allreduce:ring)").needs_commutative(place)
    assert not collkit.Algorithm("allreduce:hier(inter=allreduce:rabenseifner)").needs_commutative(
        place
    )


def test_hier_sends_fewer_messages_between_nodes_than_flat() -> None:
    place = collkit.Placement(8)
    P = 64
    for name, flat in (
        ("allreduce:hier", "allreduce:rd"),
        ("alltoall:bruck_local", "alltoall:bruck"),
    ):

        def crossing(s: collkit.Schedule) -> int:
            a = s.arrays()
            send = a["kind"] == 0
            return int(np.sum(a["rank"][send] // 8 != a["peer"][send] // 8))

        h = crossing(collkit.generate(name, P, 4, placement=place))
        f = crossing(collkit.generate(flat, P, 4))
        assert h < f, (name, h, f)


def test_hier_of_one_node_and_of_one_rank_per_node() -> None:
    # rpn = P: only the intra and bcast parts; rpn = 1: only the inter part.
    one_node = collkit.generate("allreduce:hier", 8, 2, placement=collkit.Placement(8))
    a = one_node.arrays()
    assert one_node.rpn == 8 and int(np.sum(a["kind"] == 0)) == 7 + 7  # reduce + bcast trees
    per_rank = collkit.generate("allreduce:hier", 8, 2, placement=collkit.Placement(1))
    rd = collkit.generate("allreduce:rd", 8, 2)
    assert int(np.sum(per_rank.arrays()["kind"] == 0)) == int(np.sum(rd.arrays()["kind"] == 0))


def test_node_aware_algorithms_need_the_placement() -> None:
    for name in ("allreduce:hier", "alltoall:bruck_local", "allgather:hier"):
        a = collkit.Algorithm(name)
        assert a.needs_placement
        with pytest.raises(UnsupportedError, match="--rpn"):
            a.generate(8, 1)
    assert not collkit.Algorithm("allreduce:rd").needs_placement


def test_restrictions_are_clear_errors() -> None:
    with pytest.raises(UnsupportedError, match="same number of ranks"):
        collkit.generate("alltoall:bruck_local", 10, 1, placement=collkit.Placement(4))
    with pytest.raises(UnsupportedError, match="same number of ranks"):
        collkit.generate(
            "allreduce:hier(intra=allreduce:rd)", 10, 1, placement=collkit.Placement(4)
        )
    # A part that cannot run on its group says which part and on how many ranks.
    with pytest.raises(InvalidArgumentError, match="inter allreduce:rm\\(a4\\) on 3 ranks"):
        collkit.generate(
            "allreduce:hier(inter=allreduce:rm(a4))", 12, 1, placement=collkit.Placement(4)
        )
    with pytest.raises(InvalidArgumentError):
        collkit.Placement(0)
    with pytest.raises(InvalidArgumentError, match="rank order"):
        collkit.Placement(4, "diagonal")


@pytest.mark.parametrize(
    ("name", "where", "what"),
    [
        ("allreduce:hier(intra=bcast:linear)", 21, "not a bcast one"),
        ("allreduce:hier(intra=reduce:nope)", 28, "unknown algorithm 'nope'"),
        ("allreduce:hier(inter=allreduce:ring(seg=zz))", 36, "takes a size"),
        ("allreduce:hier(intra=4)", 15, "takes a reduce or allreduce algorithm"),
        ("allreduce:rd(k=reduce:binomial)", 15, "unknown parameter 'k'"),
        ("allreduce:rm(reduce:binomial)", 13, "not an algorithm name"),
        ("allreduce:hier(intra=reduce:binomial", 36, "expected ',' or ')'"),
        ("allreduce:hier(intra=reduce:binomial(k=2))", 37, "unknown parameter 'k'"),
        ("allreduce:hier(reduce:binomial=3)", 30, "cannot be a parameter name"),
    ],
)
def test_nested_name_errors_point_into_the_outer_name(name: str, where: int, what: str) -> None:
    with pytest.raises(AlgorithmNameError) as e:
        collkit.Algorithm(name)
    msg = str(e.value)
    assert what in msg, msg
    caret = msg.splitlines()[-1]
    assert caret.index("^") - 2 == where, msg


def test_nesting_is_bounded() -> None:
    name = "allreduce:hier(inter=" * 12 + "allreduce:rd" + ")" * 12
    with pytest.raises(AlgorithmNameError, match="nest at most"):
        collkit.Algorithm(name)


def test_canonical_names_nest() -> None:
    a = collkit.Algorithm(
        "allreduce:hier( intra = reduce:binomial , inter=allreduce:rm( a4 ), bcast=bcast:binomial)"
    )
    assert a.canonical == "allreduce:hier(inter=allreduce:rm(a4))"
    assert a.params["inter"] == "allreduce:rm(a4)"
    assert collkit.Algorithm(a.canonical) == a
    k = next(p for p in collkit.Algorithm("reduce:knomial").spec["params"] if p["name"] == "k")
    name = f"allreduce:hier(intra=reduce:knomial(k={k['default']}))"
    assert collkit.Algorithm(name).canonical == "allreduce:hier(intra=reduce:knomial)"


@pytest.mark.parametrize("fmt", io.FORMATS)
def test_formats_carry_the_placement(fmt: io.Format) -> None:
    s = collkit.generate(
        "alltoall:bruck_local(r=3)", 12, 2, placement=collkit.Placement(3, "round_robin")
    )
    back = io.loads(io.dumps(s, fmt), fmt)
    assert back == s and back.rpn == 3 and back.order == "round_robin"


def test_flat_schedules_and_old_files_have_no_placement() -> None:
    s = collkit.generate("allreduce:rd", 4, 1)
    assert s.rpn == 0 and "placement" not in io.to_text(s) and "placement" not in io.to_json(s)
    with pytest.raises(collkit.ScheduleFormatError, match="rank order"):
        io.from_text(io.to_text(s).replace("root 0\n", "root 0\nplacement 2 diagonal\n"))
    with pytest.raises(collkit.ScheduleFormatError, match="placement"):
        io.from_json(io.to_json(s).replace('"root": 0,', '"root": 0, "placement": {"rpn": 2},'))


def test_simulated_topology_takes_the_node_size_from_the_placement() -> None:
    # 16 ranks on 2 nodes; messages between nodes pay 2 hops x 1 us, within a node 10 ns.
    topo = "fattree(k=2,hop=1us,intra=10ns)"
    place = collkit.Placement(8)

    def sim(name: str, placement: collkit.Placement) -> collkit.SimResult:
        return collkit.simulate(
            name, 16, count=1, alpha="100ns", topology=topo, placement=placement
        )

    local = sim("alltoall:bruck_local", place)
    flat = sim("alltoall:bruck", place)
    assert local.topology.ranks_per_node == 8
    # Bruck's critical path crosses nodes in every round (distances 1, 2, 4, 8); the local one
    # in its one inter-node round.
    assert local.makespan < flat.makespan - 2000
    # rd with contiguous nodes of 8 crosses only in its last stage, with nodes of 2 in three.
    rd = sim("allreduce:rd", place)
    assert sim("allreduce:rd", collkit.Placement(2)).makespan > rd.makespan + 2000
    # A saved schedule brings its placement to the simulator: same answer.
    s = collkit.generate("alltoall:bruck_local", 16, 1, placement=place)
    assert collkit.simulate(s, alpha="100ns", topology=topo).makespan == local.makespan


def test_hier_wins_where_the_nodes_links_are_shared() -> None:
    # Large vectors with links that carry one message at a time: flat rd sends 8 vectors out of
    # each node in its last stage through one injection link, hier one.
    place = collkit.Placement(8)

    def sim(name: str) -> float:
        return collkit.simulate(
            name,
            16,
            bytes="64KiB",
            alpha="1us",
            beta="0.1ns",
            topology="fattree(k=2,hop=1us,link=1ns)",
            placement=place,
        ).makespan

    assert sim("allreduce:hier") < 0.5 * sim("allreduce:rd")


def test_a_topology_node_size_that_disagrees_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="one node size"):
        collkit.simulate(
            "allreduce:hier",
            16,
            topology="fattree(k=2,hop=1us,rpn=4)",
            placement=collkit.Placement(8),
        )
    s = collkit.generate("allreduce:hier", 16, 1, placement=collkit.Placement(8))
    with pytest.raises(InvalidArgumentError, match="one node size"):
        collkit.simulate(s, topology="fattree(k=2,hop=1us,rpn=4)")
    # The same number twice is fine.
    collkit.simulate(s, topology="fattree(k=2,hop=1us,rpn=8)")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "collkit", *args], capture_output=True, text=True, timeout=120
    )


def test_cli_placement() -> None:
    r = _cli("verify", "allreduce:hier", "-P", "1..20", "--rpn", "4", "--order", "round_robin")
    assert r.returncode == 0 and "all verified: 20 of 20" in r.stdout.replace("\n", " "), r.stdout
    r = _cli("verify", "allreduce:hier", "-P", "8")
    assert r.returncode == 2 and "--rpn" in r.stderr
    r = _cli("verify", "allreduce:rd", "-P", "8", "--order", "rr")
    assert r.returncode == 2 and "--order needs --rpn" in r.stderr
    r = _cli("verify", "allreduce:rd", "-P", "8", "--rpn", "0")
    assert r.returncode == 2 and "ranks per node" in r.stderr
    r = _cli("show", "alltoall:bruck_local", "-P", "4", "--rpn", "2", "--rank", "0")
    assert r.returncode == 0 and "placement 2 contiguous" in r.stdout
    r = _cli(
        "simulate",
        "allreduce:hier",
        "-P",
        "64",
        "--rpn",
        "16",
        "--topology",
        "fattree(k=4,hop=1us,rpn=8)",
    )
    assert r.returncode == 2 and "one node size" in r.stderr


@pytest.mark.slow
@pytest.mark.parametrize("name", HIER[:3] + BRUCK_LOCAL[:2] + ALLGATHER[:1])
def test_every_P_up_to_256_and_a_sample_to_4096(name: str) -> None:
    # All-to-all and allgather hold P^2 blocks: their sample stops at 1024.
    sample = [509, 1000, 1024] + ([2048, 4096] if name.startswith("allreduce") else [])
    for P in [*range(1, 257), *sample]:
        for rpn in sorted({1, 2, 3, 4, 16, 24, 64, P}):
            for order in ("contiguous", "round_robin"):
                _verify(name, P, collkit.Placement(rpn, order), 1 if P > 256 else 2)


@pytest.mark.parametrize("suffix", [".txt", ".json", ".goal"])
def test_a_saved_schedule_streams_with_its_placement(tmp_path: Path, suffix: str) -> None:
    topo = "fattree(k=2,hop=1us,intra=10ns)"
    s = collkit.generate("alltoall:bruck_local", 16, 1, placement=collkit.Placement(8))
    path = tmp_path / f"s{suffix}"
    io.save(s, path)
    streamed = simulate_file(path, alpha="100ns", topology=topo)  # type: ignore[arg-type]
    whole = collkit.simulate(s, alpha="100ns", topology=topo)
    assert streamed.makespan == whole.makespan
    assert streamed.topology.ranks_per_node == 8
    with pytest.raises(InvalidArgumentError, match="one node size"):
        simulate_file(path, topology="fattree(k=2,hop=1us,rpn=4)")


def test_bench_lists_split_at_top_level_commas_and_han_is_forced_by_priority() -> None:
    from collkit.cli._common import split_names
    from collkit.mpi import OpenMpi

    assert split_names(
        "rd, allreduce:hier(intra=reduce:binomial,inter=allreduce:rm(a2,a2)),native"
    ) == [
        "rd",
        "allreduce:hier(intra=reduce:binomial,inter=allreduce:rm(a2,a2))",
        "native",
    ]
    ompi = OpenMpi(mpicxx="mpicxx", mpiexec="mpirun", version="Open MPI 4.1.4")
    assert ompi.force_env("allreduce", "ompi:han") == {"OMPI_MCA_coll_han_priority": "100"}
    with pytest.raises(InvalidArgumentError):
        ompi.force_env("alltoall", "ompi:han")  # coll/han has no all-to-all
