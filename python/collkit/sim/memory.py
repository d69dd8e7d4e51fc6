"""The peak resident memory a simulation will take, estimated before it runs."""

from __future__ import annotations

import os
import resource
from pathlib import Path

from collkit.algorithms import Algorithm
from collkit.placement import Placement
from collkit.sim.options import MODEL_RULES, Model, check_flag, check_placement

# The peak resident memory of a simulation, from its parts as measured (bench_simulate.py --suite
# memory, benchmarks/results/bench_simulate.md): the process with Python, numpy and collkit
# loaded; per rank its 48-byte state, its program's id, a slot in the free lists and its events
# in flight (LogGOPS: about three 24-byte events with the queue's slack, every op being one more
# queue entry; the postal models about two); per op a 16-bit counter while its rank runs (every
# rank at once, at worst). A rank holds no more events than it has ops: where ranks average
# fewer than three ops (a tree: bcast:binomial has two), the events' share shrinks with them
# (bcast:binomial at 2^26 measured 107 B a rank, not 140: estimate 1.30x of peak RSS before).
_PROCESS_BYTES = 35 << 20
_STATE_BYTES = 48 + 4 + 8
_RANK_BYTES = _STATE_BYTES + 80
_RANK_BYTES_POSTAL = _STATE_BYTES + 52
_EVENTS_PER_RANK = 3
_OP_BYTES = 2
# With a timeline: the whole schedule (~42 B per op) and ~80 B per op of records.
_TIMELINE_OP_BYTES = 42 + 80
# Ranks whose programs are generated to count the ops (and at most this many of their ops).
_SAMPLE_RANKS = 256
_SAMPLE_OPS = 1 << 22


def _sample_ranks(P: int, root: int) -> list[int]:
    """Ranks spread over 0..P-1 by the golden ratio (a low-discrepancy sequence: every residue
    class of a power of two is visited in proportion, as a tree's ranks are), the root apart."""
    golden = (5**0.5 - 1) / 2
    seen = {root}
    out: list[int] = []
    for k in range(1, 4 * _SAMPLE_RANKS):
        r = int((k * golden) % 1.0 * P)
        if r not in seen:
            seen.add(r)
            out.append(r)
            if len(out) == _SAMPLE_RANKS:
                break
    return out


def rank_memory_bytes(model: str | None = None) -> int:
    """Bytes of simulator state per rank under `model` (None: LogGOPS, the larger), whatever the
    algorithm: memory_estimate's per-rank term, the floor of simulating P ranks."""
    port = model is not None and MODEL_RULES.get(model.replace("_", "-").lower()) == "port"
    return _RANK_BYTES_POSTAL if port else _RANK_BYTES


def memory_estimate(
    algorithm: str | Algorithm,
    P: int,
    count: int,
    elem_size: int = 8,
    root: int = 0,
    timeline: bool = False,
    placement: Placement | None = None,
    model: str | None = None,
    counts: list[int] | None = None,
) -> tuple[int, int]:
    """(bytes, ops): the peak resident memory a simulation of `algorithm` under `model` (None:
    the larger, LogGOPS) will take (the process's, measured within 25 % for allreduce:rd,
    allreduce:rabenseifner and bcast:binomial from P = 2^16 to 2^20) and the ops of its
    schedule. The ops are counted exactly up to
    P = 512, else from the root and up to 256 ranks spread over 0..P-1 (most ranks of a tree or
    of Rabenseifner at small counts hold far fewer ops than the root or rank P/2)."""
    algo = algorithm if isinstance(algorithm, Algorithm) else Algorithm(algorithm)
    P, count, elem_size, root = algo._args(P, count, elem_size, root)  # types and ranges
    check_flag(timeline, "timeline")
    check_placement(placement)
    if model is not None:
        Model.make(model)  # a known model name

    def ops_of(r: int) -> int:
        return len(
            algo.generate_rank(P, r, count, elem_size, root, placement=placement, counts=counts)
        )

    if P <= 2 * _SAMPLE_RANKS:
        total_ops = sum(ops_of(r) for r in range(P))
    else:
        total_ops, n, sampled = ops_of(root), 0, 0
        for r in _sample_ranks(P, root):
            k = ops_of(r)
            n, sampled = n + 1, sampled + k
            if sampled > _SAMPLE_OPS:
                break
        total_ops += round(sampled / n * (P - 1))
    per_op = _OP_BYTES + (_TIMELINE_OP_BYTES if timeline else 0)
    events = (rank_memory_bytes(model) - _STATE_BYTES) * min(1.0, total_ops / P / _EVENTS_PER_RANK)
    rank_bytes = _STATE_BYTES + round(events)
    return _PROCESS_BYTES + P * rank_bytes + total_ops * per_op, total_ops


# A cgroup v1 "no limit" is a page-rounded INT64_MAX; anything this large is no limit.
_NO_LIMIT = 1 << 62


def _read_int(path: Path) -> int | None:
    """The integer a one-value file holds (None: absent, unreadable, 'max' or no limit)."""
    try:
        text = path.read_text().strip()
        v = int(text)
    except (OSError, ValueError):
        return None
    return v if 0 <= v < _NO_LIMIT else None


def _stat_field(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            k, _, v = line.partition(" ")
            if k == key:
                return int(v)
    except (OSError, ValueError):
        pass
    return 0


def _proc_kib(status: Path, key: str) -> int:
    """A `key:  N kB` field of /proc/self/status in bytes (0 if absent)."""
    try:
        for line in status.read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _cgroup_dirs(proc_cgroup: Path, root: Path) -> list[tuple[Path, bool]]:
    """The memory cgroup of this process and its ancestors, nearest first, as (folder, is v2).
    A path that /proc names but this mount namespace does not show (a container sees its own
    cgroup as the root) falls back to the mount's root."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return []
    out: list[tuple[Path, bool]] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, rel = parts
        if controllers == "" and parts[0] == "0":
            base, v2 = root, True  # the unified hierarchy
            if not (base / "cgroup.controllers").exists():
                base = root / "unified"
        elif "memory" in controllers.split(","):
            base, v2 = root / "memory", False
        else:
            continue
        d = base / rel.lstrip("/")
        if not d.is_dir():
            d = base
        while True:
            out.append((d, v2))
            if d == base or base not in d.parents:
                break
            d = d.parent
    return out


def available_memory(
    *,
    meminfo: str | os.PathLike[str] = "/proc/meminfo",
    cgroup_root: str | os.PathLike[str] = "/sys/fs/cgroup",
    proc_self: str | os.PathLike[str] = "/proc/self",
) -> int | None:
    """Bytes this process may still allocate: the least of the machine's MemAvailable, its
    RLIMIT_AS and RLIMIT_DATA less what it already maps, and each memory cgroup's limit (v2
    memory.max, v1 memory.limit_in_bytes, of its own cgroup and every ancestor) less the
    cgroup's usage (its inactive file cache left out: the kernel reclaims that first). None
    when nothing says (not Linux). The paths are parameters for tests."""
    limits: list[int] = []
    try:
        for line in Path(meminfo).read_text().splitlines():
            if line.startswith("MemAvailable:"):
                limits.append(int(line.split()[1]) * 1024)
                break
    except (OSError, ValueError, IndexError):
        pass
    status = Path(proc_self) / "status"
    for rlimit, field in ((resource.RLIMIT_AS, "VmSize"), (resource.RLIMIT_DATA, "VmData")):
        soft, _ = resource.getrlimit(rlimit)
        if soft != resource.RLIM_INFINITY and 0 <= soft < _NO_LIMIT:
            limits.append(max(0, soft - _proc_kib(status, field)))
    for d, v2 in _cgroup_dirs(Path(proc_self) / "cgroup", Path(cgroup_root)):
        limit = _read_int(d / ("memory.max" if v2 else "memory.limit_in_bytes"))
        if limit is None:
            continue
        used = _read_int(d / ("memory.current" if v2 else "memory.usage_in_bytes")) or 0
        cache = _stat_field(d / "memory.stat", "inactive_file" if v2 else "total_inactive_file")
        limits.append(max(0, limit - max(0, used - cache)))
    return min(limits) if limits else None
