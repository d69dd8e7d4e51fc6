"""Calls of many messages through the interposition library give what the MPI's own call gives, on
every kind of communicator and in every form, on both MPIs.

A non-blocking or persistent collkit call takes its messages' tags from a range of its own
(1/64 of the tags the MPI has). Open MPI puts no MPI_TAG_UB attribute on a communicator made by
MPI_Comm_split (the standard guarantees it on MPI_COMM_WORLD only), so a bound read there falls back
to the least the standard allows (32767) and a call's range to 512 tags: a ring in 16-byte segments
then sends thousands of messages to one peer, two of them with one tag in flight at once, matched
out of order (a wrong sum on every rank) or failing (and its clean-up cancelled a request Open MPI
will not cancel: the job aborted in MPI_Cancel). Open MPI 4.1's persistent collectives are its
MPIX_<Coll>_init (MPI 3.1 has no MPI_<Coll>_init): the library routes those too.

tests/programs/split_segments.c compares each call with PMPI_Allreduce of the same data (the MPI's
own call, which the library does not see) and counts the calls the library ran itself."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from collkit.mpi import MPI, launch_command, launch_env
from mpi_support import built, mpich_or_skip, openmpi_or_skip, run_or_kill

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
CALLS = 2
COMMS = ("world", "dup", "split")
FORMS = ("blocking", "non-blocking", "persistent")


@pytest.fixture(scope="module", params=["mpich", "openmpi"])
def app(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[MPI, Path, Path]:
    mpi = mpich_or_skip() if request.param == "mpich" else openmpi_or_skip()
    bindir = built(mpi)
    cc = Path(mpi.mpicxx).parent / Path(mpi.mpicxx).name.replace("mpicxx", "mpicc")
    if not cc.exists():
        pytest.skip(f"no mpicc beside {mpi.mpicxx}")
    exe = tmp_path_factory.mktemp(f"tags-{mpi.kind}") / "split_segments"
    subprocess.run([str(cc), "-O1", "-o", str(exe), str(PROGRAMS / "split_segments.c")], check=True)
    return mpi, bindir, exe


def run(
    app: tuple[MPI, Path, Path], P: int, count: int, algorithm: str, tmp: Path
) -> subprocess.CompletedProcess[str]:
    mpi, bindir, exe = app
    table = tmp / "table.json"
    rule = {"collective": "allreduce", "P": [1, 64], "bytes": [0, 1 << 40], "algorithm": algorithm}
    table.write_text(json.dumps({"format": "collkit-tuning", "version": 1, "rules": [rule]}))
    env = {
        "LD_PRELOAD": str(bindir / "libcollkit_pmpi.so"),
        "COLLKIT_TUNING": str(table),
        "COLLKIT_SETUP_US": "0",  # collkit's route from the first call
    }
    full, _ = launch_env(mpi, P, env)
    return run_or_kill(launch_command(mpi, P, [str(exe), str(count), str(CALLS)]), full)


@pytest.mark.parametrize(
    ("P", "count", "algorithm"),
    [
        (4, 20000, "allreduce:ring(seg=16B)"),  # 5000 segments: ~7500 messages to one peer
        (3, 4097, "allreduce:ring(seg=16B)"),
        (4, 200000, "allreduce:ring(seg=1KiB)"),
    ],
)
def test_many_messages_on_every_communicator_and_form_match_the_mpi(
    app: tuple[MPI, Path, Path], tmp_path: Path, P: int, count: int, algorithm: str
) -> None:
    mpi = app[0]
    r = run(app, P, count, algorithm, tmp_path)
    out = r.stdout + r.stderr[-3000:]
    assert "MISMATCH" not in r.stdout, out
    assert r.returncode == 0 and "split_segments ok" in r.stdout, out
    # Every call went to collkit's algorithm (none to the MPI): the persistent forms too, where
    # the MPI has them (MPI 4's MPI_Allreduce_init, or Open MPI 4's MPIX_Allreduce_init).
    routed = dict(
        (" ".join(line.split()[1:-1]), int(line.split()[-1]))
        for line in r.stdout.splitlines()
        if line.startswith("routed ")
    )
    for comm in COMMS:
        assert routed[f"{comm} blocking"] == CALLS, out
        assert routed[f"{comm} non-blocking"] == CALLS, out
        assert routed[f"{comm} persistent"] == 1, (mpi.kind, out)  # one init, CALLS starts
