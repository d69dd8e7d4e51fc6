"""bench rows of the irregular collectives on both MPIs (collkit_bench --vectors): collkit's
algorithms checked against the MPI's own call on every --counts form, the MPI's own algorithms
forced (MPICH's MPIR_CVAR_*_INTRA_ALGORITHM, Open MPI's coll_tuned_*_algorithm), and the tuning
files for them loaded by the MPI (MPICH's selection JSON, Open MPI's dynamic rules file) with the
native call's result still the one collkit's algorithm gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collkit.bench import Campaign, run_campaign
from collkit.counts import parse_counts
from collkit.mpi import MPI, build
from collkit.mpi.mpich import default_tree, find_libmpi, selection_file
from collkit.mpi.openmpi import rules_file
from collkit.results import ResultStore
from collkit.tune.select import Choice, Comparison
from mpi_support import mpich_or_skip, openmpi_or_skip

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module", params=["mpich", "openmpi"])
def mpi(request: pytest.FixtureRequest) -> MPI:
    return mpich_or_skip() if request.param == "mpich" else openmpi_or_skip()


def _quick(coll: str, algos: list[str], counts: list[str], **kw: object) -> Campaign:
    return Campaign(
        coll, algos, [2], [8], counts=counts, iterations=10, warmup=1, max_ms=30, rounds=2, **kw
    )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("coll", "algos"),
    [
        ("alltoallv", ["native", "alltoallv:pairwise", "alltoallv:two_phase_bruck"]),
        ("allgatherv", ["native", "allgatherv:ring", "allgatherv:bruck"]),
        ("reduce_scatter", ["native", "reduce_scatter:recursive_halving"]),
        ("gatherv", ["native", "gatherv:binomial"]),
        ("scatterv", ["native", "scatterv:binomial"]),
    ],
)
def test_irregular_rows_are_checked_against_the_mpi(
    mpi: MPI, tmp_path: Path, coll: str, algos: list[str]
) -> None:
    forms = ["random(3,40)", "zeros-but-one(17,1)"]
    c = _quick(coll, algos, forms)
    rows = run_campaign(c, mpi, ResultStore(tmp_path / "r.jsonl"))
    assert len(rows) == len(algos) * len(forms)
    per_pair = coll == "alltoallv"
    for r in rows:
        assert r.error == "", r.error
        vec = parse_counts(r.counts).vector(2, per_pair=per_pair)
        assert r.bytes == sum(vec) * (8 if coll == "reduce_scatter" else 1)
        assert r.median_us > 0 and r.iterations >= 10
        if r.algorithm != "native":
            assert r.valid is True, (r.algorithm, r.counts)


def test_the_mpis_own_algorithms_are_forced_as_rows(mpi: MPI, tmp_path: Path) -> None:
    own = {
        "mpich": ["mpich:scattered", "mpich:pairwise_sendrecv_replace"],
        "openmpi": ["ompi:basic_linear", "ompi:pairwise"],
    }[mpi.kind]
    # pairwise_sendrecv_replace is MPICH's in-place alltoallv: forced on a call that is not
    # in place, MPICH runs it anyway or refuses; either is a row (an error says which).
    c = _quick("alltoallv", own, ["random(5,30)"], validate=False)
    rows = run_campaign(c, mpi, ResultStore(tmp_path / "r.jsonl"))
    assert sorted(r.algorithm for r in rows) == sorted(own)
    first = next(r for r in rows if r.algorithm == own[0])
    assert first.error == "" and first.median_us > 0
    force = mpi.force_env("alltoallv", own[0])
    assert all(f"{k}={v}" in first.settings for k, v in force.items() if "ALGORITHM" in k)
    c = _quick("allgatherv", [f"{mpi.prefix}:ring"], ["skewed(64)"], validate=False)
    (row,) = run_campaign(c, mpi, ResultStore(tmp_path / "s.jsonl"))
    assert row.error == "" and row.counts == "skewed(64)"


def _choice(coll: str, P: int, nbytes: int, algo: str) -> Choice:
    cmp = Comparison(algo, 1.0, 2.0, 2.0, 1e-9, (1.5, 2.5))
    return Choice(coll, P, nbytes, "measured", None, cmp, [])  # the MPI's own, forced


def test_the_mpi_loads_its_tuning_file_and_the_call_stays_right(mpi: MPI, tmp_path: Path) -> None:
    """The file's rules for allgatherv, reduce_scatter and alltoallv at P = 2 (MPICH's
    algorithms by its names, Open MPI's by its ids); then the MPI's native calls, under the file,
    give the bytes collkit's algorithms give (a file the MPI cannot read aborts MPICH's job)."""
    ring = f"{mpi.prefix}:ring"
    other = "mpich:recursive_halving" if mpi.kind == "mpich" else "ompi:recursive_halving"
    a2av = "mpich:scattered" if mpi.kind == "mpich" else "ompi:pairwise"
    choices = [
        _choice("allgatherv", 2, 16, f"{mpi.prefix}:bruck" if mpi.kind != "mpich" else ring),
        _choice("allgatherv", 2, 256, ring),
        _choice("reduce_scatter", 2, 64, other),
        _choice("alltoallv", 2, 8, a2av),
    ]
    if mpi.kind == "mpich":
        lib = find_libmpi(build(mpi, ["collkit_bench"]) / "collkit_bench")
        tree = selection_file(choices, default_tree(lib))
        branch = tree["collective=allgatherv"]["comm_type=intra"]["comm_size<=2"]
        assert branch["total_msg_size<=255"] == {"algorithm=MPIR_Allgatherv_intra_ring": {}}
        rs = tree["collective=reduce_scatter"]["comm_type=intra"]["comm_size<=2"]
        assert set(rs) == {"is_commutative=yes", "is_commutative=no"}
        path = tmp_path / "mpich-selection.json"
        path.write_text(json.dumps(tree))
        env = {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(path)}
    else:
        text = rules_file(choices)
        assert "1  # allgatherv" in text and "12  # reduce_scatter" in text
        assert "0 2 0 0  # any size" in text  # alltoallv: pairwise for every size at P = 2
        path = tmp_path / "openmpi-rules.txt"
        path.write_text(text)
        env = {
            "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
            "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(path),
        }
    for coll, algo in (
        ("allgatherv", "allgatherv:recursive_doubling"),
        ("reduce_scatter", "reduce_scatter:ring"),
        ("alltoallv", "alltoallv:linear"),
    ):
        c = _quick(coll, ["native", algo], ["equal(4)", "random(9,60)"], extra_env=env)
        rows = run_campaign(c, mpi, ResultStore(tmp_path / f"{coll}.jsonl"))
        assert len(rows) == 4 and all(r.error == "" for r in rows), [r.error for r in rows]
        assert all(r.valid is True for r in rows if r.algorithm != "native")
