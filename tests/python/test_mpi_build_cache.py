"""How collkit's MPI programs are built (python/collkit/mpi/programs.py): the build folder is keyed
by the MPI and the sources' contents, not by where collkit is installed, and the core comes from
the archive the Python package installed (collkit/_lib/libcollkit_core.a) where that archive was
built from the same core sources by the compiler the MPI's wrapper runs; otherwise the core is
compiled from its sources, as before. No MPI is run here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import collkit._core
from collkit.mpi import Mpich
from collkit.mpi import programs as pr

INSTALLED = Path(collkit._core.__file__).resolve().parent
GCC = "g++ (Debian 12.2.0-14+deb12u1) 12.2.0"


def _mpi() -> Mpich:
    return Mpich(mpicxx="/x/mpicxx", mpiexec="/x/mpiexec", version="MPICH Version: 5.0.2")


def _copy(root: Path, dest: Path) -> Path:
    for sub in (*pr.BUILD_SOURCES, "mpi/CMakeLists.txt"):
        (shutil.copytree if (root / sub).is_dir() else shutil.copy2)(root / sub, dest / sub)
    return dest


def _made_by() -> tuple[str, str]:
    made_by = INSTALLED / "_lib" / "core-compiler.txt"
    if not (INSTALLED / "_lib" / "libcollkit_core.a").is_file() or not made_by.is_file():
        pytest.skip("this install has no core archive (built without the Python module?)")
    kind, _, version = made_by.read_text().strip().partition(" ")
    return kind, version


def test_the_key_is_the_sources_contents_not_their_place(tmp_path: Path) -> None:
    root = pr.source_dir()
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "deeper").mkdir(parents=True)
    a = _copy(root, tmp_path / "a")
    b = _copy(root, tmp_path / "b" / "deeper")
    assert pr._sources_hash(a, _mpi()) == pr._sources_hash(b, _mpi())
    # ... and a change to any source, or another MPI, is another build.
    f = b / "mpi" / "src" / "env.cpp"
    f.write_text(f.read_text() + "\n// changed\n")
    assert pr._sources_hash(a, _mpi()) != pr._sources_hash(b, _mpi())
    other = Mpich(mpicxx="/y/mpicxx", mpiexec="/y/mpiexec", version="MPICH Version: 5.0.2")
    assert pr._sources_hash(a, _mpi()) != pr._sources_hash(a, other)


def test_the_installed_archive_is_taken_only_for_its_own_sources_and_compiler(
    tmp_path: Path,
) -> None:
    kind, version = _made_by()
    said = f"{'clang' if kind == 'Clang' else 'g++'} (some distribution) {version}"
    installed = INSTALLED / "_src"
    assert pr.core_archive(installed, said) == INSTALLED / "_lib" / "libcollkit_core.a"
    # The same sources elsewhere (a checkout of the installed version): taken.
    (tmp_path / "same").mkdir()
    same = _copy(installed, tmp_path / "same")
    assert pr.core_archive(same, said) is not None
    # A core source changed since the install (an editable tree after a core edit): compiled.
    f = same / "core" / "src" / "name.cpp"
    f.write_text(f.read_text() + "\n// changed\n")
    assert pr.core_archive(same, said) is None
    # A change to mpi/ alone keeps the archive.
    (tmp_path / "mpi-only").mkdir()
    mpi_only = _copy(installed, tmp_path / "mpi-only")
    g = mpi_only / "mpi" / "src" / "env.cpp"
    g.write_text(g.read_text() + "\n// changed\n")
    assert pr.core_archive(mpi_only, said) is not None
    # GCC as Debian's `c++` (the pip MPICH's wrapper runs it): its copyright line says GCC.
    if kind == "GNU":
        debian = f"c++ (Debian 12.2.0-14+deb12u1) {version}\nCopyright (C) 2022 Free Software "
        assert pr.core_archive(installed, debian + "Foundation, Inc.\n") is not None
    # Another compiler, or another version of it, behind the wrapper: compiled.
    assert pr.core_archive(installed, "icpx (Intel oneAPI) 2024.1.0") is None
    assert pr.core_archive(installed, said.replace(version, "0.0.1")) is None


def test_the_sources_are_copied_whole_once(tmp_path: Path) -> None:
    dest = tmp_path / "src"
    pr._copy_sources(pr.source_dir(), dest)
    assert (dest / "mpi" / "CMakeLists.txt").is_file()
    assert pr._tree_hash(dest, pr.BUILD_SOURCES) == pr._tree_hash(pr.source_dir(), pr.BUILD_SOURCES)
    marker = dest / "mpi" / "src" / "env.cpp"
    marker.write_text("kept")
    pr._copy_sources(pr.source_dir(), dest)  # already there: left as it is
    assert marker.read_text() == "kept"
