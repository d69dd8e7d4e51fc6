"""collkit's executor calibrated: its own cost per call and per operation, on this machine.

The kernel of `collkit calibrate` (collkit.profile) measures MPI's point-to-point. collkit's
schedules do not run on it alone: the executor looks up its plan, posts and tests requests (or
writes and polls its own shared-memory slots, up to COLLKIT_SHM_MAX bytes on one node), dispatches
every local copy and reduction, and that costs time per call and per operation that no LogGOPS
parameter of MPI's point-to-point contains. Nor do MPI's ping-pong and back-to-back sends say
whether the two directions of an exchange overlap: on shared memory both ends copy, so a rank
that sends and receives at once pays for both copies, which the CPU-per-byte ``O`` charges and
the wire-per-byte ``G`` does not.

So calibrate also runs a few small schedules through the executor with the bench driver (the
calibration set: one message, one message and a reduction, an exchange with and without a
reduction, a stream of messages, at sizes the validation does not use, 300 calls each) and
fits, with scipy's least squares on relative residuals, the simulator's own parameters to them:

- the model's network parameters (LogGOPS: L, o, g, G, O; postal: alpha, beta; ...) with the
  kernel's fits as the starting point: ``o`` then holds MPI's overhead per message plus the
  executor's per send / receive operation, ``O`` against ``G`` how far the two directions of an
  exchange overlap;
- ``reduce_base``: the executor's cost per reduction operation (dispatch included);
- ``call``: the cost of one collective call (plan lookup, the start and the end of the progress
  loop), added to the simulated makespan: the simulator has no per-call term and needs none (a
  constant moves no algorithm against another).

Through the shared-memory slots the eager cases are fitted twice: as above (regime "eager",
for every simulation of a profile), and with the slots' two copies as ops of their own
(regime "slots", SlotCopies: the sender's before the send, the receiver's after the receive,
``slot_copy`` ns a byte, the model's per-byte terms 0), which validate predicts with.

Parameters that no calibration case depends on keep the kernel's values; ``gamma`` and
``copy_beta`` stay the kernel's (measured on collkit's own reduction and memcpy). Each regime
(through the executor's shared-memory slots, or through MPI above COLLKIT_SHM_MAX; eager /
rendezvous without shared memory) is fitted on its own cases: a case belongs to the regime of its
largest message.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from collkit.errors import InvalidArgumentError
from collkit.measure import DATATYPE_BYTES, datatype_of, element_sizes, largest_message, measure
from collkit.sim.options import LOCAL_PARAMS as _LOCAL_PARAMS
from collkit.sim.options import MODELS as _SIM_MODELS
from collkit.sim.options import PARAM_UNITS as _PARAM_UNITS
from collkit.sim.options import PER_BYTE as _PER_BYTE

if TYPE_CHECKING:
    from collkit.mpi import MPI
    from collkit.profile import Profile

__all__ = [
    "CALIBRATION_ALGOS",
    "CALIBRATION_SIZES",
    "EXECUTOR_REGIMES",
    "FREE_PARAMS",
    "ExecutorCase",
    "executor_threshold",
    "fit_executor",
    "measure_executor",
]

# One message (bcast), one message and a reduction (reduce), an exchange with a reduction
# (allreduce:rd), two exchanges and a reduction (allreduce:ring at P = 2: the per-op cost apart
# from the per-call one), an exchange without reduction (allgather:ring), and a stream of 8 KiB
# messages (bcast:pipeline from 96 KiB: the throughput of back-to-back messages through the
# slots, where one message's latency alone predicted pipelines at 128 KiB-1 MiB 40-50 % slow).
CALIBRATION_ALGOS = (
    "bcast:binomial",
    "bcast:pipeline",
    "reduce:binomial",
    "allreduce:rd",
    "allreduce:ring",
    "allgather:ring",
)
# Bytes per rank (per block for allgather): none of them is a size of the validation's default,
# and none puts a message at or just above the slot size (SHM_DEFAULT_MAX): 12 KiB is the slots'
# largest, 96 KiB MPI's smallest (allreduce:ring's 48 KiB halves at P = 2); 1.5 and 3 MiB are
# beyond the caches (the regime "large", see large_threshold), where 1 MiB falls.
CALIBRATION_SIZES = (64, 512, 4096, 12288, 98304, 262144, 524288, 1572864, 3145728)
# The parameters fitted per model, every registered model's own but its sizes (S, the
# transport's threshold, is never fitted).
FREE_PARAMS: dict[str, tuple[str, ...]] = {
    m: tuple(k for k in ps if _PARAM_UNITS[k] != "B") for m, ps in _SIM_MODELS.items()
}
# The models' costs a byte of a message (not the local ops').
PER_BYTE = tuple(sorted(_PER_BYTE - set(_LOCAL_PARAMS)))
SHM_DEFAULT_MAX = 32768  # mpi/src/shm.cpp's kDefaultSlotBytes
# The regimes fit_executor fits (a profile's executor section is keyed by them); "slots" fits
# the eager cases through the shared-memory slots with their copies as ops of their own.
EXECUTOR_REGIMES = ("eager", "slots", "rendezvous", "large")
MIN_LARGE_CASES = 6  # fewer cases beyond the caches: they stay in the MPI regime


@dataclass(frozen=True)
class ExecutorCase:
    """One calibration measurement: an algorithm at `bytes` on P ranks, its measured times
    (ns) and the largest message it sends (the regime)."""

    algorithm: str
    P: int
    bytes: int
    min: float
    median: float
    largest_message: int

    @property
    def collective(self) -> str:
        return self.algorithm.split(":", 1)[0]


def executor_threshold(
    kernel_threshold: float,
    *,
    on_one_node: bool = True,
    transport: str = "",
    shm_bytes: float = 0.0,
) -> tuple[float, str]:
    """(bytes, what): the largest message of the executor's small-message regime. Through
    collkit's shared-memory transport (`transport` "shm", as the bench driver's rows say;
    "" on one node with COLLKIT_SHM not 0) messages up to its slot size (`shm_bytes`, as the
    calibration kernel measured it; else COLLKIT_SHM_MAX) go through its slots, larger ones
    through MPI; otherwise MPI's eager / rendezvous threshold S decides."""
    shm = transport == "shm" or (
        not transport and on_one_node and os.environ.get("COLLKIT_SHM", "1") != "0"
    )
    if shm:
        mx = shm_bytes
        if mx <= 0:
            v = os.environ.get("COLLKIT_SHM_MAX", "")
            mx = int(v) if v.isdigit() else SHM_DEFAULT_MAX
        return float(mx), f"collkit's shared-memory slots up to {mx:g} B, MPI above"
    return kernel_threshold, "MPI eager up to S, rendezvous above"


def l2_cache_bytes() -> int:
    """This machine's L2 cache a core (bytes, as Linux's sysfs says; 0 if it does not)."""
    try:
        text = Path("/sys/devices/system/cpu/cpu0/cache/index2/size").read_text().strip()
    except OSError:
        return 0
    unit = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:].upper(), 1)
    digits = text.rstrip("KkMm")
    return int(digits) * unit if digits.isdigit() else 0


def large_threshold(l2_bytes: int) -> tuple[float, str]:
    """(bytes, why): the smallest message of the executor's regime "large" (0: none). A
    collective's buffers outgrow a core's L2 cache once its largest message reaches half of it
    (a reduction reads two such buffers and writes a third): copies, reductions and MPI's own
    transfers then cost more a byte (measured here, reduce:binomial at P = 2 took 55 us at
    256 KiB and 183 us at 512 KiB, bcast 29 and 56 us), which one line through all MPI sizes
    did not fit at either end."""
    if l2_bytes <= 0:
        return 0.0, "the L2 cache's size is not known: no large regime"
    return float(l2_bytes // 2), f"half the L2 cache of {l2_bytes // 1024} KiB a core"


def measure_executor(
    mpi: MPI,
    *,
    P: int = 2,
    algorithms: Sequence[str] = CALIBRATION_ALGOS,
    sizes: Sequence[int] = CALIBRATION_SIZES,
    rounds: int = 3,
    iterations: int = 20,
    hosts: str | None = None,
    progress: Callable[[str], None] | None = None,
    sync: str = "barrier",
) -> list[dict[str, Any]]:
    """The calibration set measured with the bench driver (interleaved rounds, as validate
    measures): one record per (algorithm, bytes), times in µs as the kernel writes them."""
    by_coll: dict[str, list[str]] = {}
    for a in algorithms:
        by_coll.setdefault(a.split(":", 1)[0], []).append(a)
    out: list[dict[str, Any]] = []
    for coll, names in by_coll.items():
        elem = DATATYPE_BYTES[datatype_of(coll)]
        szs = element_sizes(coll, sizes)
        transports: dict[tuple[str, int], str] = {}
        got = measure(
            mpi,
            coll,
            P,
            names,
            szs,
            rounds=rounds,
            iterations=iterations,
            hosts=hosts,
            progress=progress,
            sync=sync,
            transports=transports,
        )
        for name in names:
            for s in szs:
                xs = got.get((name, s), [])
                if not xs:
                    continue
                out.append(
                    {
                        "kind": "executor",
                        "algorithm": name,
                        "P": P,
                        "bytes": s,
                        "min": float(np.min(xs)),
                        "median": float(np.median(xs)),
                        "samples": len(xs),
                        "largest_message": largest_message(name, P, s // elem, elem),
                        "sync": sync,
                        "transport": transports.get((name, s), ""),
                    }
                )
    # The machine's L2 cache, for the regime beyond it (fit_executor): this machine's, which is
    # the measured one unless --hosts put the ranks elsewhere.
    out.append({"kind": "cache", "l2_bytes": l2_cache_bytes()})
    return out


def records_sync(records: Sequence[Mapping[str, Any]]) -> str:
    """How the calibration's iterations started (measure's sync), '' if not said."""
    got = {str(r.get("sync", "")) for r in records if r.get("kind") == "executor"}
    return got.pop() if len(got) == 1 else ", ".join(sorted(got))


def records_transport(records: Sequence[Mapping[str, Any]]) -> str:
    """The transport the calibration's runs used ("shm", "p2p (why)"; the bench rows'
    `transport`), '' if not said (profiles before version 3)."""
    got = {str(r.get("transport", "")) for r in records if r.get("kind") == "executor"}
    got.discard("")
    return got.pop() if len(got) == 1 else ", ".join(sorted(got))


def cases_from_records(records: Sequence[Mapping[str, Any]]) -> list[ExecutorCase]:
    return [
        ExecutorCase(
            str(r["algorithm"]),
            int(r["P"]),
            int(r["bytes"]),
            float(r["min"]) * 1e3,
            float(r["median"]) * 1e3,
            int(r["largest_message"]),
        )
        for r in records
        if r.get("kind") == "executor"
    ]


def _schedules(cases: Sequence[ExecutorCase]) -> list[Any]:
    from collkit.algorithms import Algorithm

    out = []
    for c in cases:
        elem = DATATYPE_BYTES[datatype_of(c.collective)]
        out.append(Algorithm(c.algorithm).generate(c.P, count=c.bytes // elem, elem_size=elem))
    return out


def late_start(schedule: Any, delay_ns: float) -> tuple[Any, np.ndarray]:
    """`schedule` with every rank but 0 starting `delay_ns` late (a sleep op first that all its
    first ops wait on), and the start of each rank (ns): how the ranks leave an MPI_Barrier."""
    d = round(delay_ns)
    starts = np.array([0.0] + [float(d)] * (schedule.P - 1))
    if d <= 0 or schedule.P < 2:
        return schedule, np.zeros(schedule.P)
    a = schedule.arrays()
    n = len(a["rank"])
    cols = [k for k in a if k not in ("dep_begin", "deps", "scratch_begin", "scratch")]
    out: dict[str, list[int]] = {k: [] for k in cols}
    dep_begin: list[int] = [0]
    deps: list[int] = []
    first = np.searchsorted(a["rank"], np.arange(schedule.P + 1))
    for r in range(schedule.P):
        shift = 1 if r > 0 else 0
        if shift:
            for k in cols:
                out[k].append({"rank": r, "kind": 5, "peer": -1, "len": d}.get(k, 0))
            dep_begin.append(len(deps))
        for i in range(first[r], first[r + 1]):
            for k in cols:
                out[k].append(int(a[k][i]))
            mine = a["deps"][a["dep_begin"][i] : a["dep_begin"][i + 1]]
            deps.extend([int(x) + shift for x in mine] if len(mine) or not shift else [0])
            dep_begin.append(len(deps))
    assert len(out["rank"]) == n + schedule.P - 1
    cols_np: dict[str, Any] = {k: np.array(v) for k, v in out.items()}
    cols_np["dep_begin"] = np.array(dep_begin)
    cols_np["deps"] = np.array(deps)
    cols_np["scratch_begin"] = a["scratch_begin"]
    cols_np["scratch"] = a["scratch"]
    return _with_arrays(schedule, cols_np), starts


def _with_arrays(schedule: Any, cols: dict[str, Any]) -> Any:
    """A schedule of `schedule`'s collective and shape with the op arrays `cols`."""
    from collkit.schedule import Schedule

    return Schedule.from_arrays(
        cols,
        collective=schedule.collective,
        P=schedule.P,
        count=schedule.count,
        elem_size=schedule.elem_size,
        root=schedule.root,
        algorithm=schedule.algorithm,
    )


class SlotCopies:
    """`schedule` with the copies of collkit's shared-memory slots as ops of their own: before
    each send the sender's copy into the slot, after each receive the receiver's copy out of
    it, each a compute op on that rank's CPU (built once; `at(rate)` sets their time, `rate`
    ns a byte). The send waits for its copy; what waited for a receive waits for its copy.

    LogGOPS (LogGOPSim's semantics) charges a message's bytes as ``O`` on the sender's CPU and
    ``G`` on the wire, the receiver's share overlapped with the sender's: one ``max(G, O)`` a
    byte for a lone message and for a stream alike. Through the slots the receiver copies
    only once the sender has: measured, a lone message pays both copies in turn (bcast
    12-16 KiB: 0.17-0.19 ns/B) while in a stream the receiver's copy of one message overlaps
    the sender's of the next (bcast:pipeline 96-512 KiB: 0.08-0.09 ns/B), and a rank of an
    exchange copies in and out on one CPU. With the copies here the model's per-byte terms
    are 0 (calibrate_executor.fit_regime)."""

    def __init__(self, schedule: Any) -> None:
        a = schedule.arrays()
        self.schedule = schedule
        kind, rank = a["kind"], a["rank"]
        n = len(kind)
        first = np.searchsorted(rank, np.arange(schedule.P + 1))
        db, ds = a["dep_begin"], a["deps"]
        cols = [k for k in a if k not in ("dep_begin", "deps", "scratch_begin", "scratch")]
        succ: list[list[int]] = [[] for _ in range(n)]
        for i in range(n):
            for d in ds[db[i] : db[i + 1]]:
                succ[first[rank[i]] + int(d)].append(i)

        def fused(i: int) -> bool:
            # The executor reduces straight out of the slot (no copy) a receive into scratch
            # whose one successor reduces exactly what it received (mpi/src/executor.cpp).
            if a["buf"][i] < 2 or len(succ[i]) != 1:
                return False
            j = succ[i][0]
            return bool(
                kind[j] == 2
                and a["src"][j] == a["buf"][i]
                and a["src_off"][j] == a["off"][i]
                and a["len"][j] == a["len"][i]
            )

        # New rank-local index of each old op and of what its dependents wait for (its copy
        # out, for a receive); a send's copy in comes right before it.
        new_local = np.zeros(n, dtype=np.int64)
        done_at = np.zeros(n, dtype=np.int64)
        order: list[tuple[int, int]] = []  # (old op, 0: itself, 1: its copy)
        copy_out = np.array([kind[i] == 1 and not fused(i) for i in range(n)], dtype=bool)
        for r in range(schedule.P):
            at = 0
            for i in range(first[r], first[r + 1]):
                if kind[i] == 0:
                    order.append((i, 1))
                    at += 1
                new_local[i] = at
                order.append((i, 0))
                at += 1
                if copy_out[i]:
                    order.append((i, 1))
                    at += 1
                done_at[i] = at - 1
        m = len(order)
        src = np.array([i for i, _ in order], dtype=np.int64)
        is_copy = np.array([c for _, c in order], dtype=bool)
        out = {k: a[k][src].copy() for k in cols}
        out["kind"][is_copy] = 4  # compute: its len is ns on the rank's CPU
        for col in ("buf", "off", "src", "src_off", "side"):
            out[col][is_copy] = 0
        out["peer"][is_copy] = -1
        deps: list[int] = []
        dep_begin = [0]
        last_root_send, cur = -1, -1  # rank-local, new numbering
        for i, c in order:
            base = first[rank[i]]
            if rank[i] != cur:
                last_root_send, cur = -1, int(rank[i])
            mine = ds[db[i] : db[i + 1]]
            if kind[i] == 0 and c:
                # The copy in is the send's own work: the executor takes the sends that need
                # nothing in program order, each copied before the next is (a FIFO queue).
                deps.extend(int(done_at[base + d]) for d in mine)
                if len(mine) == 0 and last_root_send >= 0:
                    deps.append(last_root_send)
                if len(mine) == 0:
                    last_root_send = int(new_local[i])
            elif kind[i] == 0:
                deps.append(int(new_local[i]) - 1)  # the send waits for its copy in
            elif c:
                deps.append(int(new_local[i]))  # the copy out waits for its receive
            else:
                deps.extend(int(done_at[base + d]) for d in mine)
            dep_begin.append(len(deps))
        assert len(dep_begin) == m + 1
        self.cols = out
        self.cols["dep_begin"] = np.array(dep_begin)
        self.cols["deps"] = np.array(deps)
        self.cols["scratch_begin"] = a["scratch_begin"]
        self.cols["scratch"] = a["scratch"]
        self.copy_at = np.flatnonzero(is_copy)
        self.copy_bytes = a["len"][src[is_copy]].astype(float) * schedule.elem_size

    def at(self, rate: float) -> Any:
        if rate <= 0 or len(self.copy_at) == 0:
            return self.schedule
        cols = dict(self.cols)
        cols["len"] = cols["len"].copy()
        cols["len"][self.copy_at] = np.rint(self.copy_bytes * rate).astype(cols["len"].dtype)
        return _with_arrays(self.schedule, cols)


def elapsed(schedule: Any, model: Any, barrier_skew: float = 0.0, slot_copy: float = 0.0) -> float:
    """What the bench driver measures of one call (ns): the largest time from a rank's own
    start to its finish, the ranks but 0 starting `barrier_skew` late (0: all at once), each
    message's two copies through the slots at `slot_copy` ns a byte (0: none; see
    SlotCopies, which built once for `schedule` takes its place here)."""
    from collkit.simulate import simulate

    if isinstance(schedule, SlotCopies):
        schedule = schedule.at(slot_copy)
    elif slot_copy > 0:
        schedule = SlotCopies(schedule).at(slot_copy)
    if barrier_skew <= 0:
        return float(simulate(schedule, model=model).makespan)
    late, starts = late_start(schedule, barrier_skew)
    r = simulate(late, model=model)
    return float(np.max(np.asarray(r.finish, dtype=float) - starts))


def fit_regime(
    model: str,
    cases: Sequence[ExecutorCase],
    start: Mapping[str, float],
    stat: str,
    *,
    barrier: bool = False,
    floor: Mapping[str, Any] | None = None,
    slot_copy: bool = False,
) -> dict[str, Any]:
    """Least squares (scipy) of the model's free parameters, reduce_base and the per-call cost
    to the cases' measured `stat` (relative residuals, soft L1 loss against the odd sample a
    loaded machine gives); `start` holds the model's parameters, gamma, reduce_base and
    copy_beta from the kernel. With `barrier` (iterations measured after an MPI_Barrier) also
    the barrier's exit skew: ranks but 0 start that much later (see elapsed). Returns the
    fitted parameters (start's fixed ones included), "call" and "barrier_skew" (ns) and the
    fit's quality.

    `floor`: a fit of the same cases' minima (this function's result, parameters with "call"
    and "barrier_skew"): every free parameter and the per-call cost are then kept at or above
    the floor's, and the barrier skew is the floor's. The simulated time grows with each of
    them, so the prediction from this fit is never below the floor's: a predicted median is
    never below the predicted minimum.

    `slot_copy`: the cases moved their messages through collkit's shared-memory slots; the
    slots' two copies are ops of their own (SlotCopies), their cost a byte fitted and returned
    as "slot_copy", the model's per-byte terms held at 0."""
    from scipy.optimize import least_squares  # type: ignore[import-untyped]

    from collkit.simulate import Model

    if not cases:
        raise InvalidArgumentError("no calibration cases in this regime")
    free = [*FREE_PARAMS[model], "reduce_base"]
    scheds: list[Any] = _schedules(cases)
    start = dict(start)
    if slot_copy:
        # The slots' copies carry the bytes (SlotCopies): the model's per-byte terms are 0,
        # and the copy starts at the kernel's cost a byte of a stream through the slots.
        per_byte = [k for k in PER_BYTE if k in start]
        start.setdefault("slot_copy", max([float(start[k]) for k in per_byte] + [0.0]))
        start.update({k: 0.0 for k in per_byte})
        free = [k for k in free if k not in PER_BYTE] + ["slot_copy"]
        scheds = [SlotCopies(s) for s in scheds]
    y = np.array([getattr(c, stat) for c in cases], dtype=float)
    k_skew, k_call = len(free), len(free) + 1
    # The skew is the measurement's, not the statistic's: with a floor it is the floor's.
    fixed_skew = float(floor["barrier_skew"]) if floor is not None else None

    def predict(x: np.ndarray) -> np.ndarray:
        ps = dict(start)
        ps.update({k: float(v) for k, v in zip(free, x[:k_skew], strict=True)})
        rate = ps.pop("slot_copy", 0.0)
        m = Model.make(model, **ps)
        skew = fixed_skew if fixed_skew is not None else float(x[k_skew]) if barrier else 0.0
        t = np.array([elapsed(s, m, skew, rate) for s in scheds], dtype=float)
        return t + float(x[k_call])

    x0 = np.array([float(start[k]) for k in free] + [300.0 if barrier else 0.0, 0.0])
    lo = np.zeros_like(x0)
    hi = np.full_like(x0, np.inf)
    if floor is not None:
        fl = {**floor["params"], "slot_copy": floor.get("slot_copy", 0.0)}
        lo = np.array([float(fl[k]) for k in free] + [0.0, float(floor["call"])])
        x0 = np.maximum(x0, lo)
    base = predict(np.array([*x0[:k_skew], 0.0, 0.0]))
    x0[k_call] = max(float(np.median(y - predict(x0))), float(lo[k_call]))
    # The makespan is piecewise linear in the parameters: derivatives by small relative steps
    # (1e-3; 5e-2 for the skew, which the schedule holds in whole ns), and a scale per kind of
    # parameter (per-byte costs are ~1e4 times smaller).
    scale = np.array(
        [0.01 if k in (*PER_BYTE, "slot_copy") else 100.0 for k in free] + [100.0, 100.0],
        dtype=float,
    )
    step = np.full_like(x0, 1e-3)
    step[k_skew] = 5e-2
    if slot_copy:  # the copies, too, are whole ns
        step[free.index("slot_copy")] = 5e-2

    def resid(x: np.ndarray) -> np.ndarray:
        r: np.ndarray = (predict(x) - y) / y
        return r

    sol = least_squares(
        resid,
        x0,
        bounds=(lo, hi),
        x_scale=scale,
        diff_step=step,
        loss="soft_l1",
        f_scale=0.05,
        max_nfev=200,
    )
    rel = resid(sol.x)
    params = dict(start)
    params.update({k: float(v) for k, v in zip(free, sol.x[:k_skew], strict=True)})
    rate = params.pop("slot_copy", None)
    return {
        "params": params,
        **({"slot_copy": rate} if rate is not None else {}),
        "call": float(sol.x[k_call]),
        "barrier_skew": (
            fixed_skew if fixed_skew is not None else float(sol.x[k_skew]) if barrier else 0.0
        ),
        "rms_rel_residual": float(np.sqrt(np.mean(rel**2))),
        "max_rel_residual": float(np.max(np.abs(rel))),
        "rms_rel_residual_before": float(np.sqrt(np.mean(((base - y) / y) ** 2))),
        "cases": len(cases),
    }


def fit_executor(
    profile: Profile,
    records: Sequence[Mapping[str, Any]],
    *,
    on_one_node: bool = True,
    models: Sequence[str] = ("postal", "loggops"),
    l2_bytes: int | None = None,
) -> dict[str, Any]:
    """The profile's `executor` section from the calibration set's records (see the module's
    docstring): per statistic the regime threshold and per regime and model the fitted
    parameters, the per-call cost and the fit's quality. `models`: postal and LogGOPS by
    default (each fit simulates every case some hundred times); the others keep the kernel's
    parameters (Profile.params). Regimes: "eager" (messages up to the slot size or MPI's S),
    "rendezvous" above, and "large" from half the L2 cache up (large_threshold), when the
    records say the cache's size (measure_executor's "cache" record; `l2_bytes` overrides) and
    hold enough cases there."""
    cases = cases_from_records(records)
    if not cases:
        raise InvalidArgumentError("no executor measurements to fit")
    measured = records_transport(records)
    threshold, transport = executor_threshold(
        profile.threshold_bytes,
        on_one_node=on_one_node,
        transport=measured,
        shm_bytes=profile.shm_bytes,
    )
    through_shm = transport.startswith("collkit's shared-memory")
    sync = records_sync(records) or "barrier"  # the bench's default
    if l2_bytes is None:
        said = [r.get("l2_bytes") for r in records if r.get("kind") == "cache"]
        l2_bytes = int(said[0]) if said and isinstance(said[0], int) and said[0] > 0 else 0
    large, large_why = large_threshold(l2_bytes)
    if large <= threshold or sum(c.largest_message >= large for c in cases) < MIN_LARGE_CASES:
        large = 0.0  # no large regime: too few cases beyond the caches to fit one
        large_why = large_why if large_why.startswith("the L2") else "too few cases beyond it"

    def regime_of(c: ExecutorCase) -> str:
        if c.largest_message <= threshold:
            return "eager"
        return "large" if large and c.largest_message >= large else "rendezvous"

    out: dict[str, Any] = {}
    # The minima first: the medians' fits are kept at or above them (fit_regime's floor).
    floors: dict[tuple[str, str], dict[str, Any]] = {}
    for stat in sorted(profile.models, key=lambda st: st != "min"):
        regimes: dict[str, dict[str, Any]] = {}
        # "slots": the eager cases through the shared-memory slots once more, with the slots'
        # copies as ops of their own (SlotCopies): what validate predicts them with. The
        # eager regime's plain fit stays for every simulation of a profile that has no such
        # ops (simulate --profile, tune --simulate).
        for regime in EXECUTOR_REGIMES:
            if regime == "slots" and not (through_shm and threshold > 0):
                continue
            of = "eager" if regime == "slots" else regime
            mine = [c for c in cases if regime_of(c) == of and getattr(c, stat) > 0]
            if not mine:
                continue
            regimes[regime] = {}
            for model in models:
                # The kernel's parameters of the regime of these messages: the MPI's own
                # threshold decides which of its fits is the start.
                big = max(c.largest_message for c in mine)
                start = profile.params(
                    model,
                    stat=stat,
                    message_bytes=big,
                    executor=False,
                    transport="shm" if through_shm else "p2p",
                )
                if model == "loggops":
                    # Through the slots a send never waits for its receiver (eager); through
                    # MPI, MPI's threshold holds.
                    start["S"] = math.inf if of == "eager" and threshold > 0 else start["S"]
                f = fit_regime(
                    model,
                    mine,
                    start,
                    stat,
                    barrier=sync != "window",
                    floor=floors.get((regime, model)) if stat != "min" else None,
                    slot_copy=regime == "slots",
                )
                if stat == "min":
                    floors[(regime, model)] = f
                regimes[regime][model] = {
                    **{k: v for k, v in f["params"].items() if k not in ("gamma", "copy_beta")},
                    "call": f["call"],
                    "barrier_skew": f["barrier_skew"],
                    **({"slot_copy": f["slot_copy"]} if "slot_copy" in f else {}),
                }
                regimes[regime].setdefault("fit", {})[model] = {
                    k: f[k]
                    for k in (
                        "rms_rel_residual",
                        "max_rel_residual",
                        "rms_rel_residual_before",
                        "cases",
                    )
                }
        out[stat] = {
            "sync": sync,
            "threshold_bytes": threshold,
            "large_bytes": large,
            "large_why": large_why,
            "transport": transport,
            "measured_transport": measured,
            "algorithms": sorted({c.algorithm for c in cases}),
            "sizes": sorted({c.bytes for c in cases}),
            "regimes": regimes,
        }
    return out
