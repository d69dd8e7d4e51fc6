"""`collkit schedules COLLECTIVE` ranks every registered algorithm of any collective by its
simulated makespan under one model (collkit.ranking), allreduce's rm schedules among them."""

from __future__ import annotations

import argparse
import json
import re

import pytest

import collkit
from collkit.algorithms import algorithms
from collkit.cli import main, schedules
from collkit.placement import Placement
from collkit.ranking import rank_algorithms
from collkit.sim import Model, simulate
from collkit.tune.campaign import candidates

LOGGP = ["--model", "loggp", "--L", "1us", "--o", "100ns", "--g", "100ns", "--G", "0.1ns"]


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict[str, object]]:
    assert main(["schedules", *argv, "--json"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _us(rows: list[dict[str, object]]) -> dict[str, float]:
    return {str(r["algorithm"]): float(str(r["sim_us"])) for r in rows}


def test_bcast_ranks_every_registered_algorithm_by_the_time_it_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = _json(capsys, ["bcast", "-P", "1024", "--bytes", "64", "--top", "100"])
    names = [str(r["algorithm"]) for r in rows]
    assert {str(s["name"]) for s in algorithms("bcast")} <= {n.split("(")[0] for n in names}
    assert {"bcast:circ_graph", "bcast:two_tree", "bcast:scatter_rd_allgather"} <= set(names)
    times = [float(str(r["sim_us"])) for r in rows]
    assert times == sorted(times)
    for r in rows:
        assert r["ranked_by"] == "simulation" and r["P"] == 1024 and r["bytes"] == 64
        assert r["rank"] == 1 + sum(t < float(str(r["sim_us"])) - 1e-4 for t in times)
    # the printed time is the simulator's, under the default model and its parameters
    model = Model.make("pipelined-postal", alpha_p="1.34us", alpha_r="0.34us")
    for name in ("bcast:two_tree", "bcast:binomial", "bcast:knomial(k=3)"):
        sim = simulate(name, 1024, count=64, elem_size=1, model=model)
        assert _us(rows)[name] == pytest.approx(float(sim.makespan) / 1e3)


def test_large_bcast_under_loggp_the_pipelined_trees_beat_binomial(
    capsys: pytest.CaptureFixture[str],
) -> None:
    us = _us(_json(capsys, ["bcast", "-P", "64", "--bytes", "1MiB", "--top", "100", *LOGGP]))
    # ceil(lg 64) = 6 whole-message hops of 105 us against pieces pipelined down the trees,
    # or halves / blocks spread and gathered
    for name in (
        "bcast:two_tree",
        "bcast:circ_graph",
        "bcast:scatter_allgather",
        "bcast:scatter_rd_allgather",
    ):
        assert us[name] < us["bcast:binomial"], name
    # at 8 B start-ups decide: the scatter's and the allgather's cost more than one tree
    small = _us(_json(capsys, ["bcast", "-P", "64", "--bytes", "8", "--top", "100", *LOGGP]))
    assert small["bcast:binomial"] <= small["bcast:scatter_allgather"]
    assert small["bcast:binomial"] <= small["bcast:scatter_rd_allgather"]


def test_allreduce_ranks_rm_schedules_and_the_other_algorithms_in_one_ranking(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # P = 8 has 26 rm schedules: --top 100 lists every schedule and every other algorithm
    objs = _json(capsys, ["allreduce", "-P", "8", "--bytes", "8", "--top", "100"])
    by_model = [o for o in objs if o["ranked_by"] == "model"]
    every = [o for o in objs if o["ranked_by"] == "simulation"]
    assert by_model and every
    names = [str(o["algorithm"]) for o in every]
    assert any(n.startswith("allreduce:rm(") for n in names)
    assert len([n for n in names if n.startswith("allreduce:rm")]) == 26
    assert {"allreduce:rabenseifner", "allreduce:swing", "allreduce:bucket(dims=4x2)"} <= set(names)
    times = [float(str(o["sim_us"])) for o in every]
    assert times == sorted(times)
    # the rm rows of the one ranking are the model's best schedules, with the model ranking's
    # simulated time and family
    sims = {str(o["algorithm"]): o for o in by_model}
    for o in every:
        if str(o["algorithm"]).startswith("allreduce:rm"):
            mine = sims[str(o["algorithm"])]
            assert o["family"] == mine["family"] != ""
            assert o["sim_us"] == pytest.approx(float(str(mine["sim_us"])))
    # --family keeps meaning the rm families, in both rankings; the others stay
    objs = _json(
        capsys, ["allreduce", "-P", "8", "--top", "100", "--family", "merged", "--simulate", "0"]
    )
    every = [o for o in objs if o["ranked_by"] == "simulation"]
    rm = [o for o in every if str(o["algorithm"]).startswith("allreduce:rm")]
    assert rm and all(o["family"] == "merged" for o in rm)
    assert "allreduce:rd" in {o["algorithm"] for o in every}


def test_postal_prints_the_registered_formula_beside_the_simulation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["allgather", "-P", "12", "--bytes", "1KiB", "--top", "100", "--model", "postal"]
    rows = _json(capsys, [*argv, "--alpha", "1us", "--beta", "0.1ns"])
    ring = next(r for r in rows if r["algorithm"] == "allgather:ring")
    # (P - 1)(alpha + n beta): the formula at the same alpha and beta, and the simulation of it
    assert ring["formula_us"] == pytest.approx(11 * (1.0 + 1024 * 0.1e-3))
    assert ring["sim_us"] == pytest.approx(ring["formula_us"])
    # another model gives no formula: it would be the alpha-beta model's number
    rows = _json(capsys, ["allgather", "-P", "12", "--bytes", "1KiB", *LOGGP])
    assert all(r["formula_us"] is None for r in rows)


def test_what_cannot_run_at_P_is_left_out_with_a_note(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["schedules", "alltoall", "-P", "7", "--bytes", "64"]) == 0
    out = capsys.readouterr().out
    assert "left out: alltoall:two_proc: needs P <= 2, not 7" in out
    assert "left out: alltoall:bruck_local: is node-aware" in out
    # too many ops: left out, named, with the count
    assert main(["schedules", "bcast", "-P", "64", "--bytes", "1MiB", "--max-ops", "2000"]) == 0
    out = capsys.readouterr().out
    assert "left out: bcast:pipeline: 16,128 ops to simulate (more than 2,000)" in out
    assert "bcast:binomial" in out


def test_verify_checks_each_listed_algorithm(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json(capsys, ["reduce", "-P", "6", "--top", "100", "--verify"])
    assert len(rows) >= 10
    assert all(str(r["verified"]).startswith("ok") for r in rows)
    # an algorithm right only for exact ops is verified as one (not FAILED as an inexact op)
    rows = _json(capsys, ["allreduce", "-P", "12", "--top", "100", "--verify"])
    got = {str(r["algorithm"]): str(r["verified"]) for r in rows}
    assert got["allreduce:swing_lat"] == "ok, exact ops"
    assert all(v.startswith("ok") for v in got.values()), got


def test_node_aware_algorithms_are_ranked_on_the_placement_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without --rpn a node-aware algorithm is left out with a note; with it, every candidate is
    simulated on those nodes (and --topology's latencies), the node-aware ones among them."""
    assert main(["schedules", "allreduce", "-P", "16", "--model", "postal"]) == 0
    assert "left out: allreduce:hier: is node-aware" in capsys.readouterr().out
    topo = "fattree(k=16,hop=500ns,intra=50ns)"
    argv = ["allreduce", "-P", "16", "--model", "postal", "--top", "100", "--rpn", "4"]
    rows = _json(capsys, [*argv, "--topology", topo])
    names = {str(r["algorithm"]) for r in rows}
    assert "allreduce:hier" in names and "allreduce:rd" in names
    assert all(r["rpn"] == 4 and r["order"] == "contiguous" for r in rows)
    assert all(r["topology"] == topo and r["formula_us"] is None for r in rows)
    model = Model.make("postal")
    for name in ("allreduce:hier", "allreduce:rd"):
        sim = simulate(
            name, 16, count=1, elem_size=8, model=model, placement=Placement(4), topology=topo
        )
        assert _us(rows)[name] == pytest.approx(float(sim.makespan) / 1e3)
    # the topology is what tells the nodes apart: its latencies reach every row
    flat = _us(_json(capsys, argv))
    assert flat["allreduce:rd"] < _us(rows)["allreduce:rd"]
    assert main(["schedules", *argv[:-2], "--rpn", "4", "--order", "round_robin"]) == 0
    assert "4 ranks per node (round_robin)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["neighbor_alltoall", "-P", "8"], "unknown collective 'neighbor_alltoall'"),
        (["bcast", "-P", "8", "--totals"], "allreduce only"),
        (["bcast", "-P", "8", "--family", "merged"], "allreduce only"),
        (["bcast", "-P", "8", "--model", "loggp", "--alpha", "1us"], "not a parameter"),
        (["bcast", "-P", "8", "--model", "loggp", "--beta", "1ns"], "--G"),
        (["bcast", "-P", "8", "--L", "1us"], "not a parameter of model pipelined-postal"),
        (["allreduce", "-P", "8", "--model", "postal", "--search"], "pipelining postal"),
        (["reduce", "-P", "8", "--bytes", "3"], "multiple of 4"),
        (["allreduce", "-P", "8", "--order", "round_robin"], "--order needs --rpn"),
        (["allreduce", "-P", "8", "--rpn", "2", "--rm-only"], "rank rm schedules"),
        (["allreduce", "-P", "8", "--topology", "fattree(k=16"], "topology"),
        (["allreduce", "-P", "8", "--topology", "ring(hop=1us)"], "topology"),
    ],
)
def test_what_cannot_be_done_is_refused(argv: list[str], needle: str) -> None:
    p = argparse.ArgumentParser()
    schedules.add_arguments(p)
    with pytest.raises(collkit.CollkitError, match=needle):
        schedules.run(p.parse_args(argv))


def test_an_algorithm_for_exact_ops_is_ranked_and_marked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A simulation has no op: allreduce:swing_lat (right only for ops exact under any grouping)
    is ranked beside the others, its row marked, while tune, which times doubles, leaves it out."""
    r = rank_algorithms("allreduce", 12, 8, Model.make("postal", alpha="1us"))
    row = next(x for x in r.rows if x.algorithm == "allreduce:swing_lat")
    assert row.exact_op and not any(x.exact_op for x in r.rows if x is not row)
    assert "allreduce:swing_lat" not in {x.algorithm for x in r.left_out}
    sim = simulate(
        "allreduce:swing_lat", 12, count=1, elem_size=8, model=Model.make("postal", alpha="1us")
    )
    assert row.sim_us == pytest.approx(float(sim.makespan) / 1e3)
    assert "allreduce:swing_lat" not in candidates("allreduce", 12)
    assert main(["schedules", "allreduce", "-P", "12", "--top", "100"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^ +\d+  allreduce:swing_lat\* +\d", out, re.M), out
    assert "* right only for an op exact under any grouping" in out
    rows = _json(capsys, ["allreduce", "-P", "12", "--top", "100"])
    assert [x["exact_op"] for x in rows if x["algorithm"] == "allreduce:swing_lat"] == [True]
