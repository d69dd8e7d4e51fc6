"""Each MPI an object (python/collkit/mpi/): detection, the choice of an MPI and why, forcing
its own algorithms, the row-name grammar (`native`, `impl:algo`) and the registry's MPI
equivalents, and the tools a build needs."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import collkit.mpi.programs as mpibuild
from collkit.algorithms import algorithms, is_mpi_algorithm, parse_row_name
from collkit.cli import main
from collkit.errors import AlgorithmNameError, InvalidArgumentError
from collkit.mpi import IMPLEMENTATIONS, MPI, IntelMpi, Mpich, OpenMpi, find_mpi, implementation
from collkit.mpi.find import wheel_mpiexec

MPICH_VERSION = "HYDRA build details:\n    Version:                                 4.3.0\n"
OMPI_VERSION = "mpiexec (OpenRTE) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n"
IMPI_VERSION = (
    "Intel(R) MPI Library for Linux* OS, Version 2021.14 Build 20250213 (id: 0d7f579)\n"
    "Copyright 2003-2025, Intel Corporation.\n"
)
# What the PyPI impi-rt 2021.18.1 that scripts/test.sh installs prints.
IMPI_2021_18 = (
    "Intel(R) MPI Library for Linux* OS, Version 2021.18.1 Build 20260626 (id: b44796a)\n"
    "Copyright 2003-2026, Intel Corporation.\n"
)


def test_detection_and_versions() -> None:
    assert implementation(MPICH_VERSION) is Mpich
    assert implementation(OMPI_VERSION) is OpenMpi
    assert implementation(IMPI_VERSION) is IntelMpi  # its hydra is not taken for MPICH
    assert implementation("some other launcher") is MPI
    assert Mpich.version_of(MPICH_VERSION) == "MPICH 4.3.0"
    assert OpenMpi.version_of(OMPI_VERSION) == "Open MPI 4.1.4"
    assert IntelMpi.version_of(IMPI_VERSION) == "Intel MPI 2021.14"
    assert implementation(IMPI_2021_18) is IntelMpi
    assert IntelMpi.version_of(IMPI_2021_18) == "Intel MPI 2021.18.1"


def _mpi(cls: type[MPI]) -> MPI:
    return cls(mpicxx="mpicxx", mpiexec="mpiexec", version="test")


def test_each_mpi_forces_its_own_algorithms() -> None:
    assert _mpi(Mpich).force_env("allreduce", "mpich:ring") == {
        "MPIR_CVAR_DEVICE_COLLECTIVES": "none",
        "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "ring",
    }
    assert _mpi(OpenMpi).force_env("bcast", "ompi:binomial") == {
        "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
        "OMPI_MCA_coll_tuned_bcast_algorithm": "6",
    }
    assert _mpi(IntelMpi).force_env("allreduce", "impi:ring") == {"I_MPI_ADJUST_ALLREDUCE": "8"}
    assert _mpi(IntelMpi).native_algorithms("alltoall")[0] == "impi:bruck"
    for cls, name in [(Mpich, "ompi:ring"), (OpenMpi, "mpich:ring"), (IntelMpi, "impi:nope")]:
        with pytest.raises(InvalidArgumentError, match="not an algorithm of this MPI"):
            _mpi(cls).force_env("allreduce", name)
    assert _mpi(MPI).native_algorithms("allreduce") == []


def test_launch_flags_per_mpi() -> None:
    assert _mpi(OpenMpi).env_args({"A": "1"}) == ["-x", "A=1"]
    assert _mpi(Mpich).env_args({"A": "1"}) == ["-genv", "A", "1"]
    assert _mpi(OpenMpi).oversubscribe_args() == ["--oversubscribe"]
    assert _mpi(IntelMpi).placement_args("node") == ["-ppn", "1"]


# ---- the one grammar's row names ----------------------------------------------------------------


def test_row_names() -> None:
    assert parse_row_name("native").kind == "native"
    assert parse_row_name("allreduce:native").collective == "allreduce"
    r = parse_row_name("mpich:recursive_doubling")
    assert (r.kind, r.impl, r.algorithm, r.collective) == (
        "mpi",
        "mpich",
        "recursive_doubling",
        None,
    )
    assert parse_row_name("ompi:ring").impl == "ompi" and parse_row_name("impi:ring").impl == "impi"
    assert parse_row_name("allreduce:rm(a4)").kind == "collkit"
    assert is_mpi_algorithm("ompi:ring") and not is_mpi_algorithm("allreduce:ring")
    assert not is_mpi_algorithm("mpich:ring(")
    with pytest.raises(AlgorithmNameError, match="takes no arguments") as e:
        parse_row_name("mpich:ring(k=2)")
    assert "^" in str(e.value)
    with pytest.raises(AlgorithmNameError, match="expected ':'"):
        parse_row_name("ompi ring")
    with pytest.raises(AlgorithmNameError, match="unknown collective"):
        parse_row_name("mpi:ring")


@given(st.text(max_size=40))
def test_row_name_parser_accepts_or_refuses_with_its_error(text: str) -> None:
    try:
        r = parse_row_name(text)
    except AlgorithmNameError:
        return
    assert r.kind in ("collkit", "native", "mpi")
    if r.kind == "mpi":
        assert r.impl in ("mpich", "ompi", "impi") and r.algorithm


@given(
    st.sampled_from(["mpich", "ompi", "impi"]),
    st.from_regex(r"[a-z_][a-z0-9_]{0,20}", fullmatch=True),
)
def test_every_impl_algo_parses_back(impl: str, algo: str) -> None:
    r = parse_row_name(f" {impl} : {algo} ")
    assert (r.kind, r.impl, r.algorithm) == ("mpi", impl, algo)


def test_registry_equivalents_are_algorithms_of_those_mpis() -> None:
    by_prefix = {cls.prefix: _mpi(cls) for cls in IMPLEMENTATIONS}
    seen = set()
    for spec in algorithms():
        for e in spec["mpi_equivalents"]:
            r = parse_row_name(e)
            mpi = by_prefix[r.impl]
            assert r.algorithm in mpi.algorithms(spec["collective"]), (spec["name"], e)
            seen.add(r.impl)
    assert seen == {"mpich", "ompi", "impi"}
    ring = next(s for s in algorithms("allreduce") if s["name"] == "allreduce:ring")
    assert set(ring["mpi_equivalents"]) == {"mpich:ring", "ompi:ring", "impi:ring"}


# ---- which MPI, and why -------------------------------------------------------------------------


def _fake_mpi(d: Path, version_text: str) -> Path:
    d.mkdir(parents=True)
    for name in ("mpiexec", "mpicxx"):
        p = d / name
        lines = " ".join(f"'{ln}'" for ln in version_text.splitlines())
        p.write_text(f"#!/bin/sh\nprintf '%s\\n' {lines}\n")  # builtins only: PATH may be bare
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return d / "mpiexec"


def test_the_first_mpiexec_on_path_is_preferred(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MPIEXEC", raising=False)
    monkeypatch.delenv("MPICXX", raising=False)
    monkeypatch.delenv("MPICC", raising=False)
    fake = _fake_mpi(tmp_path / "openmpi" / "bin", OMPI_VERSION)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    mpi = find_mpi()
    assert isinstance(mpi, OpenMpi) and mpi.mpiexec == str(fake)
    assert mpi.reason == "the first mpiexec on PATH"
    assert "the first mpiexec on PATH" in mpi.describe()
    # An explicit choice wins, and says so.
    other = _fake_mpi(tmp_path / "mpich" / "bin", MPICH_VERSION)
    monkeypatch.setenv("MPIEXEC", str(other))
    mpi = find_mpi()
    assert isinstance(mpi, Mpich) and mpi.reason == "MPIEXEC is set"
    assert find_mpi(str(other)).reason == "--mpiexec"


def test_the_wheel_when_no_mpiexec_is_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if wheel_mpiexec() is None:
        pytest.skip("the PyPI mpich wheel is not installed in this Python")
    for k in ("MPIEXEC", "MPICXX", "MPICC"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    mpi = find_mpi()
    assert isinstance(mpi, Mpich)
    assert mpi.reason == "no mpiexec on PATH: the PyPI mpich wheel of this Python"


def test_a_relative_mpiexec_or_prefix_is_made_absolute(monkeypatch: pytest.MonkeyPatch) -> None:
    # unchecked: `collkit calibrate --mpiexec .venv/bin/mpiexec` (docs/simulator.md's command)
    # failed in CMake: "The CMAKE_CXX_COMPILER: .venv/bin/mpicxx is not a full path"
    wheel = wheel_mpiexec()
    if wheel is None:
        pytest.skip("the PyPI mpich wheel is not installed in this Python")
    for k in ("MPIEXEC", "MPICXX", "MPICC"):
        monkeypatch.delenv(k, raising=False)
    bindir = wheel.parent
    monkeypatch.chdir(bindir.parent)
    for mpi in (find_mpi(f"{bindir.name}/mpiexec"), find_mpi(prefix=".")):
        assert Path(mpi.mpiexec).is_absolute() and Path(mpi.mpicxx).is_absolute(), mpi
        assert Path(mpi.mpiexec).samefile(wheel)


# ---- what a build needs ----------------------------------------------------------------------


def test_missing_cmake_is_exit_2_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = _fake_mpi(tmp_path / "mpich" / "bin", MPICH_VERSION)
    monkeypatch.setenv("COLLKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # bench's default output folder lands here, not in the checkout
    monkeypatch.setattr(mpibuild.sys, "executable", str(tmp_path / "nowhere" / "python"))
    monkeypatch.setenv("PATH", str(fake.parent))  # an mpiexec, no cmake
    code = main(["bench", "allreduce", "--mpiexec", str(fake), "-P", "2", "--sizes", "8"])
    err = capsys.readouterr().err
    assert code == 2
    assert "cmake is needed to build collkit's MPI programs" in err
    assert "Traceback" not in err
    assert "MPI: MPICH 4.3.0" in err and "--mpiexec" in err  # which MPI, and why


def test_missing_compiler_is_exit_2_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = _fake_mpi(tmp_path / "mpich" / "bin", MPICH_VERSION)
    (fake.parent / "mpicxx").write_text("#!/bin/sh\necho 'g++: not found' >&2\nexit 127\n")
    monkeypatch.setenv("COLLKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    code = main(["bench", "allreduce", "--mpiexec", str(fake), "-P", "2", "--sizes", "8"])
    err = capsys.readouterr().err
    assert code == 2 and "does not run (is a C++ compiler" in err and "g++: not found" in err


def test_build_only_what_is_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="not collkit MPI programs"):
        mpibuild.build(_mpi(Mpich), ["rm -rf"])
    # Already there: nothing is built (no cmake, no compiler asked for).
    monkeypatch.setenv("COLLKIT_CACHE", str(tmp_path))
    monkeypatch.setattr(mpibuild, "_sources_hash", lambda root, mpi: "k")
    d = tmp_path / "mpi-mpich-k"
    d.mkdir()
    (d / "collkit_bench").write_text("")
    assert mpibuild.build(_mpi(Mpich), ["collkit_bench"]) == d
