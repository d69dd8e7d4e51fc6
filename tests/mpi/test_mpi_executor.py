"""collkit's executor against the MPI itself (the PyPI mpich wheel), on random data.

collkit_conformance (mpi/tests/conformance.cpp) does the comparing inside one MPI job; these tests
launch it for allreduce:rd at P = 1..8 (oversubscribed on a small machine, with throttled
progress), with MPICH's own allreduce algorithms forced one by one as the reference, and for every
collective with counts forced through the chunking that counts past 2^31 take.
(tests/mpi/test_mpi_conformance.py runs every algorithm of every collective.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from collkit.mpi import MPI
from collkit.mpi.mpich import ALGORITHMS as MPICH_ALGORITHMS
from mpi_support import built, mpich_or_skip, run_program


@pytest.fixture(scope="module")
def mpich() -> tuple[MPI, Path]:
    mpi = mpich_or_skip()
    return mpi, built(mpi)


def summary(out: str) -> tuple[int, int]:
    m = re.search(r"SUMMARY P=\d+ cases=(\d+) failures=(\d+)", out)
    assert m, f"no summary in output:\n{out[-3000:]}"
    return int(m.group(1)), int(m.group(2))


@pytest.mark.parametrize("P", range(1, 9))
def test_allreduce_rd_matches_native(mpich: tuple[MPI, Path], P: int) -> None:
    mpi, bindir = mpich
    # Counts 0, 1, a prime, a larger prime; a large count where ranks are few (2 cores).
    counts = "0,1,13,1009" + (",65537" if P <= 3 else "")
    r = run_program(
        mpi, bindir, P, "collkit_conformance", "--algos", "allreduce:rd", "--counts", counts
    )
    cases, failures = summary(r.stdout)
    assert r.returncode == 0 and failures == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # Every type x op at count 13, a few of each at the other counts, in place, on MPI_BOTTOM.
    assert cases > 100


@pytest.mark.parametrize("algo", MPICH_ALGORITHMS["allreduce"])
def test_reference_is_each_forced_mpich_algorithm(mpich: tuple[MPI, Path], algo: str) -> None:
    mpi, bindir = mpich
    r = run_program(
        mpi,
        bindir,
        5,
        "collkit_conformance",
        "--counts",
        "0,1,7,1009",
        env=mpi.force_env("allreduce", f"mpich:{algo}"),
    )
    cases, failures = summary(r.stdout)
    assert r.returncode == 0 and failures == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert cases > 0


# Radix variants, the way MPICH's own test suite sweeps them through its CVARs.
RADIX_SWEEP = [
    {
        "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recursive_multiplying",
        "MPIR_CVAR_ALLREDUCE_RECURSIVE_MULTIPLYING_KVAL": "3",
    },
    {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recexch", "MPIR_CVAR_ALLREDUCE_RECEXCH_KVAL": "3"},
    {
        "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "tree",
        "MPIR_CVAR_ALLREDUCE_TREE_KVAL": "3",
        "MPIR_CVAR_ALLREDUCE_TREE_TYPE": "knomial_2",
    },
]


@pytest.mark.parametrize("env", RADIX_SWEEP, ids=lambda e: "-".join(e.values()))
def test_reference_with_mpich_radix_variants(mpich: tuple[MPI, Path], env: dict[str, str]) -> None:
    mpi, bindir = mpich
    # Without device collectives off, MPICH's ch4 runs its own shared-memory allreduce instead.
    env = {"MPIR_CVAR_DEVICE_COLLECTIVES": "none", **env}
    r = run_program(mpi, bindir, 7, "collkit_conformance", "--counts", "1,13,1009", env=env)
    _cases, failures = summary(r.stdout)
    assert r.returncode == 0 and failures == 0, r.stdout[-3000:] + r.stderr[-3000:]


# One algorithm of each collective whose messages are long enough to be split.
CHUNKED = [
    "allreduce:rd",
    "reduce:binomial",
    "bcast:binomial",
    "alltoall:pairwise",
    "allgather:ring",
    "reduce_scatter_block:pairwise",
    "gather:binomial",
    "scatter:binomial",
]


@pytest.mark.parametrize("P", [3, 6])
def test_counts_split_into_chunks_like_counts_past_2_31(mpich: tuple[MPI, Path], P: int) -> None:
    # COLLKIT_MAX_CHUNK lowers the per-call element limit from INT_MAX to 5, so a count of 1009
    # goes out as 202 messages and reductions run in pieces: the path a 2^31 + 1 count takes.
    # (Copies are planned over bytes: 6 ints a unit, so any count past 0 is split.)
    mpi, bindir = mpich
    r = run_program(
        mpi,
        bindir,
        P,
        "collkit_conformance",
        "--algos",
        ";".join(CHUNKED),
        "--counts",
        "0,4,5,6,11,1009",
        env={"COLLKIT_MAX_CHUNK": "5"},
    )
    _cases, failures = summary(r.stdout)
    assert r.returncode == 0 and failures == 0, r.stdout[-3000:] + r.stderr[-3000:]


def test_c_api_errors_are_clear(mpich: tuple[MPI, Path]) -> None:
    mpi, bindir = mpich
    r = run_program(mpi, bindir, 2, "collkit_conformance", "--counts", "1", "--errors")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    errors = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^ERROR ([\w-]+): (.*)$", r.stdout, re.MULTILINE)
    }
    # Each bad call returned an error code whose message says what is wrong; MPI_Error_string
    # gives the same message.
    assert (
        "is an allreduce algorithm; ck_reduce takes a reduce:... name"
        in errors["reduce-with-allreduce-name"]
    )
    for label, coll in [
        ("bcast-unknown", "bcast"),
        ("alltoall-unknown", "alltoall"),
        ("barrier-unknown", "barrier"),
        ("reduce-unknown", "reduce"),
    ]:
        assert "unknown algorithm" in errors[label] and coll in errors[label], errors[label]
    assert "negative" in errors["allreduce-negative-count"]
    assert "NULL" in errors["allreduce-null-name"]
    assert "position" in errors["allreduce-malformed"]
    for label, text in errors.items():
        ck_message, _, mpi_string = text.partition(" | ")
        assert mpi_string.startswith(ck_message.splitlines()[0][:40]), (label, text)
