"""What a simulation returns (the core's SimResult, bound once, with what was simulated) and the
one builder of simulated result rows."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from collkit import _core
from collkit.errors import InvalidArgumentError
from collkit.results import Row
from collkit.sim.noise import Distribution
from collkit.sim.options import Model
from collkit.sim.topology import Topology, parse_topology, placed_topology

if TYPE_CHECKING:
    from collkit.placement import Placement
    from collkit.schedule import Schedule

FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.uint64]

# The machine a simulated row names: the simulator, not the host it ran on (`mpi` names the
# model and its parameters).
SIMULATOR_MACHINE = "collkit simulator"
# The core's per-op arrays, there only when the run recorded a timeline.
_RECORDED = (
    "rank_op_begin",
    "op_start",
    "op_end",
    "critical_path",
    "msg_send",
    "msg_recv",
    "msg_depart",
    "msg_arrive",
)


def format_ns(t: float) -> str:
    """A time in ns with a readable unit: 1500 -> '1.5 us'."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(t) >= scale:
            return f"{t / scale:.4g} {unit}"
    return f"{t:.4g} ns"


def datatype_name(elem_size: int) -> str:
    """The datatype a row names for an element size: double (8 B), char (1 B), else 'nB'."""
    return {8: "double", 1: "char"}.get(elem_size, f"{elem_size}B")


def run_settings(noise: Distribution, skew: Distribution, topology: Topology, seed: int = 0) -> str:
    """A simulated row's `settings`: noise, skew, topology and seed, as the specs that reproduce
    them ('' if none)."""
    parts = []
    if noise.kind != "none":
        parts.append(f"noise={noise.describe()}")
    if skew.kind != "none":
        parts.append(f"skew={skew.describe()}")
    if topology.describe() != "none":
        parts.append(f"topology={topology.describe()}")
    if parts:
        parts.append(f"seed={seed}")
    return " ".join(parts)


def run_allocation(topology: Topology) -> str:
    """A simulated row's `allocation`: how the ranks sat on nodes ('' for one per node), from the
    topology placed on them (collkit.sim.topology.placed_topology)."""
    if topology.ranks_per_node <= 1:
        return ""
    return f"{topology.ranks_per_node} ranks per node" + (
        "" if topology.order == "contiguous" else f", {topology.order}"
    )


def row_labels(placement: Placement | None, topology: str | Topology | None) -> tuple[str, str]:
    """(allocation, settings) of a row simulated on `placement` and `topology` without noise or
    skew, as SimResult.to_row says them: the key a campaign looks a row up by before simulating."""
    topo = placed_topology(parse_topology(topology), placement)
    return run_allocation(topo), run_settings(Distribution(), Distribution(), topo)


def simulated_row(
    *,
    collective: str,
    algorithm: str,
    P: int,
    count: int,
    elem_size: int,
    model: Model,
    makespans: Sequence[float] | npt.NDArray[np.float64] | None = None,
    allocation: str = "",
    settings: str = "",
    date: str = "",
    error: str = "",
) -> Row:
    """A row of THE results schema (collkit.results) for a simulated run: source 'simulated', the
    model and its parameters in `mpi`, the simulator in `machine`, statistics over the trials'
    makespans (ns) in microseconds. Without makespans the statistics are NaN (a row's key, to
    look up before simulating)."""
    row = Row(
        collective=collective,
        algorithm=algorithm,
        P=P,
        bytes=count * elem_size,
        datatype=datatype_name(elem_size),
        count=count,
        source="simulated",
        mpi=model.describe(),
        machine=SIMULATOR_MACHINE,
        allocation=allocation,
        settings=settings,
        date=date,
        error=error,
    )
    return row if makespans is None else set_makespans(row, makespans)


def set_makespans(row: Row, makespans: Sequence[float] | npt.NDArray[np.float64]) -> Row:
    """`row` with the statistics of the trials' makespans (ns) in microseconds (in place)."""
    if len(makespans) == 0:
        return row
    us = np.asarray(makespans, dtype=np.float64) * 1e-3
    q1, med, q3, p99 = np.percentile(us, [25, 50, 75, 99])
    row.min_us, row.max_us, row.mean_us = float(us.min()), float(us.max()), float(us.mean())
    row.q1_us, row.median_us, row.q3_us, row.p99_us = float(q1), float(med), float(q3), float(p99)
    row.iterations = len(us)
    row.samples = [float(t) for t in us] if len(us) > 1 else []
    return row


class SimResult:
    """What a simulation returns. Times in ns; arrays are numpy.

    The measures are the core's own result (``core``, collkit._core.SimResult: ``finish``,
    ``makespans``, ``messages``, ``bytes_sent``, ``ops``, ``events``, ``load_seconds``,
    ``run_seconds``, ``load_cpu_seconds``, ``run_cpu_seconds``, ``memory_bytes``, ``programs``,
    ``programs_read``, read through); the rest says what was simulated. ``finish`` (per rank)
    and the per-op arrays are of the first trial; ``makespans`` has one entry per trial. Per-op
    arrays (``op_start``, ``op_end``, ``critical_path``, messages) are only there when the run
    was asked to record (``timeline=True``, else None); ops are numbered globally, rank by rank
    (``rank_op_begin``), in each rank's op order.
    """

    # The core's measures, read through to `core` (see __getattr__).
    finish: FloatArray
    makespans: FloatArray
    messages: int
    bytes_sent: int
    ops: int
    events: int
    load_seconds: float  # wall clock: generating and reading the programs
    run_seconds: float  # wall clock: the event loop, all trials
    load_cpu_seconds: float  # CPU time of the same (what it cost on a shared machine)
    run_cpu_seconds: float
    memory_bytes: int
    programs: int  # distinct programs among the ranks (up to relabelling of peers)
    programs_read: int  # ranks generated or read; the rest shared their generator's program class
    rank_op_begin: IndexArray | None
    op_start: FloatArray | None
    op_end: FloatArray | None
    critical_path: IndexArray | None
    msg_send: IndexArray | None
    msg_recv: IndexArray | None
    msg_depart: FloatArray | None
    msg_arrive: FloatArray | None

    def __init__(
        self,
        core: _core.SimResult,
        *,
        algorithm: str,
        count: int,
        elem_size: int,
        model: Model,
        schedule: Schedule | None = None,
        noise: Distribution | None = None,
        skew: Distribution | None = None,
        topology: Topology | None = None,
        seed: int = 0,
        collective: str = "",
    ) -> None:
        self.core = core
        self.algorithm = algorithm
        self.P = int(core.P)
        self.count = count
        self.elem_size = elem_size
        self.bytes_per_rank = count * elem_size
        self.model = model
        self.schedule = schedule
        self.noise = noise or Distribution()
        self.skew = skew or Distribution()
        self.topology = topology or Topology()
        self.seed = seed
        self._collective = collective

    def __getattr__(self, name: str) -> Any:
        if name == "core":  # not set yet (unpickling, copying): no recursion
            raise AttributeError(name)
        if name in _RECORDED and not self.core.recorded:
            return None
        return getattr(self.core, name)

    def __repr__(self) -> str:
        return f"<SimResult {self.algorithm} P={self.P} makespan={format_ns(self.makespan)}>"

    @property
    def makespan(self) -> float:
        """The first trial's makespan: when the last rank finished (ns)."""
        return float(self.makespans[0])

    def stats(self) -> dict[str, float]:
        """min / q1 / median / q3 / max / mean of the makespans over all trials (ns)."""
        m = self.makespans
        q1, med, q3 = np.percentile(m, [25, 50, 75])
        return {
            "min": float(m.min()),
            "q1": float(q1),
            "median": float(med),
            "q3": float(q3),
            "max": float(m.max()),
            "mean": float(m.mean()),
            "trials": float(len(m)),
        }

    def op_rank(self) -> npt.NDArray[np.int64]:
        """The rank of every recorded op."""
        if self.rank_op_begin is None:
            raise InvalidArgumentError("per-op data was not recorded: simulate with timeline=True")
        counts = np.diff(self.rank_op_begin).astype(np.int64)
        return np.repeat(np.arange(self.P, dtype=np.int64), counts)

    def settings(self) -> str:
        """Noise, skew, topology and seed, as the specs that reproduce them ('' if none)."""
        return run_settings(self.noise, self.skew, self.topology, self.seed)

    def collective(self) -> str:
        """The collective simulated: the schedule's, else the algorithm name's."""
        if self._collective:
            return self._collective
        if self.schedule is not None:
            return self.schedule.collective
        return self.algorithm.split(":", 1)[0] if ":" in self.algorithm else ""

    def allocation(self) -> str:
        """How the ranks sat on nodes, as a row's `allocation` says it ('' for one per node)."""
        return run_allocation(self.topology)

    def to_row(self, date: str = "") -> Row:
        """The result as a row of THE results schema (collkit.results): see simulated_row."""
        return simulated_row(
            collective=self.collective(),
            algorithm=self.algorithm,
            P=self.P,
            count=self.count,
            elem_size=self.elem_size,
            model=self.model,
            makespans=self.makespans,
            allocation=self.allocation(),
            settings=self.settings(),
            date=date,
        )

    def events_per_second(self) -> float:
        return self.events / self.run_seconds if self.run_seconds > 0 else math.inf

    def summary(self) -> str:
        from collkit.collectives import count_unit

        lines = [
            f"{self.algorithm}  P={self.P}  "
            f"{self.bytes_per_rank} B {count_unit(self.collective())}  "
            f"{self.model.describe()}" + (f"  {self.settings()}" if self.settings() else ""),
            f"makespan {format_ns(self.makespan)}   messages {self.messages}   "
            f"bytes sent {self.bytes_sent}   ops {self.ops}",
        ]
        if len(self.makespans) > 1:
            s = self.stats()
            lines.append(
                f"{len(self.makespans)} trials: min {format_ns(s['min'])}  q1 {format_ns(s['q1'])}"
                f"  median {format_ns(s['median'])}  q3 {format_ns(s['q3'])}"
                f"  max {format_ns(s['max'])}"
            )
        lines.append(
            f"simulated {self.events} events in {self.run_seconds:.3f} s "
            f"({self.events_per_second() / 1e6:.1f} M events/s), programs loaded in "
            f"{self.load_seconds:.3f} s, engine memory {self.memory_bytes / 2**20:.1f} MiB"
        )
        return "\n".join(lines)
