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

from collkit import cluster
from collkit.cluster import Cluster
from collkit.errors import InvalidArgumentError
from collkit.mpi import MPI
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
