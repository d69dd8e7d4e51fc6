"""The interposition library's quick paths (untimed: no COLLKIT_VERBOSE, no COLLKIT_STATS) keep
what they learn of a communicator by its handle's value; MPI hands a freed communicator's handle
to the next one made, of another size. Every call must still take its own communicator's rule,
both ways: a size the table routes after a size it leaves to the MPI under the same handle, and
the other way round. Both MPIs; the counts come from collkit_pmpi_counts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from collkit.mpi import launch_command, launch_env
from mpi_support import built, mpich_or_skip, openmpi_or_skip, run_or_kill

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
ROUNDS, CALLS = 20, 3  # as comm_cache_counts.c


def run_counted(
    tmp_path: Path,
    kind: str,
    P: int,
    program: str,
    rule: dict[str, object] | list[dict[str, object]],
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> dict[str, int]:
    """Builds tests/programs/`program`.c, runs it on P ranks under the library with a table of
    `rule` (or of these rules), untimed (the library's quick paths are the ones tested), and
    returns the words and numbers world rank 0 printed ("ran R declined D ...")."""
    mpi = mpich_or_skip() if kind == "mpich" else openmpi_or_skip()
    lib = built(mpi) / "libcollkit_pmpi.so"
    cc = Path(mpi.mpicxx).parent / Path(mpi.mpicxx).name.replace("mpicxx", "mpicc")
    if not cc.exists():
        pytest.skip(f"no mpicc beside {mpi.mpicxx}")
    exe = tmp_path / program
    subprocess.run([str(cc), "-O1", "-o", str(exe), str(PROGRAMS / f"{program}.c"), "-ldl"],
                   check=True)  # fmt: skip
    t = tmp_path / "t.json"
    rules = rule if isinstance(rule, list) else [rule]
    t.write_text(json.dumps({"format": "collkit-tuning", "version": 1, "rules": rules}))
    full, _ = launch_env(mpi, P, {"LD_PRELOAD": str(lib), "COLLKIT_TUNING": str(t), **(env or {})})
    for k in ("COLLKIT_VERBOSE", "COLLKIT_STATS"):
        full.pop(k, None)
    r = run_or_kill(launch_command(mpi, P, [str(exe), *args]), full)
    assert r.returncode == 0, r.stderr[-3000:]
    words = r.stdout.split()
    return {w: int(n) for w, n in zip(words[0::2], words[1::2], strict=True)}


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
@pytest.mark.parametrize("P", [2, 4])
def test_a_reused_handle_takes_its_own_communicators_rule(
    tmp_path: Path, kind: str, P: int
) -> None:
    rule = {"collective": "allreduce", "P": [P, P], "bytes": [0, 1 << 20],
            "algorithm": "allreduce:rd"}  # fmt: skip
    got = run_counted(tmp_path, kind, 4, "comm_cache_counts", rule)
    assert list(got)[:4] == ["ran", "declined", "reused", "wrong"], got
    assert got["wrong"] == 0 and got["declined"] == 0, got
    assert got["reused"] > 0, got  # the case tested came up: a freed handle came back
    # World rank 0's calls that collkit ran: each round's 3 on the half (P = 2), or the 3 on the
    # world's duplicate and the 1 on MPI_COMM_WORLD (P = 4); the others went to the MPI.
    assert got["ran"] == (ROUNDS * CALLS if P == 2 else ROUNDS * (CALLS + 1)), got


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
def test_a_handle_sent_to_the_mpi_by_its_key_routes_on_its_next_communicator(
    tmp_path: Path, kind: str
) -> None:
    """Both sizes covered, the 4-byte sum left to the MPI at P = 4 by its bytes (the call the
    wrapper sends there by its key alone) and routed at P = 2: the halves that come back under
    the 4-rank communicator's freed handle must be routed."""
    rules = [{"collective": "allreduce", "P": [2, 2], "bytes": [0, 1 << 20],
              "algorithm": "allreduce:rd"},
             {"collective": "allreduce", "P": [4, 4], "bytes": [8, 1 << 20],
              "algorithm": "allreduce:rd"}]  # fmt: skip
    got = run_counted(tmp_path, kind, 4, "comm_cache_counts", rules, args=("dup-first",))
    assert list(got)[:4] == ["ran", "declined", "reused", "wrong"], got
    assert got["wrong"] == 0 and got["declined"] == 0, got
    assert got["reused"] > 0, got  # the case tested came up: a half took the freed handle
    assert got["ran"] == ROUNDS * CALLS, got  # the halves' sums on world rank 0, none on 4 ranks


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
@pytest.mark.parametrize("P", [2, 4])
def test_calls_unlike_the_one_before_each_take_their_own_rule(
    tmp_path: Path, kind: str, P: int
) -> None:
    """A rotating root and two sizes drawn at random, one routed and one left to the MPI: few
    calls repeat the one before, and more calls differ than decisions are remembered."""
    rule = {"collective": "bcast", "P": [P, P], "bytes": [64, 64], "algorithm": "bcast:binomial"}
    got = run_counted(tmp_path, kind, P, "alternating_calls", rule, {"COLLKIT_SETUP_US": "0"})
    assert list(got)[:4] == ["ran", "declined", "wrong", "expected"], got
    assert got["wrong"] == 0 and got["declined"] == 0, got
    assert 0 < got["expected"] < 400, got
    assert got["ran"] == got["expected"], got  # every 64-byte broadcast, none of the 8-byte ones
