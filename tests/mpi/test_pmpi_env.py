"""The interposition library's settings from the environment: a value that does not parse or lies
outside its range is said once, on rank 0, with the value used instead, and the program's results
stay the MPI's; a statistics file that cannot be written is said, not lost silently. On both MPIs.

tests/programs/split_segments.c compares every allreduce with PMPI_Allreduce of the same data."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collkit.mpi import MPI, launch_command, launch_env
from mpi_support import built, compiled_program, mpich_or_skip, openmpi_or_skip, run_or_kill

P = 2


@pytest.fixture(scope="module", params=["mpich", "openmpi"])
def app(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[MPI, Path, Path, Path]:
    mpi = mpich_or_skip() if request.param == "mpich" else openmpi_or_skip()
    bindir = built(mpi)
    tmp = tmp_path_factory.mktemp(f"env-{mpi.kind}")
    exe = compiled_program(mpi, "split_segments", tmp)
    table = tmp / "table.json"
    rule = {
        "collective": "allreduce",
        "P": [1, 64],
        "bytes": [0, 1 << 40],
        "algorithm": "allreduce:rd",
    }
    table.write_text(json.dumps({"format": "collkit-tuning", "version": 1, "rules": [rule]}))
    return mpi, bindir, exe, table


def run(app: tuple[MPI, Path, Path, Path], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    mpi, bindir, exe, table = app
    base = {
        "LD_PRELOAD": str(bindir / "libcollkit_pmpi.so"),
        "COLLKIT_TUNING": str(table),
        "COLLKIT_SETUP_US": "0",
    }
    full, _ = launch_env(mpi, P, {**base, **env})
    return run_or_kill(launch_command(mpi, P, [str(exe), "1000", "2"]), full)


def ok(r: subprocess.CompletedProcess[str]) -> None:
    assert r.returncode == 0 and "split_segments ok" in r.stdout, r.stdout + r.stderr[-3000:]


BAD = [
    ("COLLKIT_SHM", "banana", "is not 0 or 1: 1 is used"),
    ("COLLKIT_SHM_IN_TURN", "banana", "is not 0 or 1: 1 is used"),
    ("COLLKIT_SHM_MAX", "-1", "is not a number of bytes from 0 to 1073741824"),
    ("COLLKIT_SHM_MAX", "99999999999999999999", "is not a number of bytes"),
    ("COLLKIT_SPIN_US", "-5", "is not a number of microseconds from 0 to 10000000: 20 is used"),
    ("COLLKIT_SPIN_US", "1e308", "is not a number of microseconds"),
    ("COLLKIT_SETUP_US", "abc", "is not a number of microseconds from 0 to 1e+09: 400 is used"),
    ("COLLKIT_VERBOSE", "yes", "is not a level from 0 to 9: 0 is used"),
]


@pytest.mark.parametrize(("name", "value", "said"), BAD)
def test_a_bad_setting_is_said_once_and_the_results_stay_right(
    app: tuple[MPI, Path, Path, Path], name: str, value: str, said: str
) -> None:
    r = run(app, {name: value})
    ok(r)
    line = f"collkit: {name}={value} {said}"
    assert r.stderr.count(f"collkit: {name}=") == 1, r.stderr[-3000:]
    assert line in r.stderr, r.stderr[-3000:]


def test_good_settings_are_taken_without_a_word(app: tuple[MPI, Path, Path, Path]) -> None:
    env = {"COLLKIT_SHM": "0", "COLLKIT_SHM_MAX": "8192", "COLLKIT_SPIN_US": "5"}
    r = run(app, env)
    ok(r)
    assert "collkit: COLLKIT_" not in r.stderr, r.stderr[-3000:]


def test_a_stats_file_that_cannot_be_written_is_said(app: tuple[MPI, Path, Path, Path]) -> None:
    r = run(app, {"COLLKIT_STATS": "/dev/full"})
    ok(r)
    assert "collkit: cannot write COLLKIT_STATS=/dev/full: No space left on device" in r.stderr, (
        r.stderr[-3000:]
    )


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(
        [
            "COLLKIT_SHM",
            "COLLKIT_SHM_MAX",
            "COLLKIT_SPIN_US",
            "COLLKIT_SHM_IN_TURN",
            "COLLKIT_VERBOSE",
        ]
    ),
    value=st.text(
        alphabet=st.sampled_from(list("0123456789-+.e xabc_٣８")), min_size=1, max_size=24
    ).filter(lambda v: v.strip() == v and v.isprintable()),
)
def test_any_value_runs_right_and_is_taken_or_said(
    app: tuple[MPI, Path, Path, Path], name: str, value: str
) -> None:
    r = run(app, {name: value})
    ok(r)
    said = r.stderr.count(f"collkit: {name}=")
    assert said <= 1, r.stderr[-3000:]
    plain = value.isascii() and value.lstrip("-").isdigit()
    if not plain:  # nothing but ASCII digits is a number here: everything else is said
        assert said == 1, (value, r.stderr[-3000:])
