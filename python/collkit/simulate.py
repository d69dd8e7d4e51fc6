"""Simulate a collective: discrete-event engine over the per-rank DAGs of a Schedule.

Every time is in **nanoseconds** (floats), every size in bytes. Parameters accept numbers (ns) or
strings with units: ``"1.34us"``, ``"500ns"``, ``"2ms"``; per-byte costs accept ``"0.4ns"``,
``"0.4ns/B"`` or a bandwidth such as ``"2.5GB/s"``.

>>> import collkit
>>> r = collkit.simulate("allreduce:rd", P=8, bytes=8, model="postal", alpha="500ns")
>>> r.makespan
1500.0

Models (see docs/simulator.md for the exact semantics):

- ``postal``: ``alpha + n*beta`` per message, one message in flight per rank ([Ruefenacht 2017] Eq.
1).
- ``pipelined-postal``: ``alpha_p + b*(alpha_r + n*beta)`` for b sends issued together (Eq. 3).
- ``logp``, ``loggp``, ``loggops``: ``L, o, g, G, O, S`` with the semantics of LogGOPSim.

Local costs in every model: ``gamma`` (ns per byte reduced), ``reduce_base`` (ns per reduce op),
``copy_beta`` (ns per byte copied); compute and sleep ops last their own duration.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from collkit import _core, units
from collkit.algorithms import Algorithm
from collkit.collectives import count_unit
from collkit.errors import InvalidArgumentError, ScheduleFormatError
from collkit.placement import Placement, core_args
from collkit.results import Row
from collkit.schedule import Schedule, printable

__all__ = [
    "MODELS",
    "Distribution",
    "Model",
    "SimResult",
    "Topology",
    "memory_estimate",
    "parse_distribution",
    "parse_per_byte",
    "parse_time",
    "parse_topology",
    "rank_memory_bytes",
    "simulate",
    "simulate_file",
]

Time = float | int | str

# The model parameters come from the one table in the C++ core (sim/model.hpp): name, unit
# ("ns", "ns/B" or "B"), meaning, default, and the models that use each.
_PARAMS: list[dict[str, Any]] = list(_core.model_params())
# The models, as the core registers them (one file each under core/src/sim/models/).
_ALL_MODELS = tuple(str(m["name"]) for m in _core.models())
LOCAL_PARAMS: dict[str, float] = {
    p["name"]: float(p["default"]) for p in _PARAMS if len(p["models"]) == len(_ALL_MODELS)
}
MODELS: dict[str, dict[str, float]] = {
    m.replace("_", "-"): {
        p["name"]: float(p["default"])
        for p in _PARAMS
        if m in p["models"] and p["name"] not in LOCAL_PARAMS
    }
    for m in _ALL_MODELS
}
PER_BYTE = {p["name"] for p in _PARAMS if p["unit"] == "ns/B"}
PARAM_DOCS: dict[str, str] = {p["name"]: str(p["doc"]) for p in _PARAMS}
PARAM_UNITS: dict[str, str] = {p["name"]: str(p["unit"]) for p in _PARAMS}

# A bare number: how a LogGOPSim noise trace writes its columns.
_BARE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")


def _bad(msg: str) -> InvalidArgumentError:
    return InvalidArgumentError(msg)


def parse_time(value: Time, what: str = "time") -> float:
    """Nanoseconds from a number (ns) or a string with a unit: '1.34us', '500ns', '2ms', '0'."""
    return units.parse_time(value, what)


def parse_per_byte(value: Time, what: str = "per-byte cost") -> float:
    """Nanoseconds per byte from '0.4ns', '0.4ns/B', a number, or a bandwidth '2.5GB/s'."""
    return units.parse_per_byte(value, what)


def _parse_bytes_or_inf(value: Time, what: str) -> float:
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity", "none"):
        return math.inf
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0 or math.isnan(value):
            raise _bad(f"{what}: must be a size >= 0")
        return float(value)
    if isinstance(value, str):
        return float(units.parse_size(value, what))
    raise _bad(f"{what}: expected a size, got {value!r}")


@dataclass(frozen=True)
class Model:
    """A cost model and its parameters (ns; ns per byte; S in bytes)."""

    name: str
    params: Mapping[str, float]

    @staticmethod
    def make(name: str, **params: Time | None) -> Model:
        """Model `name` with defaults overridden by `params` (numbers in ns or unit strings)."""
        key = name.replace("_", "-").lower()
        if key not in MODELS:
            known = ", ".join(MODELS)
            raise _bad(f"unknown model '{name}' (known: {known})")
        allowed = {**MODELS[key], **LOCAL_PARAMS}
        values = dict(allowed)
        for k, v in params.items():
            if v is None:
                continue
            if k not in allowed:
                raise _bad(
                    f"model {key} has no parameter '{k}' (its parameters: {', '.join(allowed)})"
                )
            if k == "S":
                values[k] = _parse_bytes_or_inf(v, "S")
            elif k in PER_BYTE:
                values[k] = parse_per_byte(v, k)
            else:
                values[k] = parse_time(v, k)
        return Model(key, values)

    def describe(self) -> str:
        parts = []
        for k, v in self.params.items():
            parts.append(f"{k}={v:g}{PARAM_UNITS[k]}")
        return f"{self.name}(" + ", ".join(parts) + ")"


@dataclass(frozen=True)
class Distribution:
    """A seeded distribution of non-negative delays (ns)."""

    # none, constant, uniform, exponential, lognormal, samples, trace (LogGOPSim's noise trace:
    # samples = start, duration, start, duration, ...; b = 1: one offset for all ranks)
    kind: str = "none"
    a: float = 0.0
    b: float = 0.0
    samples: tuple[float, ...] = ()

    def mean(self) -> float:
        """The distribution's mean (ns), for checks and reports."""
        if self.kind == "none":
            return 0.0
        if self.kind == "constant":
            return self.a
        if self.kind == "uniform":
            return (self.a + self.b) / 2
        if self.kind == "exponential":
            return self.a
        if self.kind == "lognormal":
            return self.a * math.exp(self.b**2 / 2)
        if self.kind == "trace":  # detour time per ns of the trace's period, times 1 ns
            return float(np.sum(self.samples[1::2]) / self.samples[-2])
        return float(np.mean(self.samples))


_DIST_RE = re.compile(r"^\s*([a-z]+)\s*(?:\((.*)\))?\s*$", re.S)


def parse_distribution(spec: str | Distribution | None, what: str = "noise") -> Distribution:
    """A distribution from its spec (all values are times, default unit ns):

    ``none``, ``constant(50ns)``, ``uniform(0,100ns)``, ``exponential(50ns)`` (mean),
    ``lognormal(100ns,0.5)`` (median, sigma), ``file(PATH)`` (one time per line or whitespace
    separated, default unit ns; each op draws one of them). A LogGOPSim noise trace in
    ``file(PATH)`` (``#`` comment lines, ``<start><TAB><duration>`` in ns per line) is replayed in
    time instead: each rank reads it from its own offset, drawn from the seed;
    ``file(PATH,cosched)`` gives all ranks one offset (LogGOPSim's ``--noise-cosched``).
    """
    if spec is None:
        return Distribution()
    if isinstance(spec, Distribution):
        return spec
    if not isinstance(spec, str):
        raise _bad(f"{what}: expected a distribution spec string, got {type(spec).__name__}")
    m = _DIST_RE.match(spec)
    if not m:
        raise _bad(
            f"{what}: cannot parse '{spec}' (examples: uniform(0,100ns), exponential(50ns), "
            "lognormal(100ns,0.5), file(detours.txt), none)"
        )
    kind, arg_text = m.group(1), m.group(2)
    args = [a.strip() for a in arg_text.split(",")] if arg_text is not None else []
    if kind == "exp":
        kind = "exponential"
    want = {"none": 0, "constant": 1, "uniform": 2, "exponential": 1, "lognormal": 2, "file": 1}
    if kind not in want:
        raise _bad(f"{what}: unknown distribution '{kind}' (known: {', '.join(want)})")
    if kind == "file" and len(args) == 2 and args[1] == "cosched":
        d = _read_file(args[0], what)
        if d.kind != "trace":
            raise _bad(f"{what}: 'cosched' is for a LogGOPSim noise trace; '{args[0]}' is not one")
        return Distribution("trace", 0.0, 1.0, d.samples)
    if len(args) != want[kind] or any(not a for a in args):
        raise _bad(f"{what}: {kind} takes {want[kind]} argument(s), got '{spec}'")
    if kind == "none":
        return Distribution()
    if kind == "file":
        return _read_file(args[0], what)
    if kind == "lognormal":
        median = parse_time(args[0], f"{what} median")
        try:
            sigma = float(args[1])
        except ValueError:
            raise _bad(f"{what}: lognormal sigma '{args[1]}' is not a number") from None
        if median <= 0 or not math.isfinite(sigma) or not 0 <= sigma <= 10:
            raise _bad(f"{what}: lognormal needs median > 0 and sigma in [0, 10]")
        return Distribution("lognormal", median, sigma)
    vals = [parse_time(a, what) for a in args]
    if kind == "uniform" and vals[1] < vals[0]:
        raise _bad(f"{what}: uniform(lo, hi) needs lo <= hi")
    return Distribution(kind, vals[0], vals[1] if len(vals) > 1 else 0.0)


def _read_file(path: str, what: str) -> Distribution:
    """Detour durations drawn per op, or a LogGOPSim noise trace to replay in time."""
    from collkit import files

    text = files.read_text(path, f"{what} file", limit=1 << 30)  # a regular file, <= 1 GiB
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]

    def pair(line: str) -> bool:  # "<start>\t<duration>", bare numbers
        cols = line.split()
        return len(cols) == 2 and all(_BARE.match(c) for c in cols)

    if any(ln.startswith("#") for ln in lines) or (len(lines) >= 2 and all(map(pair, lines))):
        # LogGOPSim's --noise-trace format: '#' comment lines and "<start>\t<duration>" in ns.
        return Distribution("trace", samples=tuple(_read_trace(path, lines, pair, what)))
    vals = [parse_time(tok, f"{what} sample in {path}") for tok in text.split()]
    if not vals:
        raise _bad(f"{what}: no samples in '{path}'")
    return Distribution("samples", samples=tuple(vals))


def _read_trace(path: str, lines: list[str], pair: Any, what: str) -> list[float]:
    out: list[float] = []
    for n, line in enumerate(lines, 1):
        if line.startswith("#"):
            continue
        if not pair(line):
            raise _bad(
                f"{what}: '{path}' reads as a LogGOPSim noise trace ('#' comment lines, then "
                f"'<start><TAB><duration>' in ns), but line {n} of its non-blank lines is "
                f"'{line[:60]}'"
            )
        start, duration = (float(c) for c in line.split())
        if not (math.isfinite(start) and math.isfinite(duration) and start >= 0 <= duration):
            raise _bad(f"{what}: '{path}' line {n}: times must be finite and >= 0")
        if out and start < out[-2]:
            raise _bad(f"{what}: '{path}' line {n}: the trace's starts must not decrease")
        out += [start, duration]
    if len(out) < 4 or out[-2] <= 0:
        raise _bad(
            f"{what}: the noise trace '{path}' needs at least two detours and a last start > 0 "
            "(the last start is the period it repeats with)"
        )
    return out


@dataclass(frozen=True)
class Topology:
    """An extra latency per pair of ranks (see docs/simulator.md)."""

    kind: str = "none"  # none, fattree, dragonfly, torus
    ranks_per_node: int = 0  # 0: the schedule's placement says (1 if it gives none)
    intra: float = 0.0
    hop: float = 0.0
    global_: float = 0.0
    k: int = 2
    p: int = 1
    a: int = 1
    dims: tuple[int, ...] = ()
    link: float = 0.0  # ns per byte on each link: messages share links (congestion); 0: never
    order: str = "contiguous"  # rank order on nodes: from the schedule's placement

    def describe(self) -> str:
        """The spec this topology reads back from, e.g. 'fattree(k=16,hop=100ns,rpn=4)'."""
        if self.kind == "none" and self.ranks_per_node == 0 and self.intra == 0 and not self.link:
            return "none"
        args: list[str] = []
        if self.kind == "fattree":
            args.append(f"k={self.k}")
        elif self.kind == "dragonfly":
            args += [f"p={self.p}", f"a={self.a}"]
        elif self.kind == "torus":
            args.append("dims=" + "x".join(str(d) for d in self.dims))
        if self.kind != "none":
            args.append(f"hop={self.hop:g}ns")
        if self.kind == "dragonfly":
            args.append(f"global={self.global_:g}ns")
        if self.ranks_per_node:
            args.append(f"rpn={self.ranks_per_node}")
        if self.intra:
            args.append(f"intra={self.intra:g}ns")
        if self.link:
            args.append(f"link={self.link:g}ns")
        return f"{self.kind}({','.join(args)})"


def parse_topology(
    spec: str | Topology | None, ranks_per_node: int = 0, intra: Time = 0.0
) -> Topology:
    """A topology from its spec: ``none``, ``fattree(k=16,hop=100ns)``,
    ``dragonfly(p=4,a=8,hop=100ns,global=500ns)``, ``torus(dims=8x8x8,hop=50ns)``; every spec also
    takes ``rpn=N`` (ranks per node: left out, the schedule's placement gives it, and where both
    are given they must agree), ``intra=TIME`` (latency within a node) and ``link=COST``
    (time per byte on each link, e.g. ``0.1ns`` or ``10GB/s``: messages then share links and wait
    for each other, congestion)."""
    if isinstance(spec, Topology):
        return spec
    spec = spec or "none"
    m = _DIST_RE.match(spec)
    if not m:
        raise _bad(f"topology: cannot parse '{spec}' (e.g. fattree(k=16,hop=100ns))")
    kind, arg_text = m.group(1), m.group(2)
    known = {
        "none": set(),
        "fattree": {"k", "hop"},
        "dragonfly": {"p", "a", "hop", "global"},
        "torus": {"dims", "hop"},
    }
    if kind not in known:
        raise _bad(f"topology: unknown kind '{kind}' (known: {', '.join(known)})")
    values: dict[str, str] = {}
    for part in arg_text.split(",") if arg_text and arg_text.strip() else []:
        key, eq, val = part.partition("=")
        key, val = key.strip(), val.strip()
        if not eq or not val or key not in known[kind] | {"rpn", "intra", "link"}:
            allowed = ", ".join(sorted(known[kind] | {"rpn", "intra", "link"}))
            raise _bad(f"topology: bad argument '{part.strip()}' for {kind} (takes {allowed})")
        if key in values:
            raise _bad(f"topology: '{key}' is given twice in '{spec}'")
        values[key] = val
    if kind != "none" and "hop" not in values:
        raise _bad(
            f"topology: {kind} needs hop=TIME, the latency per switch hop (without it every "
            f"message between nodes would cost nothing extra), e.g. {kind}(...,hop=100ns)"
        )

    def integer(key: str, default: int, lo: int = 1) -> int:
        text = values.get(key)
        if text is None:
            return default
        try:
            v = int(text)
        except ValueError:
            raise _bad(f"topology: {key}='{text}' is not an integer") from None
        if v < lo or v > 2**31:
            raise _bad(f"topology: {key} must be in [{lo}, 2^31], got {v}")
        return v

    dims: tuple[int, ...] = ()
    if kind == "torus":
        if "dims" not in values:
            raise _bad("topology: torus needs dims=AxBx..., e.g. torus(dims=8x8x8,hop=50ns)")
        try:
            dims = tuple(int(d) for d in values["dims"].lower().split("x"))
        except ValueError:
            raise _bad(f"topology: dims '{values['dims']}' must look like 8x8x8") from None
        if not dims or len(dims) > 8 or any(d < 1 or d > 2**31 for d in dims):
            raise _bad("topology: torus needs 1 to 8 dimensions, each in [1, 2^31]")
    return Topology(
        kind=kind,
        ranks_per_node=integer("rpn", ranks_per_node),
        intra=parse_time(values.get("intra", intra), "topology intra"),
        hop=parse_time(values.get("hop", 0.0), "topology hop"),
        global_=parse_time(values.get("global", 0.0), "topology global"),
        k=integer("k", 2, lo=2),
        p=integer("p", 1),
        a=integer("a", 1),
        dims=dims,
        link=parse_per_byte(values["link"], "topology link") if "link" in values else 0.0,
    )


FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.uint64]


@dataclass
class SimResult:
    """What a simulation returns. Times in ns; arrays are numpy.

    ``finish`` (per rank) and the per-op arrays are of the first trial; ``makespans`` has one
    entry per trial. Per-op arrays (``op_start``, ``op_end``, ``critical_path``, messages) are
    only there when the run was asked to record (``timeline=True``); ops are numbered globally,
    rank by rank (``rank_op_begin``), in each rank's op order.
    """

    algorithm: str
    P: int
    bytes_per_rank: int
    model: Model
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
    schedule: Schedule | None = None
    rank_op_begin: IndexArray | None = None
    op_start: FloatArray | None = None
    op_end: FloatArray | None = None
    critical_path: IndexArray | None = None
    msg_send: IndexArray | None = None
    msg_recv: IndexArray | None = None
    msg_depart: FloatArray | None = None
    msg_arrive: FloatArray | None = None
    count: int = 0
    elem_size: int = 8
    programs: int = 0  # distinct programs among the ranks (up to relabelling of peers)
    noise: Distribution = field(default_factory=Distribution)
    skew: Distribution = field(default_factory=Distribution)
    topology: Topology = field(default_factory=Topology)
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

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
            raise _bad("per-op data was not recorded: simulate with timeline=True")
        counts = np.diff(self.rank_op_begin).astype(np.int64)
        return np.repeat(np.arange(self.P, dtype=np.int64), counts)

    def settings(self) -> str:
        """Noise, skew, topology and seed, as the specs that reproduce them ('' if none)."""
        parts = []
        if self.noise.kind != "none":
            parts.append(f"noise={_describe_dist(self.noise)}")
        if self.skew.kind != "none":
            parts.append(f"skew={_describe_dist(self.skew)}")
        if self.topology.describe() != "none":
            parts.append(f"topology={self.topology.describe()}")
        if parts:
            parts.append(f"seed={self.seed}")
        return " ".join(parts)

    def collective(self) -> str:
        """The collective simulated: the schedule's, else the algorithm name's."""
        coll = self.algorithm.split(":", 1)[0] if ":" in self.algorithm else ""
        if self.schedule is not None:
            coll = self.schedule.collective
        return str(self.extra.get("collective", coll))

    def to_row(self, date: str = "") -> Row:
        """The result as a row of THE results schema (collkit.results): statistics over the
        trials' makespans in microseconds, source 'simulated', the model in `mpi`, noise, skew
        and topology in `settings`."""
        s = self.stats()
        us = 1e-3
        return Row(
            collective=self.collective(),
            algorithm=self.algorithm,
            P=self.P,
            bytes=self.bytes_per_rank,
            datatype="double" if self.elem_size == 8 else f"{self.elem_size}B",
            count=self.count,
            source="simulated",
            mpi=self.model.describe(),
            machine="collkit simulator",
            allocation=(
                f"{self.topology.ranks_per_node} ranks per node"
                + ("" if self.topology.order == "contiguous" else f", {self.topology.order}")
                if self.topology.ranks_per_node > 1
                else ""
            ),
            settings=self.settings(),
            date=date,
            min_us=s["min"] * us,
            q1_us=s["q1"] * us,
            median_us=s["median"] * us,
            q3_us=s["q3"] * us,
            mean_us=s["mean"] * us,
            p99_us=float(np.percentile(self.makespans, 99)) * us,
            max_us=s["max"] * us,
            iterations=len(self.makespans),
            samples=[float(t) * us for t in self.makespans] if len(self.makespans) > 1 else [],
        )

    def events_per_second(self) -> float:
        return self.events / self.run_seconds if self.run_seconds > 0 else math.inf

    def summary(self) -> str:
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


def _describe_dist(d: Distribution) -> str:
    if d.kind == "samples":
        return f"samples({len(d.samples)})"
    if d.kind == "trace":
        how = ",cosched" if d.b else ""
        return f"trace({len(d.samples) // 2} lines,period {d.samples[-2]:g}ns{how})"
    if d.kind in ("constant", "exponential"):
        return f"{d.kind}({d.a:g}ns)"
    if d.kind == "uniform":
        return f"uniform({d.a:g}ns,{d.b:g}ns)"
    if d.kind == "lognormal":
        return f"lognormal({d.a:g}ns,{d.b:g})"
    return d.kind


def format_ns(t: float) -> str:
    """A time in ns with a readable unit: 1500 -> '1.5 us'."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(t) >= scale:
            return f"{t / scale:.4g} {unit}"
    return f"{t:.4g} ns"


def _options(
    m: Model,
    noise: Distribution,
    skew: Distribution,
    topo: Topology,
    trials: int,
    seed: int,
    timeline: bool,
) -> Any:
    """The core's SimOptions object for these typed settings."""
    opts = _core.SimOptions()
    opts.set_model(m.name, dict(m.params))
    opts.set_noise(noise.kind, noise.a, noise.b, list(noise.samples))
    opts.set_skew(skew.kind, skew.a, skew.b, list(skew.samples))
    opts.set_topology(
        topo.kind,
        topo.ranks_per_node,
        topo.intra,
        topo.hop,
        topo.global_,
        topo.k,
        topo.p,
        topo.a,
        list(topo.dims),
        topo.link,
    )
    opts.trials = trials
    opts.seed = seed
    opts.record = timeline
    return opts


def _check_run(trials: int, seed: int) -> None:
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= 1_000_000:
        raise _bad(f"trials must be an integer in [1, 10^6], got {trials!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise _bad(f"seed must be an integer in [0, 2^64), got {seed!r}")


def simulate_file(
    path: str | os.PathLike[str],
    *,
    model: str | Model = "postal",
    noise: str | Distribution | None = None,
    skew: str | Distribution | None = None,
    topology: str | Topology | None = None,
    trials: int = 1,
    seed: int = 0,
    timeline: bool = False,
    **params: Time | None,
) -> SimResult:
    """Simulate a saved schedule (text, JSON or GOAL, LogGOPSim's plain GOAL included).

    A file in the text form, JSON or a GOAL file written by collkit is parsed as it is read and
    each rank's program interned as it comes (memory of the distinct programs, not of the file);
    a plain GOAL file is read twice (its sends indexed, 12 bytes each, then each rank's messages
    paired by tag as it comes); a file with a timeline is loaded whole first.
    """
    from collkit import io

    m = model if isinstance(model, Model) else Model.make(model, **params)
    if isinstance(model, Model) and params:
        raise _bad("pass model parameters either in a Model or as keywords, not both")
    from collkit import files

    files.check_regular(path, "schedule file")  # /dev/zero or a FIFO would be read forever
    fmt = io.format_for_path(path)
    if fmt is None:
        with open(path, "rb") as f:
            fmt = io.sniff_format(f.read(1 << 16).decode("utf-8", errors="replace"))
    if timeline:
        return simulate(
            io.load(path, fmt),
            model=m,
            noise=noise,
            skew=skew,
            topology=topology,
            trials=trials,
            seed=seed,
            timeline=timeline,
        )
    _check_run(trials, seed)
    noise_d, skew_d = parse_distribution(noise, "noise"), parse_distribution(skew, "skew")
    topo = parse_topology(topology)
    opts = _options(m, noise_d, skew_d, topo, trials, seed, False)
    try:
        d = _core.simulate_file(os.fspath(path), fmt, opts)
    except UnicodeDecodeError as e:  # a name in the file that is not UTF-8
        raise ScheduleFormatError(f"{os.fspath(path)}: text that is not UTF-8: {e}") from None
    if d["rpn"]:  # the file's placement gave the topology its nodes (the core checked they agree)
        topo = placed_topology(topo, Placement(int(d["rpn"]), str(d["order"])))
    return _result(
        d,
        algorithm=printable(str(d["algorithm"])) or "(schedule)",
        P=int(d["P"]),
        count=int(d["count"]),
        elem_size=int(d["elem_size"]),
        model=m,
        noise=noise_d,
        skew=skew_d,
        topology=topo,
        seed=seed,
        extra={"collective": str(d["collective"])},
    )


def _result(d: dict[str, Any], *, P: int, count: int, elem_size: int, **rest: Any) -> SimResult:
    """A SimResult from the core's answer `d`: its measures, and what the caller knows."""
    return SimResult(
        P=P,
        bytes_per_rank=count * elem_size,
        finish=d["finish"],
        makespans=d["makespans"],
        messages=int(d["messages"]),
        bytes_sent=int(d["bytes"]),
        ops=int(d["ops"]),
        events=int(d["events"]),
        load_seconds=float(d["load_seconds"]),
        run_seconds=float(d["run_seconds"]),
        load_cpu_seconds=float(d["load_cpu_seconds"]),
        run_cpu_seconds=float(d["run_cpu_seconds"]),
        memory_bytes=int(d["memory_bytes"]),
        count=count,
        elem_size=elem_size,
        programs=int(d["programs"]),
        **rest,
    )


def simulate(
    algorithm: str | Algorithm | Schedule,
    P: int | None = None,
    *,
    count: int | None = None,
    bytes: int | str | None = None,
    elem_size: int | None = None,
    root: int | None = None,
    model: str | Model = "postal",
    noise: str | Distribution | None = None,
    skew: str | Distribution | None = None,
    topology: str | Topology | None = None,
    placement: Placement | None = None,
    trials: int = 1,
    seed: int = 0,
    timeline: bool = False,
    **params: Time | None,
) -> SimResult:
    """Simulate `algorithm` (a name, an Algorithm or a whole Schedule) on P ranks.

    The problem size is `count` elements of `elem_size` bytes (default 8), or `bytes` per rank
    (rounded up to whole elements). A Schedule carries its own P, count, element size and root:
    giving any of them as well is an error unless it agrees. Model parameters go in `params`
    (e.g. ``alpha="1.34us"``) or in a ready `Model`. `noise` is a per-op delay, `skew` a
    per-rank start time (distribution specs, see :func:`parse_distribution`); `trials` repeats
    the run with fresh draws from `seed`. `timeline=True` records per-op times, messages and the
    critical path of the first trial (it holds the whole schedule: use it for small P).
    `placement` puts the ranks on nodes (node-aware algorithms need it; a Schedule carries its
    own); the topology's node size comes from it (a topology rpn=N must agree).
    """
    m = model if isinstance(model, Model) else Model.make(model, **params)
    if isinstance(model, Model) and params:
        raise _bad("pass model parameters either in a Model or as keywords, not both")
    _check_run(trials, seed)
    noise_d = parse_distribution(noise, "noise")
    skew_d = parse_distribution(skew, "skew")
    topo = parse_topology(topology)

    schedule: Schedule | None = None
    if isinstance(algorithm, Schedule):
        schedule = algorithm
        own = {
            "P": schedule.P,
            "count": schedule.count,
            "elem_size": schedule.elem_size,
            "root": schedule.root,
        }
        given = {"P": P, "count": count, "elem_size": elem_size, "root": root}
        for k, v in given.items():
            if v is not None and v != own[k]:
                raise _bad(
                    f"{k}={v!r} conflicts with the schedule's own {k} = {own[k]}: a Schedule "
                    "carries its problem; leave it out"
                )
        if bytes is not None:
            raise _bad(
                f"bytes={bytes!r} cannot apply to a ready Schedule (its size is "
                f"{schedule.count} x {schedule.elem_size} B per rank): leave it out"
            )
        P, count, elem_size, root = own["P"], own["count"], own["elem_size"], own["root"]
        name = schedule.algorithm or "(schedule)"
        own_placement = Placement(schedule.rpn, schedule.order) if schedule.rpn else None
        if placement is not None and placement != own_placement:
            raise _bad(
                f"placement {placement.describe()} conflicts with the schedule's own "
                f"({own_placement.describe() if own_placement else 'none'}): leave it out"
            )
        placement = own_placement
    else:
        algo = algorithm if isinstance(algorithm, Algorithm) else Algorithm(algorithm)
        name = algo.canonical
        if P is None:
            raise _bad("P is required")
        elem_size = 8 if elem_size is None else elem_size
        root = 0 if root is None else root
        if isinstance(elem_size, bool) or not isinstance(elem_size, int) or elem_size < 1:
            raise _bad(f"elem_size must be a positive integer, got {elem_size!r}")
        if count is not None and bytes is not None:
            raise _bad("give count or bytes, not both")
        if bytes is not None:
            nbytes = units.parse_size(bytes, "bytes") if isinstance(bytes, str) else int(bytes)
            if nbytes < 0:
                raise _bad(f"bytes must be >= 0, got {bytes!r}")
            count = -(-nbytes // elem_size)
        if count is None:
            count = 1
        P, count, elem_size, root = algo._args(P, count, elem_size, root)  # types and ranges
        if timeline:
            schedule = algo.generate(P, count, elem_size, root, placement=placement)
    topo = placed_topology(topo, placement)
    source: Any = schedule.core if schedule is not None else algo.core
    opts = _options(m, noise_d, skew_d, topo, trials, seed, timeline)
    assert P is not None and count is not None and elem_size is not None and root is not None
    d = _core.simulate(source, P, count, elem_size, root, opts, *core_args(placement))
    res = _result(
        d,
        algorithm=name,
        P=int(P),
        count=int(count),
        elem_size=int(elem_size),
        model=m,
        schedule=schedule,
        noise=noise_d,
        skew=skew_d,
        topology=topo,
        seed=seed,
    )
    if timeline:
        res.rank_op_begin = d["rank_op_begin"]
        res.op_start = d["op_start"]
        res.op_end = d["op_end"]
        res.critical_path = d["critical_path"]
        res.msg_send = d["msg_send"]
        res.msg_recv = d["msg_recv"]
        res.msg_depart = d["msg_depart"]
        res.msg_arrive = d["msg_arrive"]
    return res


def placed_topology(topo: Topology, placement: Placement | None) -> Topology:
    """The topology with its node size and rank order from the placement: one node size, so a
    topology that names another (rpn=N) is an error."""
    if placement is None:
        return topo
    if topo.ranks_per_node and topo.ranks_per_node != placement.rpn:
        raise _bad(
            f"the topology's rpn={topo.ranks_per_node} disagrees with the placement "
            f"({placement.describe()}): they are one node size; give it once (--rpn), or give "
            "the same number"
        )
    return replace(topo, ranks_per_node=placement.rpn, order=placement.order)


# The peak resident memory of a simulation, from its parts as measured (bench_simulate.py --suite
# memory, benchmarks/results/bench_simulate.md): the process with Python, numpy and collkit
# loaded; per rank its 48-byte state, its program's id, a slot in the free lists and its events
# in flight (LogGOPS: about three 24-byte events with the queue's slack, every op being one more
# queue entry; the postal models about two); per op a 16-bit counter while its rank runs (every
# rank at once, at worst).
_PROCESS_BYTES = 35 << 20
_RANK_BYTES = 48 + 4 + 8 + 80
_RANK_BYTES_POSTAL = 48 + 4 + 8 + 52
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
    postal = model is not None and model.replace("_", "-").lower() in ("postal", "pipelined-postal")
    return _RANK_BYTES_POSTAL if postal else _RANK_BYTES


def memory_estimate(
    algorithm: str | Algorithm,
    P: int,
    count: int,
    elem_size: int = 8,
    root: int = 0,
    timeline: bool = False,
    placement: Placement | None = None,
    model: str | None = None,
) -> tuple[int, int]:
    """(bytes, ops): the peak resident memory a simulation of `algorithm` under `model` (None:
    the larger, LogGOPS) will take (the process's, measured within 25 % for allreduce:rd,
    allreduce:rabenseifner and bcast:binomial from P = 2^16 to 2^20) and the ops of its
    schedule. The ops are counted exactly up to
    P = 512, else from the root and up to 256 ranks spread over 0..P-1 (most ranks of a tree or
    of Rabenseifner at small counts hold far fewer ops than the root or rank P/2)."""
    algo = algorithm if isinstance(algorithm, Algorithm) else Algorithm(algorithm)

    def ops_of(r: int) -> int:
        return len(algo.generate_rank(P, r, count, elem_size, root, placement=placement))

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
    return _PROCESS_BYTES + P * rank_memory_bytes(model) + total_ops * per_op, total_ops


def closed_form_rd_postal(
    P: int, nbytes: int, alpha: float, beta: float = 0.0, gamma: float = 0.0
) -> float:
    """Seed 002 Eq. 1 / Eq. 2 for allreduce:rd under the postal model (ns):
    (lg P)(alpha + n beta + n gamma) for P = 2^k; otherwise two more message stages (collapse,
    expand) and one more reduction (the collapse's)."""
    lg = P.bit_length() - 1
    pow2 = P & (P - 1) == 0
    stages = lg + (0 if pow2 else 2)
    reductions = lg + (0 if pow2 else 1)
    return stages * (alpha + nbytes * beta) + reductions * nbytes * gamma


def param_help() -> str:
    """One line per model listing its parameters and defaults, for the CLI help."""

    def show(k: str, v: float) -> str:
        return f"{k}={v:g}{PARAM_UNITS[k]}"

    out = []
    for name, ps in MODELS.items():
        out.append(f"  {name:17s} " + ", ".join(show(k, v) for k, v in ps.items()))
    out.append("  every model       " + ", ".join(show(k, v) for k, v in LOCAL_PARAMS.items()))
    return "\n".join(out)
