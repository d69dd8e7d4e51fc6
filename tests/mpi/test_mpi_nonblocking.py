"""The non-blocking and persistent collectives: ck_i<coll> and ck_<coll>_init in the C
API, MPI_I<coll> and MPI_<Coll>_init through the interposition library, generated from the one
table of calls (mpi/src/call_table.hpp).

collkit_conformance --nonblocking runs the conformance cases of test_mpi_conformance.py (every
datatype description, op, root, MPI_IN_PLACE, ...) through the non-blocking forms against the
MPI's own MPI_I<coll>, each call overlapped with random compute, point-to-point traffic on the
same communicator and a second collkit allreduce in flight beside it, and completed by a random mix
of MPI_Wait / MPI_Test / MPI_Waitall / MPI_Waitany / MPI_Testall over the mixed array. Both MPIs,
P = 1..4; the slow set every algorithm of the registry.

collkit_conformance --persistent runs the same cases through ck_<coll>_init (MPI_Start, the same
overlap and completion mixes, a second start where the call is not in place, MPI_Request_free)
against the MPI's own MPI_<Coll>_init (MPICH) or its blocking call (Open MPI 4.1 has no
persistent collectives), plus two handles per algorithm restarted round after round with new
data beside a non-blocking allreduce and point-to-point messages (MPI_Startall / MPI_Start,
MPI_Waitall / MPI_Testany / MPI_Waitsome / MPI_Test mixes). Through the interposition library
(MPI_<Coll>_init, MPI 4: MPICH only), and an unmodified C program using MPI_Allreduce_init."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from test_mpi_conformance import REFERENCE_ENV, defaults, runs_at, summary

from collkit.collectives import COLLECTIVES, collective
from collkit.mpi import MPI
from mpi_support import built, mpich_or_skip, openmpi_or_skip, run_program

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
# Counts 0, 1, P-1 and one no P divides: the quick set's non-blocking runs stay short.
COUNTS = "0,1,P-1,13"


# The irregular collectives whose ranks do not all have the count vector: their counts are
# exchanged first (a blocking call's and persistent init's with a blocking collective, a
# non-blocking call's as its run's first, non-blocking step: mpi/src/capi.cpp, start_exchanged).
EXCHANGED = ["gatherv", "scatterv", "alltoallv"]

# One algorithm per collective, each taking any P (the slow set runs every algorithm).
QUICK = [
    "allreduce:rd",
    "reduce:binomial",
    "bcast:binary",
    "alltoall:bruck",
    "barrier:dissemination",
    "allgather:bruck",
    "reduce_scatter_block:halving",
    "gather:binomial",
    "scatter:binomial",
    # The irregular ones: count vectors drawn per case (zeros included), every rank its own
    # datatypes with gaps and displacements, MPI_IN_PLACE, non-commutative ops.
    "allgatherv:ring",
    "reduce_scatter:noncommutative",
    "scan:linear",
    "exscan:recursive_doubling",
]
# Persistent here; their non-blocking forms have tests of their own (EXCHANGED).
QUICK_PERSISTENT = ["gatherv:binomial", "scatterv:linear", "alltoallv:pairwise"]


def quick(P: int, persistent: bool = False) -> list[str]:
    return [n for n in QUICK + QUICK_PERSISTENT * persistent if runs_at({"name": n}, P)]


def irregular(name: str) -> bool:
    return collective(name.partition(":")[0])["counts"] != "none"


def assert_ran_in_collkit(out: str, names: list[str], kind: str = "CAPI") -> None:
    """Each irregular algorithm's calls under test ran in collkit (none declined to the MPI):
    the CAPI lines of collkit_conformance, the ROUTE lines through the interposition library."""
    lines = re.findall(rf"^{kind} (\S+) ran=(\d+) declined=(\d+)$", out, re.M)
    counts = {name: (int(ran), int(declined)) for name, ran, declined in lines}
    assert set(counts) == set(names), out[-3000:]
    for name in filter(irregular, names):
        assert counts[name][0] > 0 and counts[name][1] == 0, (name, counts[name])


# Open MPI 4.1's own MPI_Allgatherv hangs on the conformance cases at P >= 3
# (test_mpi_conformance.OPENMPI_NO_REFERENCE), and its persistent calls' reference is the
# blocking call (Open MPI 4.1 has no MPI 4 persistent collectives): no persistent allgatherv there.
def persistent_names(kind: str, P: int) -> list[str]:
    names = quick(P, persistent=True)
    if kind == "openmpi" and P >= 3:
        names = [n for n in names if not n.startswith("allgatherv:")]
    return names


# Open MPI 4.1's own MPI_Ialltoall (libnbc) hangs when the ranks describe one type signature with
# different derived datatypes, as the standard allows (seen at P = 2, count 1: one rank never
# completes its request), and so does its MPI_Ialltoallv on the irregular cases at P = 2 (its own
# call through "alltoallv:native" too); there the reference is its blocking call.
BLOCKING_REFERENCE = {"openmpi": "alltoall,alltoallv"}


def check_nb(
    mpi: MPI,
    bindir: Path,
    P: int,
    names: list[str],
    program: str,
    seed: int,
    mode: str = "nonblocking",
) -> str:
    env: dict[str, str] = {}
    for name in names:
        env.update(REFERENCE_ENV.get((mpi.kind, name.partition(":")[0]), {}))
    blocking = BLOCKING_REFERENCE.get(mpi.kind, "")
    r = run_program(
        mpi,
        bindir,
        P,
        program,
        "--algos",
        ";".join(names),
        f"--{mode}",
        "--counts",
        COUNTS,
        "--seed",
        str(seed),
        *(["--blocking-reference", blocking] if blocking else []),
        env=env,
        timeout=600,
    )
    cases, failures, _ = summary(r.stdout)
    assert r.returncode == 0 and failures == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert cases > 0
    return r.stdout


def mpi_of(kind: str) -> tuple[MPI, Path]:
    mpi = mpich_or_skip() if kind == "mpich" else openmpi_or_skip()
    return mpi, built(mpi)


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
@pytest.mark.parametrize("P", [1, 2, 3, 4])
def test_c_api_nonblocking_against_the_mpis_own(kind: str, P: int) -> None:
    mpi, bindir = mpi_of(kind)
    out = check_nb(mpi, bindir, P, quick(P), "collkit_conformance", seed=P)
    assert_ran_in_collkit(out, quick(P))


def assert_outstanding(out: str, names: list[str], P: int) -> None:
    """The OUTSTANDING line: the irregular calls started together (three rounds, one rank late,
    completed in reverse order) all ran in collkit and equal the MPI's own."""
    ran = re.findall(r"^OUTSTANDING (\S+) ran=(\d+) declined=(\d+)$", out, re.M)
    assert ran == [(";".join(names), str(3 * len(names)), "0")], out[-3000:]
    assert f"world P={P} {';'.join(names)} outstanding at once" not in out


# The exchanged ones on both MPIs, P = 1..4.
EXCHANGED_RUNS = [(kind, P) for kind in ("mpich", "openmpi") for P in (1, 2, 3, 4)]


@pytest.mark.parametrize(("kind", "P"), EXCHANGED_RUNS)
def test_exchanged_counts_nonblocking_run_in_collkit(kind: str, P: int) -> None:
    """gatherv, scatterv and alltoallv, whose ranks do not all have the count vector, run their
    non-blocking forms in collkit (declined = 0): the counts exchange is the run's first,
    non-blocking step, so a start whose peer starts late does not block (the conformance run's
    start check), several in flight at once match in call order, and the results equal the
    MPI's own call's. Counts that disagree across the ranks fail the request with the same
    error on every rank (found by the exchange in the run: too late to decline), and so do
    counts that agree but break a limit only the exchanged vector shows (LIMIT lines: a block
    past 2^48 bytes, at every P; a buffer of P blocks past it, at P >= 2, also with a datatype
    with gaps, which the executor must not stage first), each request
    failing with the same error code on every rank, no byte of the buffers changed."""
    mpi, bindir = mpi_of(kind)
    names = ["gatherv:linear", "scatterv:binomial", "alltoallv:scattered"]
    assert [n.partition(":")[0] for n in names] == EXCHANGED
    out = check_nb(mpi, bindir, P, names, "collkit_conformance", seed=7 + P)
    assert_ran_in_collkit(out, names)
    assert_outstanding(out, names, P)
    assert re.findall(r"^DISAGREE (\S+) failed alike$", out, re.M) == names, out[-3000:]
    limits = ["block", "total", "gaps"] if P >= 2 else ["block"]
    want = [(n, what) for n in names for what in limits]
    assert re.findall(r"^LIMIT (\S+) (\S+) failed alike$", out, re.M) == want, out[-3000:]


@pytest.mark.parametrize(("kind", "P"), [(k, P) for k, P in EXCHANGED_RUNS if P >= 2])
def test_interposed_exchanged_counts_nonblocking(kind: str, P: int) -> None:
    """MPI_Igatherv, MPI_Iscatterv and MPI_Ialltoallv routed by a one-rule table each: collkit
    ran every call (the ROUTE lines: none declined), with results equal to PMPI_I<coll>'s."""
    mpi, bindir = mpi_of(kind)
    names = ["gatherv:binomial", "scatterv:linear", "alltoallv:pairwise"]
    assert [n.partition(":")[0] for n in names] == EXCHANGED
    out = check_nb(mpi, bindir, P, names, "collkit_conformance_pmpi", seed=40 + P)
    assert_ran_in_collkit(out, names, kind="ROUTE")
    assert_outstanding(out, names, P)


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
@pytest.mark.parametrize("P", [2, 3, 4])
def test_interposed_nonblocking_against_the_mpis_own(kind: str, P: int) -> None:
    """MPI_I<coll> routed by a one-rule table per algorithm: collkit ran it (or declined it alike
    on every rank, and the MPI's own call ran); the results equal PMPI_I<coll>'s."""
    mpi, bindir = mpi_of(kind)
    names = quick(P)
    out = check_nb(mpi, bindir, P, names, "collkit_conformance_pmpi", seed=10 + P)
    routes = dict(re.findall(r"^ROUTE (\S+) ran=(\d+) declined=\d+$", out, re.M))
    assert set(routes) == set(names)
    assert all(int(ran) > 0 for ran in routes.values()), routes
    assert_ran_in_collkit(out, names, kind="ROUTE")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
@pytest.mark.parametrize("collective", COLLECTIVES)
@pytest.mark.parametrize("P", [1, 2, 3, 4])
def test_every_algorithm_nonblocking(kind: str, collective: str, P: int) -> None:
    mpi, bindir = mpi_of(kind)
    check_nb(mpi, bindir, P, defaults(collective, P), "collkit_conformance", seed=100 + P)


def test_mpi4py_nonblocking_under_the_library(tmp_path: Path) -> None:
    """mpi4py's comm.Iallreduce / Ibcast / Ibarrier, unmodified, give the same results under the
    interposition library as without it, and collkit ran them."""
    mpi = mpich_or_skip()
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py is not installed")
    from test_pmpi import collkit_run, launch, outputs, write_table

    algos = ["allreduce:ring", "bcast:binomial", "barrier:dissemination"]
    every = {"P": [1, 64], "bytes": [0, 1 << 40]}
    rules = [{"collective": a.partition(":")[0], "algorithm": a, **every} for a in algos]
    table = write_table(
        tmp_path / "t.json", {"format": "collkit-tuning", "version": 1, "rules": rules}
    )
    script = [sys.executable, str(PROGRAMS / "mpi4py_nonblocking.py")]
    plain = launch(mpi, 3, [*script, str(tmp_path / "plain")])
    assert plain.returncode == 0, plain.stderr[-2000:]
    lib = collkit_run(mpi, 3, table, [*script, str(tmp_path / "lib")])
    assert lib.returncode == 0, lib.stderr[-3000:]
    assert outputs(tmp_path / "lib", 3) == outputs(tmp_path / "plain", 3)
    for algo in algos:
        assert f"-> {algo} (table)" in lib.stderr, lib.stderr[-3000:]


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
@pytest.mark.parametrize("P", [1, 2, 3, 4])
def test_c_api_persistent_against_the_mpis_own(kind: str, P: int) -> None:
    """ck_<coll>_init started, restarted with new data and freed, against MPI_<Coll>_init
    (MPICH 5) or the blocking call (Open MPI 4.1 has no persistent collectives)."""
    mpi, bindir = mpi_of(kind)
    names = persistent_names(kind, P)
    out = check_nb(mpi, bindir, P, names, "collkit_conformance", seed=20 + P, mode="persistent")
    assert set(re.findall(r"^RESTARTS (\S+) rounds=5 handles=2$", out, re.M)) == set(names)
    assert_ran_in_collkit(out, names)


@pytest.mark.parametrize("P", [2, 3, 4])
def test_interposed_persistent_against_the_mpis_own(P: int) -> None:
    """MPI_<Coll>_init routed by a one-rule table per algorithm (MPI 4: the MPICH wheel): collkit
    ran it, or declined it at init alike on every rank and PMPI_<Coll>_init ran; the results
    equal the MPI's own persistent call's."""
    mpi, bindir = mpi_of("mpich")
    names = persistent_names("mpich", P)
    out = check_nb(
        mpi, bindir, P, names, "collkit_conformance_pmpi", seed=30 + P, mode="persistent"
    )
    routes = dict(re.findall(r"^ROUTE (\S+) ran=(\d+) declined=\d+$", out, re.M))
    assert set(routes) == set(names)
    assert all(int(ran) > 0 for ran in routes.values()), routes
    assert_ran_in_collkit(out, names, kind="ROUTE")
    assert set(re.findall(r"^RESTARTS (\S+) rounds=5 handles=2$", out, re.M)) == set(names)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
@pytest.mark.parametrize("collective", COLLECTIVES)
@pytest.mark.parametrize("P", [1, 2, 3, 4])
def test_every_algorithm_persistent(kind: str, collective: str, P: int) -> None:
    mpi, bindir = mpi_of(kind)
    if kind == "openmpi" and collective == "allgatherv" and P >= 3:
        pytest.skip("Open MPI 4.1's own MPI_Allgatherv, the reference, hangs on these cases")
    check_nb(
        mpi, bindir, P, defaults(collective, P), "collkit_conformance", seed=200 + P,
        mode="persistent",
    )  # fmt: skip


def test_c_program_with_persistent_collectives_under_the_library(tmp_path: Path) -> None:
    """An unmodified C program using MPI_Allreduce_init, MPI_Bcast_init and MPI_Barrier_init
    (MPI_Start / MPI_Startall, Wait / Waitall / Testany loops, a handle freed and made again)
    gives the same output under the interposition library as without it, and collkit ran them."""
    import subprocess

    from test_pmpi import collkit_run, launch, mpicc, outputs, write_table

    mpi = mpich_or_skip()
    exe = tmp_path / "persistent_app"
    subprocess.run(
        [mpicc(mpi), "-O1", "-o", str(exe), str(PROGRAMS / "persistent_app.c")], check=True
    )
    algos = ["allreduce:ring", "bcast:binomial", "barrier:dissemination"]
    every = {"P": [1, 64], "bytes": [0, 1 << 40]}
    rules = [{"collective": a.partition(":")[0], "algorithm": a, **every} for a in algos]
    table = write_table(
        tmp_path / "t.json", {"format": "collkit-tuning", "version": 1, "rules": rules}
    )
    plain = launch(mpi, 3, [str(exe), str(tmp_path / "plain")])
    assert plain.returncode == 0, plain.stderr[-2000:]
    lib = collkit_run(mpi, 3, table, [str(exe), str(tmp_path / "lib")])
    assert lib.returncode == 0, lib.stderr[-3000:]
    plain_out, lib_out = outputs(tmp_path / "plain", 3), outputs(tmp_path / "lib", 3)
    assert lib_out == plain_out
    assert all(len(o.splitlines()) == 4 * 7 and "rc=0 " in o and "freed 1" in o for o in lib_out)
    for algo in algos:
        assert f"-> {algo} (table)" in lib.stderr, lib.stderr[-3000:]
