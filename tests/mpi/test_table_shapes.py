"""Shapes in the tuning table: rules keyed by nodes and ranks per node ("nodes", "ppn") as well as
P and size. The core's one reader takes and checks them (and tables without them, which mean any
shape); collkit.tune.table and the interposition library match a call alike: the first covering
rule of the communicator's shape, else the first covering rule without a shape.

The library is run on one machine with COLLKIT_TEST_RPN (the placement's testing aid: the ranks
taken to be N to a node) and, as root, on an emulated cluster of 2 nodes, where one run has
communicators of the same size and different shapes: the log names the rule each one took."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_pmpi import PROGRAMS, collkit_run, mpicc
from test_tune import comparison, fingerprint

from collkit import cluster
from collkit.cluster import Cluster
from collkit.errors import InvalidArgumentError
from collkit.mpi import MPI, launch_command, launch_env
from collkit.mpi.intel import tuning_env as intel_env
from collkit.mpi.mpich import default_tree as mpich_default_tree
from collkit.mpi.mpich import find_libmpi
from collkit.mpi.mpich import selection_file as mpich_file
from collkit.mpi.openmpi import rules_file as openmpi_rules
from collkit.results import Row, read_jsonl
from collkit.slurm import Allocation
from collkit.tune.campaign import shapes_of
from collkit.tune.plot import plot
from collkit.tune.select import Choice, choose, rules, shape_of
from collkit.tune.table import Rule, Table, parse, to_dict, validate
from mpi_support import built, mpich_or_skip, openmpi_or_skip


def table(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"format": "collkit-tuning", "version": 1, "rules": list(rules)}


def rule(algorithm: str, P: int, **shape: list[int]) -> dict[str, Any]:
    return {"collective": "allreduce", "P": [P, P], "bytes": [0, 1 << 20], "algorithm": algorithm,
            **shape}  # fmt: skip


# At P = 4: a rule for 4 nodes x 1 first, one for any shape next, one for 2 nodes x 2 last.
FOUR = table(
    rule("allreduce:ring", 4, nodes=[4, 4], ppn=[1, 1]),
    rule("allreduce:rd", 4),
    rule("allreduce:rabenseifner", 4, nodes=[2, 2], ppn=[2, 2]),
)


# --- the reader and the Python lookup ------------------------------------------------------------


def test_shaped_rules_read_and_round_trip() -> None:
    t = validate(FOUR)
    assert [(r.nodes, r.ppn) for r in t.rules] == [((4, 4), (1, 1)), (None, None), ((2, 2), (2, 2))]
    again = to_dict(t)
    assert "nodes" not in again["rules"][1] and "ppn" not in again["rules"][1]
    assert again["rules"][0]["nodes"] == [4, 4] and again["rules"][2]["ppn"] == [2, 2]
    assert [(r.nodes, r.ppn) for r in validate(again).rules] == [(r.nodes, r.ppn) for r in t.rules]


def test_a_table_without_shapes_means_any_shape() -> None:
    old = b'{"format": "collkit-tuning", "version": 1, "rules": [{"collective": "allreduce", '
    old += b'"P": [2, 8], "bytes": [0, 1024], "algorithm": "allreduce:ring"}]}'
    t = parse(old)
    assert not t.rules[0].shaped()
    for nodes, ppn in [(None, None), (1, 4), (4, 1), (3, None)]:
        assert t.lookup("allreduce", 4, 8, nodes, ppn) == "allreduce:ring"


@pytest.mark.parametrize(
    ("nodes", "ppn", "algorithm"),
    [
        (4, 1, "allreduce:ring"),  # its own shape, first
        (2, 2, "allreduce:rabenseifner"),  # its own shape, though a shape-less rule comes first
        (1, 4, "allreduce:rd"),  # no rule of its shape: the shape-less one
        (3, None, "allreduce:rd"),  # nodes of different sizes: no rule with a ppn takes it
        (None, None, "allreduce:rd"),  # shape not known
    ],
)
def test_lookup_takes_the_shape_first(nodes: int | None, ppn: int | None, algorithm: str) -> None:
    assert validate(FOUR).lookup("allreduce", 4, 8, nodes, ppn) == algorithm


def test_nodes_alone_and_no_shapeless_rule() -> None:
    t = Table([Rule("allreduce", (2, 64), (0, 8), "allreduce:rd", nodes=(1, 1))])
    assert t.lookup("allreduce", 8, 8, 1, 8) == "allreduce:rd"
    assert t.lookup("allreduce", 8, 8, 1, None) == "allreduce:rd"  # nodes alone: any ppn
    assert t.lookup("allreduce", 8, 8, 2, 4) == "native"  # nothing for 2 nodes


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ({"nodes": [0, 2]}, '"nodes" must be [lo, hi], two integers with 1 <= lo'),
        ({"ppn": [2, 1]}, '"ppn" must be [lo, hi]'),
        ({"ppn": 2}, '"ppn" must be [lo, hi]'),
        ({"nodes": [1.0, 2]}, '"nodes" must be [lo, hi]'),
        # 2 nodes x 1 is 2 ranks: no call at P = 4 has it
        (
            {"nodes": [2, 2], "ppn": [1, 1]},
            "no communicator of P in [4, 4] has the shape nodes [2, 2] x ppn [1, 1]",
        ),
        ({"nodes": [8, 9]}, "has the shape nodes"),  # more nodes than ranks
        ({"nodes": [3, 3], "ppn": [1, 3]}, "has the shape"),  # 3, 6, 9: none is 4
    ],
)
def test_shapes_no_call_can_have_are_refused(shape: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        validate(table(rule("allreduce:rd", 4, **shape)))


# --- the interposition library -------------------------------------------------------------------


@pytest.fixture(scope="module")
def shapes_app(tmp_path_factory: pytest.TempPathFactory) -> tuple[MPI, Path]:
    mpi = mpich_or_skip()
    built(mpi)
    exe = tmp_path_factory.mktemp("app") / "shapes_app"
    subprocess.run([mpicc(mpi), "-O1", "-o", str(exe), str(PROGRAMS / "shapes_app.c")], check=True)
    return mpi, exe


@pytest.mark.parametrize(
    ("rpn", "route"),
    [
        ("1", "allreduce:ring (table, rule 0 for 4 nodes x 1 ppn)"),
        ("2", "allreduce:rabenseifner (table, rule 2 for 2 nodes x 2 ppn)"),
        (None, "allreduce:rd (table)"),  # one node of 4: no rule of its shape
    ],
)
def test_library_routes_by_the_communicators_shape(
    shapes_app: tuple[MPI, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    rpn: str | None, route: str,
) -> None:  # fmt: skip
    mpi, exe = shapes_app
    path = tmp_path / "t.json"
    path.write_text(json.dumps(FOUR))
    if rpn is not None:
        monkeypatch.setenv("COLLKIT_TEST_RPN", rpn)
    r = collkit_run(mpi, 4, path, [str(exe)], "--stats", str(tmp_path / "calls.jsonl"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "shapes_app: all results right" in r.stdout
    assert f"allreduce P=4 64 B (class 64..127 B) -> {route}" in r.stderr, r.stderr[-3000:]
    # The pairs (P = 2) have no rule.
    assert "allreduce P=2 64 B (class 64..127 B) -> native (not in the table)" in r.stderr


# --- on an emulated cluster: one run, communicators of one size and two shapes -------------------


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[Cluster]:
    if why := cluster.root_reason():
        pytest.skip(why)
    cluster.cleanup()
    with cluster.emulated(f"s{os.getpid()}", 2) as c:
        yield c


PAIRS = table(
    rule("allreduce:ring", 2, nodes=[1, 1], ppn=[2, 2]),
    rule("allreduce:rd", 2, nodes=[2, 2], ppn=[1, 1]),
    rule("allreduce:rabenseifner", 4),
)


@pytest.mark.parametrize("kind", ["mpich", pytest.param("openmpi", marks=pytest.mark.slow)])
def test_each_communicator_takes_its_own_shapes_rule(
    two_nodes: Cluster, tmp_path: Path, kind: str
) -> None:
    """4 ranks filled in turn on 2 nodes: the pairs {0,1} and {2,3} lie on one node each (rule
    0), the pairs {0,2} and {1,3} across both (rule 1), MPI_COMM_WORLD (P = 4) takes the rule
    without a shape."""
    mpi = mpich_or_skip() if kind == "mpich" else openmpi_or_skip()
    built(mpi)
    exe = tmp_path / "shapes_app"
    subprocess.run([mpicc(mpi), "-O1", "-o", str(exe), str(PROGRAMS / "shapes_app.c")], check=True)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(PAIRS))
    cmd = [sys.executable, "-m", "collkit", "run", "-np", "4", "--hosts", str(two_nodes.hostfile),
           "--tuning", str(path), "--verbose", "--", str(exe)]  # fmt: skip
    env = dict(os.environ, MPIEXEC=mpi.mpiexec, MPICXX=mpi.mpicxx)
    env.pop("COLLKIT_TEST_RPN", None)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "shapes_app: all results right" in r.stdout
    log = r.stderr
    head = "allreduce P=2 64 B (class 64..127 B) -> "
    assert head + "allreduce:ring (table, rule 0 for 1 nodes x 2 ppn)" in log, log[-3000:]
    assert head + "allreduce:rd (table, rule 1 for 2 nodes x 1 ppn)" in log, log[-3000:]
    assert "allreduce P=4 64 B (class 64..127 B) -> allreduce:rabenseifner (table)" in log


# --- tune's choices and rules, and the MPIs' files, with shapes ----------------------------------


def sim_row(algorithm: str, P: int, nbytes: int, allocation: str, us: float) -> Row:
    return Row("allreduce", algorithm, P, nbytes, count=nbytes // 8, source="simulated",
               mpi="postal", allocation=allocation, median_us=us)  # fmt: skip


def two_shapes() -> list[Row]:
    """P = 2: on one node ring wins, across two recursive doubling; P = 4: one shape only."""
    rows = []
    for nbytes in (64, 128):
        for algo, one, two in (("allreduce:ring", 1.0, 3.0), ("allreduce:rd", 2.0, 1.5)):
            rows.append(sim_row(algo, 2, nbytes, "1 node x 2 ranks on 2 cores", one))
            rows.append(sim_row(algo, 2, nbytes, "2 nodes x 1 ranks (emulated cluster c)", two))
            rows.append(sim_row(algo, 4, nbytes, "2 nodes x 2 ranks (emulated cluster c)", one))
    return rows


def test_shape_of_allocations() -> None:
    assert shape_of("1 node x 4 ranks on 2 cores (oversubscribed)", 4) == (1, 4)
    assert shape_of("2 nodes x 2 ranks (Slurm, srun)", 4) == (2, 2)
    assert shape_of("5 ranks on 2 nodes of up to 3 (emulated cluster c)", 5) == (2, None)
    assert shape_of("4 ranks per node, round_robin", 8) == (2, 4)
    assert shape_of("4 ranks per node", 6) == (2, None)
    assert shape_of("8 ranks from hostfile h", 8) == (None, None)
    assert shape_of("", 8) == (None, None)


def test_tune_rules_carry_shapes_where_a_p_has_several() -> None:
    choices = choose(two_shapes())
    assert {(c.P, c.nodes, c.ppn) for c in choices} == {(2, 1, 2), (2, 2, 1), (4, 2, 2)}
    t = Table(rules(choices))
    assert {(r.P, r.nodes, r.ppn, r.algorithm, r.bytes) for r in t.rules} == {
        ((2, 2), (1, 1), (2, 2), "allreduce:ring", (64, 255)),
        ((2, 2), (2, 2), (1, 1), "allreduce:rd", (64, 255)),
        ((4, 4), None, None, "allreduce:ring", (64, 255)),  # one shape: for any shape
    }
    validate(to_dict(t))  # the core's reader takes them
    assert t.lookup("allreduce", 2, 64, 1, 2) == "allreduce:ring"
    assert t.lookup("allreduce", 2, 64, 2, 1) == "allreduce:rd"
    assert t.lookup("allreduce", 2, 64, None, None) == "native"  # no shape-less rule at P = 2
    assert t.lookup("allreduce", 4, 64, 4, 1) == "allreduce:ring"


def test_mpich_file_branches_on_the_average_ranks_per_node() -> None:
    orig = {"algorithm=MPIR_Allreduce_intra_recursive_doubling": {}}
    default = {"collective=allreduce": {"comm_type=intra": orig}}
    tree = mpich_file(choose(two_shapes()), default)
    at2 = tree["collective=allreduce"]["comm_type=intra"]["comm_size<=2"]
    assert list(at2) == ["comm_avg_ppn<=1", "comm_avg_ppn<2", "comm_avg_ppn<=2", "comm_avg_ppn=any"]
    assert at2["comm_avg_ppn<2"] == orig and at2["comm_avg_ppn=any"] == orig
    ring = {"algorithm=MPIR_Allreduce_intra_ring": {}}
    assert at2["comm_avg_ppn<=2"]["avg_msg_size<=127"] == ring  # one node of 2: ring
    assert at2["comm_avg_ppn<=1"]["avg_msg_size<=127"] == orig  # across 2: recursive doubling
    at4 = tree["collective=allreduce"]["comm_type=intra"]["comm_size<=4"]
    assert "avg_msg_size<=127" in at4  # one shape: no branch on it


def test_openmpi_rules_keep_what_the_shapes_agree_on() -> None:
    rows = two_shapes()
    for r in rows:  # at 128 B both shapes choose ring
        if r.bytes == 128 and r.P == 2:
            r.median_us = 1.0 if r.algorithm == "allreduce:ring" else 2.0
    text = openmpi_rules(choose(rows))
    assert "keys its rules by communicator size alone" in text
    assert (
        "fixed decision: the shapes differ (1 nodes x 2 ppn: ompi:ring; 2 nodes x 1 ppn: " in text
    )
    assert "128 4 0 0  # ompi:ring" in text  # alike in both shapes: kept


def shaped_file(tmp_path: Path, exe: Path, one_node: str, other: str) -> dict[str, str]:
    """MPICH's file with a 1 node x 4 choice (`one_node`) and a 2 nodes x 2 one (`other`) at
    P = 4, 32 KiB; the environment that uses it (the ch4 device's own collectives off: across
    nodes they come before the file's tree)."""
    choices = [
        Choice("allreduce", 4, 32768, "measured", None, comparison(f"mpich:{one_node}"), [], 1, 4),
        Choice("allreduce", 4, 32768, "measured", None, comparison(f"mpich:{other}"), [], 2, 2),
    ]
    path = tmp_path / "mpich-selection.json"
    path.write_text(json.dumps(mpich_file(choices, mpich_default_tree(find_libmpi(exe)))))
    return {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(path),
            "MPIR_CVAR_DEVICE_COLLECTIVES": "none"}  # fmt: skip


def forced(algo: str) -> dict[str, str]:
    return {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": algo, "MPIR_CVAR_DEVICE_COLLECTIVES": "none"}


@pytest.fixture(scope="module")
def fingerprint_exe(tmp_path_factory: pytest.TempPathFactory) -> tuple[MPI, Path]:
    mpi = mpich_or_skip()
    exe = tmp_path_factory.mktemp("fp") / "fingerprint"
    subprocess.run([mpicc(mpi), "-O2", "-o", str(exe), str(PROGRAMS / "fingerprint.c")], check=True)
    return mpi, exe


def test_intel_env_and_the_picture_take_two_shapes(tmp_path: Path) -> None:
    choices = choose(two_shapes())
    text = intel_env(choices)
    assert "# allreduce P=2 64-127 B: shapes differ; its default stays" in text
    assert "@4-4" in text and "@2-2" not in text  # one shape at P = 4: its choice stays
    plot(choices, tmp_path / "tune.png", "shapes")  # a row per shape at P = 2
    assert (tmp_path / "tune.png").stat().st_size > 0


@pytest.mark.parametrize(("one_node", "other"), [("ring", "recursive_doubling"),
                                                 ("recursive_doubling", "ring")])  # fmt: skip
def test_mpich_takes_the_rule_of_its_shape(
    fingerprint_exe: tuple[MPI, Path], tmp_path: Path, one_node: str, other: str
) -> None:
    """On this machine every rank is on one node (average ranks per node 4 at P = 4): MPICH
    takes the 1 node x 4 branch of its file, not the 2 nodes x 2 one."""
    mpi, exe = fingerprint_exe
    use = shaped_file(tmp_path, exe, one_node, other)
    assert fingerprint(mpi, exe, 4, 4096, use) == fingerprint(mpi, exe, 4, 4096, forced(one_node))
    assert fingerprint(mpi, exe, 4, 4096, forced(other)) != fingerprint(
        mpi, exe, 4, 4096, forced(one_node)
    )


def test_mpich_takes_the_rule_of_its_shape_on_two_nodes(
    two_nodes: Cluster, fingerprint_exe: tuple[MPI, Path], tmp_path: Path
) -> None:
    """4 ranks on 2 emulated nodes (average 2 per node): the 2 nodes x 2 branch, in both
    orders of the algorithms."""
    mpi, exe = fingerprint_exe
    hosts = str(two_nodes.hostfile)

    def fp(env: dict[str, str]) -> str:
        full, _ = launch_env(mpi, 4, env, hosts=hosts)
        cmd = launch_command(mpi, 4, [str(exe), "allreduce", "4096"], hosts=hosts)
        r = subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=300, check=False)
        assert r.returncode == 0, r.stderr[-2000:]
        return r.stdout.split()[-1]

    for one_node, other in (("ring", "recursive_doubling"), ("recursive_doubling", "ring")):
        use = shaped_file(tmp_path, exe, one_node, other)
        assert fp(use) == fp(forced(other)) != fp(forced(one_node)), (one_node, other)


# --- tune --nodes --ppn: each shape measured, its rules per shape --------------------------------


def test_shapes_of_nodes_and_ppn() -> None:
    assert shapes_of([1, 2], [1, 2]) == [(1, 2), (2, 1), (2, 2)]  # 1 x 1 left out
    for nodes, ppn, message in (([1, 2], [], "given together"), ([0], [2], "must be >= 1"),
                                ([1], [1], "of one rank")):  # fmt: skip
        with pytest.raises(InvalidArgumentError, match=message):
            shapes_of(nodes, ppn)


def test_layouts_of_a_shape() -> None:
    c = Cluster(name="x", nodes=2)
    assert c.layout(2) == (2, 1, "contiguous")  # as few per node as fit
    assert c.layout(2, nodes=1) == (1, 2, "contiguous")  # the shape asked for
    assert "1 node x 2 ranks (emulated cluster x" in c.allocation(2, nodes=1)
    with pytest.raises(InvalidArgumentError, match="3 nodes: the emulated cluster x has 2"):
        c.layout(3, nodes=3)
    with pytest.raises(InvalidArgumentError, match="whole number of ranks on each node"):
        c.layout(3, nodes=2)
    alloc = Allocation("9", ["n0", "n1"], [2, 1])
    assert alloc.layout(2, 1) == (1, 2) and alloc.layout(2, 2) == (2, 1)
    with pytest.raises(InvalidArgumentError, match="2 ranks per node, and the Slurm allocation"):
        alloc.layout(4, 2)  # n1 has one task


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nodes", "2", "--ppn", "1"], "this machine is one node"),
        (["--nodes", "1,2", "--ppn", "1", "-np", "2"], "-np and --nodes/--ppn"),
        (["--nodes", "1"], "given together"),
        (["-np", "2", "--topology", "fattree(k=4,hop=1us)"], "--topology is for --simulate"),
    ],
)
def test_tune_shape_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from collkit.cli import main

    assert main(["tune", "allreduce", "-o", str(tmp_path / "o"), *argv]) == 2
    assert message in capsys.readouterr().err


def test_tune_measures_each_shape_and_writes_rules_per_shape(
    two_nodes: Cluster, tmp_path: Path
) -> None:
    """tune --nodes 1,2 --ppn 1,2 on 2 emulated nodes: 1 x 2 and 2 x 1 at P = 2, 2 x 2 at P =
    4; the rows say each shape, the table has a rule set per shape at P = 2 (MPICH's file a
    comm_avg_ppn branch there) and one for any shape at P = 4, and a rerun measures nothing."""
    mpi = mpich_or_skip()
    built(mpi)
    argv = [sys.executable, "-m", "collkit", "tune", "allreduce", "--nodes", "1,2", "--ppn", "1,2",
            "--sizes", "64", "--only", "rd", "--no-mpi-algos", "--iters", "10", "--warmup", "2",
            "--max-ms", "100", "--rounds", "1", "--no-plot", "--hosts", str(two_nodes.hostfile),
            "-o", str(tmp_path)]  # fmt: skip
    env = dict(os.environ, MPIEXEC=mpi.mpiexec, MPICXX=mpi.mpicxx)
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = read_jsonl(tmp_path / "tune.jsonl")
    shapes = {(row.P, row.allocation.split(" (")[0]) for row in rows}
    assert shapes == {(2, "1 node x 2 ranks"), (2, "2 nodes x 1 ranks"), (4, "2 nodes x 2 ranks")}
    t = json.loads((tmp_path / "collkit-tuning.json").read_text())
    got = {(tuple(x["P"]), tuple(x.get("nodes", ())), tuple(x.get("ppn", ()))) for x in t["rules"]}
    assert got == {((2, 2), (1, 1), (2, 2)), ((2, 2), (2, 2), (1, 1)), ((4, 4), (), ())}
    mpich_json = json.loads((tmp_path / "mpich-selection.json").read_text())
    assert "comm_avg_ppn<=2" in json.dumps(mpich_json["collective=allreduce"])
    again = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(read_jsonl(tmp_path / "tune.jsonl")) == len(rows)  # nothing measured twice
