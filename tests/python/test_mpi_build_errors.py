"""Building collkit's MPI programs against an MPI that cannot build them: the error names what is
missing (python/collkit/mpi/programs.py), and a compiler wrapper reached through a symlink is
used by its own path (python/collkit/mpi/find.py). Fake wrappers in a temporary folder stand in
for the MPI; nothing here compiles or uninstalls anything."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collkit.cli import main
from collkit.mpi import MissingToolError, OpenMpi, build, find_mpi
from collkit.mpi.find import resolve_wrapper
from collkit.mpi.mpich import Mpich
from collkit.mpi.programs import probe_error

HEADER = "probe.cpp:1:10: fatal error: mpi.h: No such file or directory\ncompilation terminated."
LIBRARY = (
    "/usr/bin/ld: cannot find -lmpi: No such file or directory\ncollect2: error: ld returned 1"
)


def script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def fake_openmpi(d: Path, compile_error: str) -> tuple[Path, Path]:
    """An Open MPI runtime without its development files: mpirun says it is Open MPI, and the
    C++ wrapper runs (--version) but fails to build anything with `compile_error`."""
    mpirun = script(d / "bin" / "mpirun", 'echo "mpirun (Open MPI) 4.1.4"')
    err = compile_error.replace("'", "'\\''")
    cxx = script(
        d / "bin" / "mpicxx",
        f'if [ "$1" = --version ]; then echo "g++ 12.2.0"; exit 0; fi\n'
        f"printf '%s\\n' '{err}' >&2\nexit 1",
    )
    return mpirun, cxx


@pytest.mark.parametrize(
    ("log", "what"),
    [
        (HEADER, ["mpi.h"]),
        (LIBRARY, ["libmpi.so"]),
        (HEADER + "\n" + LIBRARY, ["mpi.h", "libmpi.so"]),
    ],
)
def test_missing_development_files_name_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log: str, what: list[str]
) -> None:
    monkeypatch.setenv("COLLKIT_CACHE", str(tmp_path / "cache"))
    mpirun, cxx = fake_openmpi(tmp_path, log)
    mpi = OpenMpi(mpicxx=str(cxx), mpiexec=str(mpirun), version="Open MPI 4.1.4")
    with pytest.raises(MissingToolError) as e:
        build(mpi, ["libcollkit_mpi.so"])
    msg = str(e.value)
    first = msg.splitlines()[0]  # the sentence, not the compiler's words after it
    assert "libopenmpi-dev" in first and all(w in first for w in what), msg
    assert "CMake" not in msg and "cmake" not in msg, msg  # stopped before the build


def test_bench_says_which_package_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLLKIT_CACHE", str(tmp_path / "cache"))
    mpirun, cxx = fake_openmpi(tmp_path, LIBRARY)
    monkeypatch.setenv("MPICXX", str(cxx))
    out = tmp_path / "out" / "COLLECTIVE.jsonl"
    rc = main(
        ["bench", "allreduce", "-P", "2", "--mpiexec", str(mpirun), "--no-plot", "-o", str(out)]
    )
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "collkit bench: error:" in err and "libopenmpi-dev" in err, err
    assert "Traceback" not in err and "CMake" not in err, err


def test_another_compile_error_is_reported_whole(tmp_path: Path) -> None:
    """A wrapper that fails for another reason: its own words, and no package guessed."""
    mpirun, cxx = fake_openmpi(tmp_path, "g++: fatal error: cannot execute 'cc1plus'")
    mpi = Mpich(mpicxx=str(cxx), mpiexec=str(mpirun), version="MPICH 4.3.0")
    msg = str(probe_error(mpi, "g++: fatal error: cannot execute 'cc1plus'"))
    assert "cc1plus" in msg and "libmpich-dev" not in msg, msg


def test_symlinked_wrapper_is_used_by_its_own_path(tmp_path: Path) -> None:
    """A relocatable MPI's wrapper finds its headers beside itself: called through a link in
    another folder, it would look beside the link. find_mpi follows the link to it."""
    prefix = tmp_path / "opt" / "mpi"
    (prefix / "include").mkdir(parents=True)
    (prefix / "include" / "mpi.h").write_text("")
    mpirun = script(prefix / "bin" / "mpirun", 'echo "mpirun (Open MPI) 4.1.4"')
    real = script(
        prefix / "bin" / "mpicxx.openmpi",
        'here=$(dirname "$0")\n'
        'if [ "$1" = --version ]; then echo "g++ 12.2.0"; exit 0; fi\n'
        '[ -f "$here/../include/mpi.h" ] && exit 0\n'
        'echo "fatal error: mpi.h: No such file or directory" >&2; exit 1',
    )
    links = tmp_path / "home" / "bin"
    links.mkdir(parents=True)
    (links / "mpicxx").symlink_to(real)
    # A relative link to a link: both followed.
    (links / "mpic++").symlink_to("mpicxx")
    for link in (links / "mpicxx", links / "mpic++"):
        mpi = find_mpi(str(mpirun), mpicxx=str(link))
        assert mpi.mpicxx == str(real), mpi.mpicxx
    from collkit.mpi.programs import _check_mpi_files

    _check_mpi_files(find_mpi(str(mpirun), mpicxx=str(links / "mpicxx")), dict(os.environ))


def test_link_to_a_multi_call_binary_is_kept(tmp_path: Path) -> None:
    """Debian's mpicxx.openmpi -> opal_wrapper: the wrapper reads what it is from its name, so
    the chain stops at the last wrapper name."""
    (tmp_path / "opal_wrapper").write_text("")
    (tmp_path / "mpicxx.openmpi").symlink_to("opal_wrapper")
    (tmp_path / "alt").mkdir()
    (tmp_path / "alt" / "mpicxx").symlink_to(tmp_path / "mpicxx.openmpi")
    assert resolve_wrapper(str(tmp_path / "alt" / "mpicxx")) == str(tmp_path / "mpicxx.openmpi")
    assert resolve_wrapper(str(tmp_path / "mpicxx.openmpi")) == str(tmp_path / "mpicxx.openmpi")
    # A loop of links ends (at a link) instead of hanging.
    (tmp_path / "mpicxx.a").symlink_to("mpicxx.b")
    (tmp_path / "mpicxx.b").symlink_to("mpicxx.a")
    assert Path(resolve_wrapper(str(tmp_path / "mpicxx.a"))).name in ("mpicxx.a", "mpicxx.b")


@settings(max_examples=200, deadline=None)
@given(
    log=st.text(max_size=400),
    header=st.booleans(),
    library=st.booleans(),
    kind=st.sampled_from(["openmpi", "mpich"]),
)
def test_any_compiler_log_gives_a_clear_error(
    log: str, header: bool, library: bool, kind: str
) -> None:
    """Whatever the compiler printed: a MissingToolError that names the package exactly when the
    log says mpi.h or libmpi is missing."""
    text = "\n".join([log] + [HEADER] * header + [LIBRARY] * library)
    cls = OpenMpi if kind == "openmpi" else Mpich
    mpi = cls(mpicxx="/x/mpicxx", mpiexec="/x/mpiexec", version="some MPI")
    e = probe_error(mpi, text)
    assert isinstance(e, MissingToolError)
    package = "libopenmpi-dev" if kind == "openmpi" else "libmpich-dev"
    if header or library:
        assert package in str(e), str(e)
    elif package not in log:
        assert "cannot build a minimal MPI program" in str(e), str(e)
