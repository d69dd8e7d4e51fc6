"""`collkit tune --simulate` simulates every registered algorithm of a collective that can run at
P, the newer ones (circ_graph, two_tree, scatter_rd_allgather, bucket, swing) as the older ones,
with their parameter grids: bucket on its ring and its most balanced 2-d and 3-d tori."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collkit.algorithms import algorithms
from collkit.analysis.torus import balanced_dims, candidate_dims
from collkit.cli import main
from collkit.placement import Placement
from collkit.sim import Model, simulate


def _rows(folder: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (folder / "tune.jsonl").read_text().splitlines()]


def test_tune_simulate_bcast_has_a_row_for_every_registered_algorithm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t"
    argv = ["tune", "bcast", "-np", "64", "--sizes", "8,1MiB", "--simulate", "loggp"]
    assert main([*argv, "--param", "G=0.1ns", "-o", str(out), "--no-plot"]) == 0
    rows = _rows(out)
    done = {str(r["algorithm"]).split("(")[0] for r in rows if not r["error"]}
    assert {str(s["name"]) for s in algorithms("bcast")} <= done
    for name in ("bcast:circ_graph", "bcast:two_tree", "bcast:scatter_rd_allgather"):
        mine = [r for r in rows if r["algorithm"] == name]
        assert sorted(int(str(r["bytes"])) for r in mine) == [8, 1 << 20]
        assert all(float(str(r["median_us"])) > 0 for r in mine)
    # at 1 MiB the pipelined trees beat the whole-message binomial tree under a bandwidth term
    at = {r["algorithm"]: float(str(r["median_us"])) for r in rows if r["bytes"] == 1 << 20}
    assert at["bcast:two_tree"] < at["bcast:binomial"]
    assert at["bcast:circ_graph"] < at["bcast:binomial"]
    capsys.readouterr()


def test_tune_simulate_tries_bucket_on_tori(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t"
    argv = ["tune", "allreduce", "-np", "64", "--sizes", "8", "--simulate", "postal"]
    assert main([*argv, "-o", str(out), "--no-plot"]) == 0
    t = {r["algorithm"]: float(str(r["median_us"])) for r in _rows(out) if not r["error"]}
    ring, square, cube = (
        t["allreduce:bucket"],
        t["allreduce:bucket(dims=8x8)"],
        t["allreduce:bucket(dims=4x4x4)"],
    )
    # postal, beta 0: 2 (d - 1) start-ups per dimension, 126 on the ring, 28 on 8x8, 18 on 4x4x4
    assert cube < square < ring
    assert "allreduce:swing" in t
    capsys.readouterr()


def test_tune_simulate_on_nodes_ranks_the_node_aware_algorithms_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--nodes x --ppn with --simulate: every candidate simulated on those nodes (the topology's
    latencies between them), allreduce:hier among them; without shapes it is a row with why."""
    out = tmp_path / "t"
    topo = "fattree(k=16,hop=500ns,intra=50ns)"
    argv = ["tune", "allreduce", "--sizes", "8", "--simulate", "postal", "-o", str(out)]
    assert main([*argv, "--nodes", "2,4", "--ppn", "4", "--topology", topo, "--no-plot"]) == 0
    rows = _rows(out)
    assert {r["P"] for r in rows} == {8, 16}
    assert all(r["allocation"] == "4 ranks per node" for r in rows)
    # the topology the rows were simulated on, with its node size: what `collkit simulate` writes
    assert {r["settings"] for r in rows} == {
        "topology=fattree(k=16,hop=500ns,rpn=4,intra=50ns) seed=0"
    }
    hier = [r for r in rows if r["algorithm"] == "allreduce:hier"]
    assert len(hier) == 2 and not any(r["error"] for r in hier)
    # the same problem alone, through collkit.simulate: the row holds its makespan
    model = Model.make("postal")
    sim = simulate("allreduce:hier", 8, count=1, model=model, placement=Placement(4), topology=topo)
    assert float(str(hier[0 if hier[0]["P"] == 8 else 1]["median_us"])) == pytest.approx(
        float(sim.makespan) / 1e3
    )
    # in a folder with them, a campaign of one node per rank neither reuses nor mixes them in
    assert main(["tune", "allreduce", "-np", "8", "--sizes", "8", "--simulate", "postal",
                 "-o", str(out), "--no-plot"]) == 0  # fmt: skip
    flat = [r for r in _rows(out) if r["allocation"] == ""]
    assert {r["P"] for r in flat} == {8}
    assert "is node-aware" in next(str(r["error"]) for r in flat if "hier" in str(r["algorithm"]))
    capsys.readouterr()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-np", "4", "--topology", "fattree(k=4,hop=1us)"], "--topology is for --simulate"),
        (["-np", "4", "--simulate", "postal", "--topology", "fattree(k=4"], "topology"),
        (["--nodes", "2", "--ppn", "2", "--simulate", "postal", "--topology",
          "fattree(k=4,hop=1us,rpn=2)"], "comes from --ppn"),
    ],
)  # fmt: skip
def test_a_topology_tune_cannot_use_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    out = tmp_path / "t"
    assert main(["tune", "allreduce", "--sizes", "8", *argv, "-o", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("P", [1, 2, 7, 12, 64, 96, 1000, 1024, 65536, 2**31 - 1])
def test_candidate_dims_are_shapes_of_P(P: int) -> None:
    for pow2 in (False, True):
        dims = candidate_dims(P, power_of_two=pow2)
        assert dims[0] == "P" and len(set(dims)) == len(dims)
        for d in dims[1:]:
            sizes = [int(x) for x in d.split("x")]
            assert all(s >= 2 for s in sizes) and sizes == sorted(sizes, reverse=True)
            prod = 1
            for s in sizes:
                prod *= s
            assert prod == P
            assert not pow2 or all(s & (s - 1) == 0 for s in sizes)


def test_balanced_dims_is_the_least_largest_size() -> None:
    assert balanced_dims(96, 2) == (12, 8)
    assert balanced_dims(1000, 3) == (10, 10, 10)
    assert balanced_dims(96, 2, power_of_two=True) is None
    assert balanced_dims(13, 2) is None
    # every other factorisation of 360 in two has a larger largest size than 20 x 18
    assert balanced_dims(360, 2) == (20, 18)
