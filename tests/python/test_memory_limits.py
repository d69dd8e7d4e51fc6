"""The memory a simulation may take: MemAvailable, the process's rlimits and its cgroup's limit
(v1 and v2, with their ancestors), the least of them; and the CLI refusing a run above it."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from collkit.sim.memory import available_memory

GIB = 1 << 30
V1_NO_LIMIT = "9223372036854771712"  # what cgroup v1 shows for no limit


def _machine(tmp_path: Path, cgroup: str, avail_kib: int = 64 << 20) -> tuple[Path, Path, Path]:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal: {2 * avail_kib} kB\nMemAvailable: {avail_kib} kB\n")
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text(cgroup)
    (proc / "status").write_text("VmSize:\t1000 kB\nVmData:\t500 kB\n")
    root = tmp_path / "cg"
    root.mkdir()
    return meminfo, root, proc


def _files(d: Path, **content: str) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for name, text in content.items():
        (d / name.replace("_", ".", 1)).write_text(text + "\n")


def _skip_under_rlimits() -> None:
    for r in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
        if resource.getrlimit(r)[0] != resource.RLIM_INFINITY:
            pytest.skip("this process runs under an RLIMIT_AS or RLIMIT_DATA")


def _avail(paths: tuple[Path, Path, Path]) -> int | None:
    meminfo, root, proc = paths
    return available_memory(meminfo=meminfo, cgroup_root=root, proc_self=proc)


def test_without_limits_it_is_memavailable(tmp_path: Path) -> None:
    paths = _machine(tmp_path, "0::/\n", avail_kib=3 << 20)
    (paths[1] / "cgroup.controllers").write_text("memory\n")
    _skip_under_rlimits()
    assert _avail(paths) == 3 * GIB


def test_cgroup_v2_memory_max_less_its_usage(tmp_path: Path) -> None:
    paths = _machine(tmp_path, "0::/a/b\n")
    root = paths[1]
    (root / "cgroup.controllers").write_text("memory\n")
    _files(root / "a", memory_max="max", memory_current="0")
    _files(
        root / "a" / "b",
        memory_max=str(4 * GIB),
        memory_current=str(GIB),
        memory_stat=f"anon 1\ninactive_file {GIB // 4}\n",
    )
    # 4 GiB less 1 GiB used, of which a quarter is cache the kernel reclaims first
    assert _avail(paths) == 4 * GIB - (GIB - GIB // 4)


def test_a_tighter_ancestor_cgroup_wins(tmp_path: Path) -> None:
    paths = _machine(tmp_path, "0::/a/b\n")
    root = paths[1]
    (root / "cgroup.controllers").write_text("memory\n")
    _files(root / "a", memory_max=str(2 * GIB), memory_current=str(GIB // 2))
    _files(root / "a" / "b", memory_max=str(8 * GIB), memory_current=str(GIB // 2))
    assert _avail(paths) == 2 * GIB - GIB // 2


def test_cgroup_v1_limit_in_bytes(tmp_path: Path) -> None:
    paths = _machine(tmp_path, "5:devices:/x\n4:memory:/job/1\n0::/\n")
    root = paths[1]
    _files(root / "memory", memory_limit_in_bytes=V1_NO_LIMIT, memory_usage_in_bytes="5")
    _files(
        root / "memory" / "job" / "1",
        memory_limit_in_bytes=str(3 * GIB),
        memory_usage_in_bytes=str(GIB),
        memory_stat=f"rss 1\ntotal_inactive_file {GIB // 2}\ninactive_file 7\n",
    )
    assert _avail(paths) == 3 * GIB - GIB // 2


def test_cgroup_v1_without_a_limit_leaves_memavailable(tmp_path: Path) -> None:
    paths = _machine(tmp_path, "4:memory:/job\n", avail_kib=5 << 20)
    _files(
        paths[1] / "memory" / "job",
        memory_limit_in_bytes=V1_NO_LIMIT,
        memory_usage_in_bytes=str(GIB),
    )
    _skip_under_rlimits()
    assert _avail(paths) == 5 * GIB


def test_a_cgroup_path_this_namespace_does_not_show_reads_the_mount_root(tmp_path: Path) -> None:
    # in a container /proc names the host's path; the container sees its cgroup as the root
    paths = _machine(tmp_path, "4:memory:/host/only/path\n")
    _files(paths[1] / "memory", memory_limit_in_bytes=str(GIB), memory_usage_in_bytes="0")
    assert _avail(paths) == GIB


def test_unreadable_files_are_no_limit_not_an_error(tmp_path: Path) -> None:
    paths = _machine(tmp_path, "garbage\n0::/a\n")
    _files(paths[1] / "unified" / "a", memory_max="not a number")
    assert _avail(paths) is not None  # MemAvailable still says


_CHILD = """
import resource, sys
from collkit.sim.memory import available_memory
def kib(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
mapped = kib("VmSize")
resource.setrlimit(resource.RLIMIT_AS, (mapped + (1 << 30), resource.RLIM_INFINITY))
print(available_memory())
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
def test_rlimit_as_less_what_the_process_maps() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=120, check=True
    )
    avail = int(out.stdout)
    assert 0 < avail <= GIB  # 1 GiB above what it mapped, less what it mapped since


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
def test_simulate_refuses_a_run_above_rlimit_as() -> None:
    limit = 6 * GIB

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))

    # rd at 2^26 ranks needs ~17 GiB: refused before it starts, with the limit's figure (not
    # MemAvailable's), instead of running until the address space runs out
    out = subprocess.run(
        [sys.executable, "-m", "collkit", "simulate", "allreduce:rd", "-P", "2^26"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=cap,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    assert out.returncode == 2, out.stderr
    m = re.search(r"more than the ([0-9.]+) GiB available", out.stderr)
    assert m, out.stderr
    assert float(m.group(1)) <= limit / GIB
