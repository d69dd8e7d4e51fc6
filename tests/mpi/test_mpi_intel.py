"""Intel MPI as the third MPI (python/collkit/mpi/intel.py): detection, rows with its own
algorithms forced by I_MPI_ADJUST_<COLL>, collkit's executor against its collectives, and the
tuning file it reads. Needs Intel MPI from PyPI in .venv/impi (scripts/test.sh installs
impi-rt / impi-devel <2021.19 there, 2021.18.1: 2021.19 requires a libfabric that is not on PyPI);
skipped with the reason otherwise."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from collkit.cli import main
from collkit.mpi import MPI, IntelMpi, build, find_mpi, launch_command, launch_env
from collkit.mpi.intel import ALGORITHMS, tuning_env
from collkit.tune.select import Choice, Comparison
from mpi_support import TIMEOUT_S, intel_or_skip

IMPI = Path(sys.prefix) / "impi"


@pytest.fixture(scope="module")
def impi() -> MPI:
    # scripts/test.sh installs it: python -m venv .venv/impi &&
    # .venv/impi/bin/pip install 'impi-rt<2021.19' 'impi-devel<2021.19'
    mpi = intel_or_skip()
    assert isinstance(mpi, IntelMpi), mpi
    return mpi


def test_intel_mpi_is_detected(impi: MPI) -> None:
    assert impi.version.startswith("Intel MPI 2021"), impi.version
    assert Path(impi.mpiexec) == IMPI / "bin" / "mpiexec" and "Intel MPI asked for" in impi.reason
    # found by its mpiexec alone too, as a user passes it
    assert isinstance(find_mpi(impi.mpiexec), IntelMpi)
    assert impi.native_algorithms("allreduce")[:2] == [
        "impi:recursive_doubling",
        "impi:rabenseifner",
    ]


# Slow: collkit's MPI programs are built once more, for Intel MPI (a few minutes on 2 cores).
@pytest.mark.slow
def test_rows_of_forced_intel_algorithms(
    impi: MPI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rows"
    code = main(
        ["bench", "allreduce", "--mpiexec", impi.mpiexec, "--algos",
         "rd,native,impi:ring,impi:recursive_doubling", "-P", "3", "--sizes", "8,1KiB",
         "--iters", "20", "--warmup", "2", "--no-plot", "-o", str(out / "COLLECTIVE.jsonl")]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err[-3000:]
    assert "MPI: Intel MPI 2021" in err and "--mpiexec" in err
    rows = [json.loads(x) for x in (out / "allreduce.jsonl").read_text().splitlines()]
    algos = {r["algorithm"] for r in rows}
    assert algos == {"allreduce:rd", "native", "impi:ring", "impi:recursive_doubling"}
    assert all(r["mpi"].startswith("Intel MPI") for r in rows), rows
    # collkit's rows are checked against the MPI's own call; the MPI against itself proves
    # nothing, so native and the forced algorithms have no verdict (docs/mpi.md)
    assert all(r["valid"] is (True if r["algorithm"] == "allreduce:rd" else None) for r in rows)
    assert all(r["median_us"] > 0 and not r["error"] for r in rows), rows


@pytest.mark.slow
def test_collkit_matches_intel_mpi_under_each_forced_allreduce(impi: MPI) -> None:
    bindir = build(impi, ["collkit_conformance"])
    for algo in ALGORITHMS["allreduce"]:
        env, _ = launch_env(impi, 3, impi.force_env("allreduce", f"impi:{algo}"))
        cmd = launch_command(
            impi, 3, [str(bindir / "collkit_conformance"), "--algos", "allreduce:rd"]
        )
        r = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
        assert r.returncode == 0 and "failures=0" in r.stdout, (algo, r.stdout[-2000:], r.stderr)


@pytest.mark.slow
def test_tuning_file_is_read_by_intel_mpi(impi: MPI, tmp_path: Path) -> None:
    win = Comparison("impi:ring", 1.0, 2.0, 2.0, 1e-9, (1.8, 2.2))
    text = tuning_env([Choice("allreduce", 3, 8, "measured", None, win, [win])], "test")
    assert 'I_MPI_ADJUST_ALLREDUCE="8:8-15@3-3"' in text
    env_line = next(ln for ln in text.splitlines() if ln.startswith("I_MPI_ADJUST"))
    key, _, value = env_line.partition("=")
    env, _ = launch_env(impi, 3, {key: value.strip('"'), "I_MPI_DEBUG": "5"})
    bindir = build(impi, ["collkit_conformance"])
    cmd = launch_command(impi, 3, [str(bindir / "collkit_conformance"), "--algos", "allreduce:rd"])
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "failures=0" in r.stdout, out[-3000:]
    assert "I_MPI_ADJUST_ALLREDUCE=8:8-15@3-3" in out  # Intel MPI read the variable
    assert not math.isnan(win.speedup)
