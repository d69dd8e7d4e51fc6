"""scripts/test.sh's installation of the system packages the tests need (its "system packages"
section: Debian's Open MPI and LAMMPS), run alone with fake apt-get, id and compiler wrapper on a
PATH of their own: it waits for apt's lock, checks that Open MPI can build a program (not only that
mpicxx.openmpi exists), and says loudly what is missing, failing on CI. Nothing is installed."""

from __future__ import annotations

import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

import collkit.mpi.find as find
from collkit.errors import UnsupportedError

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test.sh"
MELT = "/usr/share/lammps/examples/melt/in.melt"
# Real tools the section uses beside the fakes.
TOOLS = ("cat", "grep", "mktemp", "rm", "sed", "tail", "touch")


def section() -> str:
    text = SCRIPT.read_text()
    start, end = text.index("# >>> system packages"), text.index("# <<< system packages")
    return text[start:end]


# What scripts/test.sh looks for to call Slurm usable (slurm_usable).
SLURM = ("munged", "slurmctld", "slurmd", "srun", "salloc", "sbatch")


def fake(bindir: Path, name: str, body: str) -> None:
    p = bindir / name
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(p.stat().st_mode | stat.S_IXUSR)


class Machine:
    """A PATH with fake tools and a state folder: `dev` present means libopenmpi-dev is installed,
    `lammps` LAMMPS, `slurm` Slurm and munge (their tools appear on PATH); apt-get logs its
    arguments and fails `locked` times with apt's lock error."""

    def __init__(self, tmp: Path, *, uid: int = 0, locked: int = 0, apt_works: bool = True):
        self.bin, self.state = tmp / "bin", tmp / "state"
        self.bin.mkdir()
        self.state.mkdir()
        self.melt = self.state / "in.melt"
        for t in TOOLS:
            found = shutil.which(t)
            assert found, t
            (self.bin / t).symlink_to(found)
        s = self.state
        fake(self.bin, "id", f"echo {uid}")
        fake(self.bin, "sleep", "exit 0")  # the lock's wait, without waiting
        (s / "locked").write_text(str(locked))
        install = (
            f'case "$*" in *libopenmpi-dev*) touch {s}/dev;; esac\n'
            f'case "$*" in *lammps-examples*) touch {s}/lammps {self.melt};; esac\n'
            f'case "$*" in *slurm-wlm*) touch {s}/slurm; for t in {" ".join(SLURM)}; do '
            f"printf '#!/bin/sh\\nexit 0\\n' > {self.bin}/$t; chmod +x {self.bin}/$t; done;; esac\n"
        )
        fake(
            self.bin,
            "apt-get",
            f'echo "$*" >> {s}/apt.log\n'
            f"n=$(cat {s}/locked)\n"
            f'if [ "$n" -gt 0 ]; then echo $((n - 1)) > {s}/locked\n'
            f"  echo 'E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1' >&2\n"
            "  exit 100; fi\n"
            + (
                install + "exit 0"
                if apt_works
                else "echo 'E: Unable to locate package libopenmpi-dev' >&2; exit 100"
            ),
        )
        # Open MPI's runtime is there; its wrapper builds only with the development files.
        fake(self.bin, "mpirun.openmpi", "exit 0")
        fake(
            self.bin,
            "mpicxx.openmpi",
            f"[ -f {s}/dev ] && exit 0\n"
            "echo 'probe.cpp:1:10: fatal error: mpi.h: No such file or directory' >&2; exit 1",
        )
        fake(self.bin, "lmp", f"[ -f {s}/lammps ]")

    def have_slurm(self) -> None:
        (self.state / "slurm").touch()
        for t in SLURM:
            fake(self.bin, t, "exit 0")

    def run(self, ci: bool) -> subprocess.CompletedProcess[str]:
        body = section().replace(MELT, str(self.melt))
        env = {"PATH": str(self.bin), "HOME": str(self.state), **({"CI": "true"} if ci else {})}
        return subprocess.run(
            ["/bin/bash", "-c", "set -euo pipefail\n" + body + "\necho SECTION-DONE\n"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=self.state,
        )

    def apt_calls(self) -> list[str]:
        log = self.state / "apt.log"
        return log.read_text().splitlines() if log.exists() else []


def test_runtime_without_headers_is_completed_after_waiting_for_the_lock(tmp_path: Path) -> None:
    m = Machine(tmp_path, locked=2)
    r = m.run(ci=True)
    assert r.returncode == 0 and "SECTION-DONE" in r.stdout, r.stderr
    calls = m.apt_calls()
    # Two refusals of the lock, then update and the installs, every call waiting for dpkg's lock.
    assert ["update" in c.split() for c in calls[:4]] == [True] * 3 + [False], calls
    assert any("libopenmpi-dev" in c for c in calls) and any("lammps" in c for c in calls), calls
    assert any("slurm-wlm" in c and "munge" in c for c in calls), calls
    assert all("DPkg::Lock::Timeout=" in c for c in calls), calls
    assert "waiting" in r.stderr and "SKIPPED" not in r.stderr, r.stderr


@pytest.mark.parametrize("ci", [True, False])
def test_failed_install_is_loud_and_fails_on_ci(tmp_path: Path, ci: bool) -> None:
    m = Machine(tmp_path, apt_works=False)
    r = m.run(ci=ci)
    assert "Open MPI" in r.stderr and "LAMMPS" in r.stderr and "SKIPPED" in r.stderr, r.stderr
    assert "Unable to locate package" in r.stderr, r.stderr  # apt's own words are shown
    if ci:
        assert r.returncode != 0 and "SECTION-DONE" not in r.stdout, r.stdout
    else:
        assert r.returncode == 0 and "SECTION-DONE" in r.stdout, r.stderr


def test_without_root_on_ci_a_missing_open_mpi_fails(tmp_path: Path) -> None:
    m = Machine(tmp_path, uid=1000)
    r = m.run(ci=True)
    assert r.returncode != 0 and not m.apt_calls(), (r.stdout, r.stderr)
    assert "needs root" in r.stderr and "Open MPI" in r.stderr, r.stderr


def test_nothing_is_installed_when_everything_is_there(tmp_path: Path) -> None:
    m = Machine(tmp_path)
    (m.state / "dev").touch()
    (m.state / "lammps").touch()
    m.melt.touch()
    m.have_slurm()
    r = m.run(ci=True)
    assert r.returncode == 0 and not m.apt_calls(), r.stderr


def test_intel_mpi_pin_is_the_one_collkit_suggests(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Intel MPI that scripts/test.sh installs (and so tests) is the one collkit's message
    tells a user to install."""
    pins = set(re.findall(r'"(impi-(?:rt|devel)<[0-9.]+)"', SCRIPT.read_text()))
    assert {p.split("<")[0] for p in pins} == {"impi-rt", "impi-devel"}, pins
    monkeypatch.setattr(find, "intel_mpiexec", lambda: None)
    with pytest.raises(UnsupportedError) as e:
        find.find_mpi_of_kind("intel")
    assert all(f"'{p}'" in str(e.value) for p in pins), (pins, str(e.value))
