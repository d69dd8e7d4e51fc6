"""libcollkit_pmpi.so, the interposition library, on programs that know nothing of collkit: a C
program with every routed collective (world, a split communicator, an intercommunicator,
MPI_IN_PLACE, a strided type, a non-commutative op), an mpi4py script, and LAMMPS from Debian
(built against Open MPI). Each runs with and without the library: the per-rank outputs must be
identical, and the decision log must show that collkit's algorithms ran. The table's reader is
tested in tests/mpi/test_tuning_table.py (and under ASan/UBSan in core/tests/test_tuning.cpp)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from collkit.mpi import MPI, launch_command, launch_env
from collkit.mpi.stats import read_stats, time_in_collectives_us, world_rank
from mpi_support import TIMEOUT_S, built, mpich_or_skip, openmpi_or_skip, run_or_kill

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parents[1] / "programs"

ONE_MIB = 1 << 20


def rule(collective: str, algorithm: str, P: tuple[int, int] = (2, 64)) -> dict[str, object]:
    top = 0 if collective == "barrier" else ONE_MIB
    return {"collective": collective, "P": list(P), "bytes": [0, top], "algorithm": algorithm}


ALL_RULES = [
    rule("allreduce", "allreduce:ring"),
    rule("reduce", "reduce:binomial"),
    rule("bcast", "bcast:binomial"),
    rule("alltoall", "alltoall:bruck(r=3)"),
    rule("barrier", "barrier:dissemination", (1, 64)),
    rule("allgather", "allgather:ring"),
    rule("reduce_scatter_block", "reduce_scatter_block:pairwise"),
    rule("gather", "gather:linear"),
    rule("scatter", "scatter:linear"),
]
EVERYTHING: dict[str, object] = {"format": "collkit-tuning", "version": 1, "rules": ALL_RULES}


def write_table(path: Path, table: object) -> Path:
    path.write_text(json.dumps(table))
    return path


def mpicc(mpi: MPI) -> str:
    cc = Path(mpi.mpicxx).parent / Path(mpi.mpicxx).name.replace("mpicxx", "mpicc")
    if not cc.exists():
        pytest.skip(f"no mpicc beside {mpi.mpicxx}")
    return str(cc)


@pytest.fixture(scope="module")
def mpich_app(tmp_path_factory: pytest.TempPathFactory) -> tuple[MPI, Path, Path]:
    mpi = mpich_or_skip()
    bindir = built(mpi)
    exe = tmp_path_factory.mktemp("app") / "collectives_app"
    subprocess.run(
        [mpicc(mpi), "-O1", "-o", str(exe), str(PROGRAMS / "collectives_app.c")], check=True
    )
    return mpi, bindir, exe


def launch(
    mpi: MPI, np: int, program: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full, _ = launch_env(mpi, np, env)
    return run_or_kill(launch_command(mpi, np, program), full)


def collkit_run(
    mpi: MPI, np: int, table: Path | None, program: list[str], *extra: str
) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "collkit", "run", "-np", str(np), "--verbose", *extra]
    if table is not None:
        args += ["--tuning", str(table)]
    env = dict(os.environ, MPIEXEC=mpi.mpiexec, MPICXX=mpi.mpicxx)
    return run_or_kill([*args, "--", *program], env, TIMEOUT_S * 2)


def outputs(prefix: Path, np: int) -> list[str]:
    return [Path(f"{prefix}.{r}").read_text() for r in range(np)]


@pytest.mark.parametrize("P", [3, 4])
def test_c_program_gives_identical_results_under_the_library(
    mpich_app: tuple[MPI, Path, Path], tmp_path: Path, P: int
) -> None:
    mpi, _, exe = mpich_app
    table = write_table(tmp_path / "t.json", EVERYTHING)
    plain = launch(mpi, P, [str(exe), str(tmp_path / "plain")])
    assert plain.returncode == 0, plain.stderr[-2000:]
    stats = tmp_path / "calls.jsonl"
    lib = collkit_run(mpi, P, table, [str(exe), str(tmp_path / "lib")], "--stats", str(stats))
    assert lib.returncode == 0, lib.stderr[-3000:]
    assert outputs(tmp_path / "lib", P) == outputs(tmp_path / "plain", P)
    assert len(outputs(tmp_path / "plain", P)[0].splitlines()) > 50
    log = lib.stderr
    for r in ALL_RULES:
        if r["collective"] != "barrier":
            assert f"-> {r['algorithm']} (table)" in log, log[-3000:]
    # What the table's algorithm cannot do goes to the MPI, and says why.
    assert "-> native (non-commutative op)" in log  # ring needs a commutative op
    assert "-> native (intercommunicator)" in log
    # reduce:binomial keeps the rank order, so it takes the non-commutative op itself (3 2x2
    # int matrices: 48 B); the ring allreduce leaves it to the MPI.
    routes = {(r.collective, r.algorithm, r.P, r.bytes) for r in read_stats(stats)}
    assert ("reduce", "reduce:binomial", P, 48) in routes
    assert ("allreduce", "native", P, 48) in routes and (
        "allreduce",
        "allreduce:ring",
        P,
        56,
    ) in routes


def test_calls_the_table_does_not_cover_go_to_the_mpi(
    mpich_app: tuple[MPI, Path, Path], tmp_path: Path
) -> None:
    mpi, _, exe = mpich_app
    only_big = dict(EVERYTHING, rules=[dict(r, P=[64, 64]) for r in ALL_RULES])
    table = write_table(tmp_path / "t.json", only_big)
    stats = tmp_path / "calls.jsonl"
    r = collkit_run(mpi, 2, table, [str(exe), str(tmp_path / "o")], "--stats", str(stats))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "(table)" not in r.stderr
    assert "-> native (not in the table)" in r.stderr
    rows = read_stats(stats, rank=None)  # the call counts are rows of collkit's one schema
    assert rows and all(row.algorithm == "native" for row in rows)
    assert {row.collective for row in rows} == {r["collective"] for r in ALL_RULES}
    assert all(row.iterations >= 1 and row.mean_us > 0 for row in rows)
    # Every rank's own rows, its own time: the program calls alike on both ranks.
    assert {world_rank(row) for row in rows} == {0, 1}
    calls = [{(row.collective, row.bytes): row.iterations for row in rows if world_rank(row) == r}
             for r in (0, 1)]  # fmt: skip
    assert calls[0] == calls[1]
    assert set(time_in_collectives_us(rows)) == {0, 1}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"format": "collkit-tuning", "version": 7, "rules": []}', '"version" must be 1'),
        (
            '{"format": "collkit-tuning", "version": 1, "rules": [{"collective": "allreduce", '
            '"P": [2, 4], "bytes": [0, 8], "algorithm": "allreduce:nope"}]}',
            "rule 0",
        ),
        (
            '{"format": "collkit-tuning", "version": 1, "rules": [{"collective": "bcast", '
            '"P": [2, 4], "bytes": [0, 8], "algorithm": "allreduce:rd"}]}',
            "is not a bcast algorithm",
        ),
    ],
)
def test_a_bad_table_is_reported_once_and_everything_goes_to_the_mpi(
    mpich_app: tuple[MPI, Path, Path], tmp_path: Path, text: str, message: str
) -> None:
    mpi, bindir, exe = mpich_app
    table = tmp_path / "bad.json"
    table.write_text(text)
    lib = str(bindir / "libcollkit_pmpi.so")
    r = launch(
        mpi, 3, [str(exe), str(tmp_path / "lib")], {"LD_PRELOAD": lib, "COLLKIT_TUNING": str(table)}
    )
    assert r.returncode == 0, r.stderr[-2000:]
    lines = [ln for ln in r.stderr.splitlines() if "not used" in ln]
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert "every call goes to the MPI" in lines[0]
    plain = launch(mpi, 3, [str(exe), str(tmp_path / "plain")])
    assert outputs(tmp_path / "lib", 3) == outputs(tmp_path / "plain", 3)
    # `collkit run` checks the table before launching anything: exit 2 and the reason.
    cli = collkit_run(mpi, 3, table, [str(exe)])
    assert cli.returncode == 2 and "error" in cli.stderr and plain.returncode == 0


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
def test_a_freed_handle_given_again_is_decided_anew(tmp_path: Path, kind: str) -> None:
    """The library remembers each call's decision; MPI gives a freed communicator's handle to the
    next one made (another size here) and a freed op's to the next op (another commutativity):
    every call must still take the rule of its own communicator's size and its own op."""
    mpi = mpich_or_skip() if kind == "mpich" else openmpi_or_skip()
    built(mpi)
    exe = tmp_path / "reused_handles"
    src = str(PROGRAMS / "reused_handles.c")
    subprocess.run([mpicc(mpi), "-O1", "-o", str(exe), src], check=True)
    table = write_table(
        tmp_path / "t.json",
        dict(EVERYTHING, rules=[rule("allreduce", "allreduce:rd", (2, 2)),
                                rule("allreduce", "allreduce:ring", (4, 4))]),
    )  # fmt: skip
    plain = launch(mpi, 4, [str(exe), str(tmp_path / "plain")])
    assert plain.returncode == 0, plain.stderr[-2000:]
    # The program says how often a freed handle came back: 40 rounds, each comm and op.
    reused = plain.stdout.split()
    assert reused[:2] == ["reused", "comm"] and int(reused[2]) > 0, plain.stdout
    stats = tmp_path / "calls.jsonl"
    lib = collkit_run(mpi, 4, table, [str(exe), str(tmp_path / "lib")], "--stats", str(stats))
    assert lib.returncode == 0, lib.stderr[-3000:]
    assert outputs(tmp_path / "lib", 4) == outputs(tmp_path / "plain", 4)
    calls = {(r.algorithm, r.P, r.bytes): r.iterations for r in read_stats(stats)}
    # World rank 0: 40 calls on its half (2 ranks, 8 ints), 40 on the world's duplicate, and the
    # 2x2 matrices: the op that says it commutes goes to the ring, the one that does not to the MPI.
    assert calls == {
        ("allreduce:rd", 2, 32): 40,
        ("allreduce:ring", 4, 32): 40,
        ("allreduce:ring", 4, 16): 40,
        ("native", 4, 16): 40,
    }, calls


def test_mpi4py_script_gives_identical_results_under_the_library(tmp_path: Path) -> None:
    mpi = mpich_or_skip()
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip(
            "mpi4py is not installed; build it against the pip MPICH: "
            "MPICC=.venv/bin/mpicc pip install --no-binary mpi4py mpi4py"
        )
    table = write_table(tmp_path / "t.json", EVERYTHING)
    script = [sys.executable, str(PROGRAMS / "mpi4py_app.py")]
    plain = launch(mpi, 4, [*script, str(tmp_path / "plain")])
    assert plain.returncode == 0, plain.stderr[-2000:]
    lib = collkit_run(mpi, 4, table, [*script, str(tmp_path / "lib")])
    assert lib.returncode == 0, lib.stderr[-3000:]
    assert outputs(tmp_path / "lib", 4) == outputs(tmp_path / "plain", 4)
    for algo in ("allreduce:ring", "reduce:binomial", "bcast:binomial", "alltoall:bruck(r=3)"):
        assert f"P=4 8000 B (class 4096..8191 B) -> {algo} (table)" in lib.stderr or (
            algo == "alltoall:bruck(r=3)" and f"-> {algo} (table)" in lib.stderr
        ), lib.stderr[-3000:]
    for algo in ("allgather:ring", "reduce_scatter_block:pairwise", "gather:linear"):
        assert f"P=4 8000 B (class 4096..8191 B) -> {algo} (table)" in lib.stderr, lib.stderr[
            -3000:
        ]
    assert "P=4 4000 B (class 2048..4095 B) -> scatter:linear (table)" in lib.stderr


def test_lammps_from_debian_gives_identical_thermo_output(tmp_path: Path) -> None:
    """LAMMPS (apt `lammps`, built against Open MPI) runs its bundled melt example. At P = 2 every
    reduction order gives the same bits (a + b = b + a), so the thermo output is identical."""
    lmp = shutil.which("lmp")
    melt = Path("/usr/share/lammps/examples/melt/in.melt")
    if lmp is None or not melt.exists():
        pytest.skip("LAMMPS not installed (apt-get install lammps lammps-examples)")
    mpi = openmpi_or_skip()
    built(mpi)
    inp = tmp_path / "in.melt"
    inp.write_text(
        melt.read_text().replace("run\t\t250", "run\t\t100").replace("run 250", "run 100")
    )
    rules = [
        rule("allreduce", "allreduce:rd"),
        rule("bcast", "bcast:binomial"),
        rule("barrier", "barrier:dissemination"),
    ]
    table = write_table(tmp_path / "t.json", dict(EVERYTHING, rules=rules))
    args = [lmp, "-in", str(inp), "-log", "none", "-nocite"]
    plain = launch(mpi, 2, args)
    assert plain.returncode == 0, plain.stderr[-2000:]
    lib = collkit_run(mpi, 2, table, args)
    assert lib.returncode == 0, lib.stderr[-3000:]

    def thermo(out: str) -> list[str]:
        lines = out.splitlines()
        start = next(i for i, ln in enumerate(lines) if ln.strip().startswith("Step"))
        end = next(i for i, ln in enumerate(lines) if ln.startswith("Loop time"))
        return lines[start:end]

    assert len(thermo(plain.stdout)) >= 3
    assert thermo(lib.stdout) == thermo(plain.stdout)
    assert "-> allreduce:rd (table)" in lib.stderr, lib.stderr[-3000:]
    assert "-> bcast:binomial (table)" in lib.stderr


@pytest.mark.parametrize("P", [2, 3])
def test_calls_on_moving_buffers_give_the_mpis_results(tmp_path: Path, P: int) -> None:
    """The same call on other buffers runs the kept plan moved to them (no preparing again):
    every collective, in place and not, rooted at the first and the last rank, on a pool of
    three buffer sets with new data each call, equals the MPI's own call byte for byte."""
    mpi = mpich_or_skip()
    built(mpi)
    exe = tmp_path / "moved_buffers"
    subprocess.run(
        [mpicc(mpi), "-O1", "-o", str(exe), str(PROGRAMS / "moved_buffers.c")], check=True
    )
    table = write_table(tmp_path / "t.json", EVERYTHING)
    stats = tmp_path / "calls.jsonl"
    r = collkit_run(mpi, P, table, [str(exe)], "--stats", str(stats))
    assert r.returncode == 0 and r.stdout.startswith("OK "), r.stdout[-2000:] + r.stderr[-2000:]
    routed = {row.collective for row in read_stats(stats) if row.algorithm != "native"}
    want = {str(x["collective"]) for x in ALL_RULES} - {"barrier"}
    assert routed >= want, routed  # collkit's route ran each of them
