"""The registry drives the docs and the test matrix: every algorithm x a sweep of P through the
verifier, as the algorithm declares (rank order unless it needs a commutative op)."""

from __future__ import annotations

from pathlib import Path

import pytest

import collkit
from collkit.cli.algorithms import markdown
from collkit.collectives import ROOTED
from conftest import QUICK_P, SMALL_P

ROOT = Path(__file__).resolve().parents[2]
MATRIX_P = QUICK_P


def test_docs_algorithm_table_is_generated_from_the_registry() -> None:
    doc = (ROOT / "docs" / "algorithms.md").read_text()
    assert doc == markdown(), "regenerate: collkit algorithms --markdown > docs/algorithms.md"


def test_every_algorithm_documents_itself() -> None:
    for spec in collkit.algorithms():
        for key in ("summary", "phases", "cost", "reference"):
            assert spec[key].strip(), f"{spec['name']} has no {key}"


def _default_names() -> list[str]:
    out = []
    for spec in collkit.algorithms():
        required = [p for p in spec["params"] if not p["default"] and p["type"] != "list"]
        if not required:
            out.append(spec["name"])
    return out


def _verify_sweep(name: str, Ps: list[int]) -> None:
    """Every P x count x root (reduce, bcast: the ends and the middle) through the verifier, in
    rank order unless the algorithm declares it needs a commutative op (with these parameters),
    with any tree where it declares an op exact under any grouping (allreduce:swing_lat)."""
    algo = collkit.Algorithm(name)
    # A parameter may make it need one too (allreduce:tree(tree=kary)).
    needs_comm = bool(algo.spec["restrictions"]["commutative_op"]) or algo.needs_commutative()
    for P in Ps:
        roots = sorted({0, P // 2, P - 1}) if algo.collective in ROOTED else [0]
        for count in (0, 1, 5):
            for root in roots:
                try:
                    s = algo.generate(P, count, 8, root)
                except collkit.UnsupportedError:
                    continue
                r = collkit.verify(s, commutative=needs_comm, exact=algo.needs_exact)
                assert r.ok, r.summary()
                if not needs_comm:
                    assert r.consistent_noncommutative


@pytest.mark.parametrize("name", _default_names())
def test_matrix_every_algorithm_every_P(name: str) -> None:
    _verify_sweep(name, MATRIX_P)


def test_rank_alone_matches_the_whole_schedule() -> None:
    for name in _default_names():
        algo = collkit.Algorithm(name)
        for P in (1, 5, 12, 33):
            try:
                s = algo.generate(P, 3)
            except collkit.UnsupportedError:
                continue
            whole = s.arrays()
            for r in range(P):
                alone = algo.generate_rank(P, r, 3).arrays()
                mask = whole["rank"] == r
                for key in ("kind", "peer", "buf", "off", "src", "src_off", "len", "side"):
                    assert (alone[key] == whole[key][mask]).all(), (name, P, r, key)


GRID_P = SMALL_P


def test_every_parameter_declares_a_grid() -> None:
    """The matrix below sweeps what the registrations declare; a parameter left out of it would
    only ever be tested at its default (which the matrix above covers)."""
    for spec in collkit.algorithms():
        for p in spec["params"]:
            if p["type"] != "list":  # rm's stage lists depend on P: tests/test_rm_*.py
                assert len(p["grid"]) > 1, f"{spec['name']}: parameter {p['name']} has no grid"
        if any(p["grid"] for p in spec["params"]):
            assert len(spec["grid"]) > 1


@pytest.mark.parametrize(
    "name", sorted({n for s in collkit.algorithms() for n in s["grid"] if "(" in n})
)
def test_matrix_parameter_grid(name: str) -> None:
    _verify_sweep(name, GRID_P)
