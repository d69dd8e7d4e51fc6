"""The simulator held against the machine: predict with a profile, measure, and say how far apart.

For every (collective, P, algorithm, size) the simulator predicts the time with the parameters
of a machine profile (collkit.profile: fitted from minima and from medians), the bench driver
measures it (all algorithms of a collective in one run, size by size with every algorithm in
turn, in rounds whose algorithm order rotates; the samples of all rounds pooled), and the report
gives per case the prediction, the measured minimum and median and the relative difference
``(measured - predicted) / predicted`` (as collkit.fit.compare, which reads the rows written
here), and per (collective, P, size) whether the simulator orders each pair of algorithms as
the measurement does. The picture is in the style of Fig. 12 of
Ruefenacht, Bull and Booth, "Generalisation of recursive doubling for AllReduce: Now with
simulation" (Parallel Computing, 2017): relative difference by size, one line per algorithm,
minimum and median.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from collkit.algorithms import Algorithm, algorithms
from collkit.calibrate_executor import elapsed
from collkit.errors import CollkitError, InvalidArgumentError
from collkit.measure import (
    DATATYPE_BYTES,
    datatype_of,
    element_sizes,
    largest_message,
    measure,
)
from collkit.profile import Profile, machine_load
from collkit.results import Row

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from collkit.mpi import MPI

__all__ = [
    "Case",
    "Validation",
    "plot_predicted_vs_measured",
    "plot_validation",
    "registry_algorithms",
    "validate",
    "validate_rows",
]

# Two measured times closer than this (relative) are a tie: no order to get right or wrong.
TIE = 0.05


@functools.lru_cache(maxsize=4096)
def schedule_digest(algorithm: str, P: int, nbytes: int, collective: str) -> str:
    """A digest of the schedule `algorithm` generates at P ranks and `nbytes` (every op of every
    rank and the scratch buffers, not its name): equal for two algorithms that are one schedule
    here (at P = 2 binomial, binary, k-nomial and linear reduce are one message and one
    reduction). "" when it cannot be generated."""
    elem = DATATYPE_BYTES[datatype_of(collective)]
    try:
        a = Algorithm(algorithm).generate(P, count=max(1, nbytes // elem), elem_size=elem).arrays()
    except CollkitError:
        return ""
    h = hashlib.blake2b(digest_size=16)
    for k in sorted(a):
        h.update(k.encode())
        h.update(np.ascontiguousarray(a[k], dtype=np.int64).tobytes())
    return h.hexdigest()


class PairCount(NamedTuple):
    """How a validation's algorithm pairs fared (see Validation.pairs)."""

    good: int  # ordered as measured
    total: int  # distinguishable: measured apart by more than TIE, different schedules
    ties: int  # measured within TIE of each other
    same: int  # one schedule under two names: measured apart only by the measurement's noise


@dataclass
class Case:
    """One (collective, P, algorithm, size): the prediction and the measurement (µs)."""

    collective: str
    algorithm: str
    P: int
    bytes: int
    predicted_min: float = math.nan  # with the profile's parameters from minima
    predicted_median: float = math.nan  # ... from medians
    measured_min: float = math.nan
    measured_median: float = math.nan
    samples: int = 0
    regime: str = "eager"  # of the largest message: which fits the prediction used
    error: str = ""
    transport: str = ""  # how collkit moved the messages (the bench rows': "shm", "p2p (why)")

    @property
    def error_min(self) -> float:
        """(measured - predicted) / predicted, of the minima: the relative difference of
        collkit.fit.compare and of Fig. 12 of Ruefenacht, Bull, Booth 2017."""
        return self.measured_min / self.predicted_min - 1

    @property
    def error_median(self) -> float:
        return self.measured_median / self.predicted_median - 1


@dataclass
class Validation:
    cases: list[Case]
    model: str
    profile: Profile
    mpi: str
    machine: str
    date: str
    load: str
    allocation: dict[int, str] = field(default_factory=dict)
    executor: bool = False  # the prediction used the executor's fits (per-call, per-op costs)
    sync: str = ""  # how the measured iterations started (measure's sync)

    def ok(self) -> list[Case]:
        return [c for c in self.cases if not c.error and c.measured_min > 0]

    def median_abs_error(self, stat: str = "min", cases: Sequence[Case] | None = None) -> float:
        errs = [abs(getattr(c, f"error_{stat}")) for c in (cases or self.ok())]
        return float(np.median(errs)) if errs else math.nan

    def _pairs_of(self, cases: Sequence[Case] | None) -> Iterator[tuple[Case, Case, bool]]:
        """Every pair of algorithms of one (collective, P, size), and whether the two are one
        schedule (equal schedule_digest)."""
        groups: dict[tuple[str, int, int], list[Case]] = {}
        for c in cases or self.ok():
            groups.setdefault((c.collective, c.P, c.bytes), []).append(c)
        for cs in groups.values():
            for a, b in itertools.combinations(cs, 2):
                da = schedule_digest(a.algorithm, a.P, a.bytes, a.collective)
                yield (
                    a,
                    b,
                    bool(da) and da == schedule_digest(b.algorithm, b.P, b.bytes, b.collective),
                )

    def pairs(self, stat: str = "min", cases: Sequence[Case] | None = None) -> PairCount:
        """Over every pair of algorithms of one (collective, P, size): how many the prediction
        orders as measured, of the distinguishable ones. Two names of one schedule (equal
        schedule_digest) are not a pair any model can order: whatever the measurement says of
        them is its noise (counted apart, `same`). A pair whose measured times are within TIE
        of each other is a tie (counted apart: no order to get right); a prediction that ties
        a distinguishable pair orders it wrongly."""
        good = total = ties = same = 0
        for a, b, one in self._pairs_of(cases):
            if one:
                same += 1
                continue
            ma, mb = getattr(a, f"measured_{stat}"), getattr(b, f"measured_{stat}")
            pa, pb = getattr(a, f"predicted_{stat}"), getattr(b, f"predicted_{stat}")
            if abs(ma - mb) <= TIE * min(ma, mb):
                ties += 1
                continue
            total += 1
            good += (ma < mb) == (pa < pb) and pa != pb
        return PairCount(good, total, ties, same)

    def same_schedule_spread(self, stat: str = "min", cases: Sequence[Case] | None = None) -> float:
        """The median relative difference between the measured times of two names of one
        schedule, measured in the same run (NaN without such pairs): the noise of this very
        measurement, which no model's error can be shown below."""
        spread = []
        for a, b, one in self._pairs_of(cases):
            if one:
                ma, mb = getattr(a, f"measured_{stat}"), getattr(b, f"measured_{stat}")
                spread.append(abs(ma - mb) / min(ma, mb))
        return float(np.median(spread)) if spread else math.nan

    def rows(self) -> list[Row]:
        """Measured and simulated rows of THE results schema, side by side."""
        out: list[Row] = []
        for c in self.cases:
            dt = datatype_of(c.collective)
            elem = DATATYPE_BYTES[dt]
            base = dict(
                collective=c.collective,
                algorithm=c.algorithm,
                P=c.P,
                bytes=c.bytes,
                datatype=dt,
                count=c.bytes // elem,
                machine=self.machine,
                allocation=self.allocation.get(c.P, ""),
                date=self.date,
            )
            m = Row(
                **base,  # type: ignore[arg-type]
                source="measured",
                mpi=self.mpi,
                iterations=c.samples,
                settings=f"sync={self.sync}" if self.sync else "",
                transport=c.transport,
            )
            m.min_us, m.median_us = c.measured_min, c.measured_median
            if c.error:
                m.error = c.error
            s = Row(
                **base,  # type: ignore[arg-type]
                source="simulated",
                mpi=f"simulated: {self.model}{' + executor' if self.executor else ''}, "
                f"profile {self.profile.name} ({self.profile.mpi})",
                settings=f"regime={c.regime}",
                iterations=1,
                transport=c.transport,
            )
            s.min_us, s.median_us = c.predicted_min, c.predicted_median
            out += [m, s]
        return out

    def table(self) -> str:
        """Markdown: one line per case, then the summary."""
        lines = [
            "| collective | P | algorithm | bytes | predicted min | measured min | error min | "
            "predicted median | measured median | error median |",
            "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for c in self.cases:
            if c.error or not c.measured_min > 0:
                lines.append(
                    f"| {c.collective} | {c.P} | {c.algorithm} | {c.bytes} | "
                    f"{c.error or 'not measured'} | | | | | |"
                )
                continue
            lines.append(
                f"| {c.collective} | {c.P} | {c.algorithm} | {c.bytes} | {c.predicted_min:.2f} | "
                f"{c.measured_min:.2f} | {100 * c.error_min:+.0f}% | {c.predicted_median:.2f} | "
                f"{c.measured_median:.2f} | {100 * c.error_median:+.0f}% |"
            )
        return "\n".join(lines)

    def summary(self) -> str:
        """Median |error| and pair order per (collective, P), per (size, P) and per P."""
        lines = [
            "| cases | P | median abs error (min) | median abs error (median) | "
            "pairs ordered as measured (min) | (median) |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]

        def line(label: str, P: str, cs: list[Case]) -> str:
            p1, p2 = self.pairs("min", cs), self.pairs("median", cs)
            return (
                f"| {label} | {P} | {100 * self.median_abs_error('min', cs):.0f}% | "
                f"{100 * self.median_abs_error('median', cs):.0f}% | "
                f"{_pairs(p1)} | {_pairs(p2)} |"
            )

        ok = self.ok()
        for (coll, P), cs in itertools.groupby(
            sorted(ok, key=lambda c: (c.P, c.collective)), key=lambda c: (c.collective, c.P)
        ):
            lines.append(line(coll, str(P), list(cs)))
        for (nbytes, P), cs in itertools.groupby(
            sorted(ok, key=lambda c: (c.P, c.bytes)), key=lambda c: (c.bytes, c.P)
        ):
            lines.append(line(f"{nbytes} B", str(P), list(cs)))
        for P in sorted({c.P for c in ok}):
            lines.append(line("**all**", str(P), [c for c in ok if c.P == P]))
        return "\n".join(lines)

    def breakdown(self, stat: str = "min", worst: int = 12) -> str:
        """Where the error comes from (markdown): per algorithm its median |error| over the
        sizes and its worst size, per (regime, size) the median signed error (a model term
        missing shows as one sign), and the `worst` cases."""
        ok = self.ok()
        err = {id(c): getattr(c, f"error_{stat}") for c in ok}
        lines = [
            f"| algorithm | P | median abs error ({stat}) | worst size | its error |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for (name, P), cs in itertools.groupby(
            sorted(ok, key=lambda c: (c.P, c.algorithm)), key=lambda c: (c.algorithm, c.P)
        ):
            mine = list(cs)
            w = max(mine, key=lambda c: abs(err[id(c)]))
            lines.append(
                f"| {name} | {P} | {100 * self.median_abs_error(stat, mine):.0f}% | "
                f"{_size(w.bytes)} | {100 * err[id(w)]:+.0f}% |"
            )
        lines += [
            "",
            f"| regime | bytes | cases | median signed error ({stat}) | within 10 % |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for (regime, nbytes), cs in itertools.groupby(
            sorted(ok, key=lambda c: (c.regime, c.bytes)), key=lambda c: (c.regime, c.bytes)
        ):
            es = [err[id(c)] for c in cs]
            within = sum(abs(e) <= 0.1 for e in es)
            lines.append(
                f"| {regime} | {_size(nbytes)} | {len(es)} | {100 * float(np.median(es)):+.0f}% "
                f"| {within}/{len(es)} |"
            )
        lines += [
            "",
            f"| worst cases ({stat}) | P | bytes | regime | predicted | measured | error |",
            "| --- | ---: | ---: | --- | ---: | ---: | ---: |",
        ]
        for c in sorted(ok, key=lambda c: -abs(err[id(c)]))[:worst]:
            lines.append(
                f"| {c.algorithm} | {c.P} | {_size(c.bytes)} | {c.regime} | "
                f"{getattr(c, f'predicted_{stat}'):.2f} | {getattr(c, f'measured_{stat}'):.2f} "
                f"| {100 * err[id(c)]:+.0f}% |"
            )
        return "\n".join(lines)


def _spread(v: Validation, stat: str) -> str:
    x = v.same_schedule_spread(stat)
    return "n/a (no such pairs)" if math.isnan(x) else f"{100 * x:.1f}%"


def _pairs(p: PairCount) -> str:
    same = f", {p.same} same schedule" if p.same else ""
    return f"{p.good}/{p.total} ({_pct(p.good, p.total)}; {p.ties} ties{same})"


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}%" if b else "n/a"


def registry_algorithms(collective: str, P: int) -> list[str]:
    """Every registered algorithm of `collective` at its defaults that runs on P ranks without a
    placement (node-aware ones need nodes this check does not have)."""
    out = []
    for spec in algorithms(collective):
        r = spec["restrictions"]
        if r["min_P"] > P or 0 < r["max_P"] < P or (r["power_of_two"] and P & (P - 1)):
            continue
        algo = Algorithm(str(spec["name"]))
        if algo.needs_placement:
            continue
        try:
            algo.generate_rank(P, 0, 1, 8, 0)
        except CollkitError:
            continue
        out.append(str(algo.canonical))
    return out


def predict(
    profile: Profile,
    model: str,
    algorithm: str,
    P: int,
    nbytes: int,
    collective: str,
    *,
    executor: bool = True,
    sync: str = "barrier",
    transport: str = "",
    raw_median: bool = False,
) -> tuple[float, float, str]:
    """(from minima, from medians, regime) predicted times of one call in µs: the simulated
    makespan, plus with `executor` (and a profile that has them) the executor's per-call cost
    and its fitted parameters (collkit.calibrate_executor); a measurement whose iterations
    start after an MPI_Barrier (`sync`) is predicted with the barrier's fitted exit skew.
    `transport`: how the measured run moved its messages ("shm": collkit's shared-memory
    slots up to the profile's shm_bytes; "p2p ...": MPI alone; "": as the profile was
    measured); the executor's fits are used only when calibrated with the same transport.
    The regime is the kernel's of the largest message (Profile.regime). A median simulated
    below the minimum (a timing anomaly, below) is predicted as the minimum; `raw_median`
    returns it as simulated (to test the fits' order)."""
    dt = datatype_of(collective)
    elem = DATATYPE_BYTES[dt]
    count = nbytes // elem
    big = largest_message(algorithm, P, count, elem)
    executor = executor and executor_matches(profile, transport)
    regime = profile.regime(big, transport=_kernel_transport(transport))
    out = []
    for stat in ("min", "median"):
        kw = dict(stat=stat, message_bytes=big, executor=executor, slots=True)
        m = profile.model(
            model, datatype=dt, op="sum", transport=_kernel_transport(transport), **kw
        )
        sched = Algorithm(algorithm).generate(P, count=count, elem_size=elem)
        skew = profile.barrier_skew_ns(model, **kw) if sync == "barrier" else 0.0  # type: ignore[arg-type]
        copy = profile.executor_term("slot_copy", model, **kw)  # type: ignore[arg-type]
        t = elapsed(sched, m, skew, copy) + profile.call_ns(model, **kw)  # type: ignore[arg-type]
        out.append(t / 1e3)
    # The medians' parameters are each at or above the minima's, but the simulation is a list
    # schedule and not monotone in them: a later arrival can let a rank send before it
    # receives instead of after (a timing anomaly: Graham, "Bounds on Multiprocessing Timing
    # Anomalies", 1969; at P = 2 rd with L 17 ns against 30 ns, 104 ns slower). A median below
    # the minimum is then the schedule's anomaly, never the machine's: predicted as the minimum.
    return out[0], out[1] if raw_median else max(out[0], out[1]), regime


def _kernel_transport(transport: str) -> str:
    return "p2p" if transport.startswith("p2p") else "shm" if transport == "shm" else ""


def executor_matches(profile: Profile, transport: str) -> bool:
    """Whether the profile's executor fits were measured through `transport` (a run's rows'
    "shm" / "p2p (why)"; '' matches anything, as do profiles that did not record it)."""
    if not profile.executor or not transport:
        return bool(profile.executor)
    cal = str(next(iter(profile.executor.values())).get("measured_transport", ""))
    return not cal or _kernel_transport(cal) == _kernel_transport(transport)


def validate(
    profile: Profile,
    mpi: MPI,
    *,
    collectives: Sequence[str],
    P: Sequence[int],
    sizes: Sequence[int],
    model: str = "loggops",
    algos: dict[str, list[str]] | None = None,
    rounds: int = 3,
    iterations: int = 20,
    hosts: str | None = None,
    progress: Callable[[str], None] | None = None,
    executor: bool = True,
    sync: str = "barrier",
) -> Validation:
    """Predict and measure every case (see the module's docstring); `executor`: with the
    profile's executor fits when it has them (Profile.params)."""
    from collkit.bench import machine_name
    from collkit.mpi import allocation

    if rounds < 1 or iterations < 1:
        raise InvalidArgumentError("rounds and iterations must be >= 1")
    load0 = machine_load()
    cases: list[Case] = []
    for coll, p in itertools.product(collectives, P):
        names = (algos or {}).get(coll) or registry_algorithms(coll, p)
        if not names:
            continue
        szs = element_sizes(coll, sizes)
        transports: dict[tuple[str, int], str] = {}
        measured = measure(
            mpi,
            coll,
            p,
            names,
            szs,
            rounds=rounds,
            iterations=iterations,
            hosts=hosts,
            progress=progress,
            sync=sync,
            transports=transports,
        )
        for name, s in itertools.product(names, szs):
            c = Case(coll, name, p, s, transport=transports.get((name, s), ""))
            try:
                c.predicted_min, c.predicted_median, c.regime = predict(
                    profile,
                    model,
                    name,
                    p,
                    s,
                    coll,
                    executor=executor,
                    sync=sync,
                    transport=c.transport,
                )
            except CollkitError as e:
                c.error = f"simulation: {e}"
            xs = measured.get((name, s), [])
            if xs:
                c.measured_min, c.measured_median = float(np.min(xs)), float(np.median(xs))
                c.samples = len(xs)
            elif not c.error:
                c.error = "no samples"
            cases.append(c)
    return Validation(
        cases=cases,
        model=model,
        profile=profile,
        mpi=mpi.version,
        machine=machine_name(),
        date=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        load=f"{load0} before, {machine_load()} after",
        allocation={p: allocation(p, hosts) for p in P},
        executor=executor and bool(profile.executor),
        sync=sync,
    )


def validate_rows(
    profile: Profile,
    rows: Sequence[Row],
    *,
    model: str = "loggops",
    source: str = "",
    executor: bool = True,
) -> Validation:
    """The measured rows of an earlier validation (or any measured rows of collkit's
    algorithms) predicted again, with this profile and model: another model or fit compared on
    one measurement, without measuring again."""
    measured = [r for r in rows if r.source == "measured" and ":" in r.algorithm and not r.error]
    if not measured:
        raise InvalidArgumentError("no measured rows of collkit's algorithms to predict")
    cases = []
    for r in measured:
        c = Case(r.collective, r.algorithm, r.P, r.bytes, transport=r.transport)
        c.measured_min, c.measured_median, c.samples = r.min_us, r.median_us, r.iterations
        try:
            sync = "window" if "sync=window" in (r.settings or "") else "barrier"
            c.predicted_min, c.predicted_median, c.regime = predict(
                profile,
                model,
                r.algorithm,
                r.P,
                r.bytes,
                r.collective,
                executor=executor,
                sync=sync,
                transport=r.transport,
            )
        except CollkitError as e:
            c.error = f"simulation: {e}"
        cases.append(c)
    first = measured[0]
    return Validation(
        cases=cases,
        model=model,
        profile=profile,
        mpi=first.mpi,
        machine=first.machine,
        date=first.date,
        load=f"as measured in {source}" if source else "",
        allocation={r.P: r.allocation for r in measured},
        executor=executor and bool(profile.executor),
    )


def repeatability(baseline: Sequence[Row], rows: Sequence[Row], *, source: str = "") -> Validation:
    """One measurement held against another of the same cases instead of a prediction: each
    case's "prediction" is the `baseline` run's measured minimum and median. Its median |error|
    and pair order are what the measurement itself reproduces on this machine at this load: no
    model can be shown closer than that."""
    base = {
        (r.collective, r.algorithm, r.P, r.bytes): r
        for r in baseline
        if r.source == "measured" and not r.error
    }
    measured = [r for r in rows if r.source == "measured" and not r.error]
    cases = []
    for r in measured:
        b = base.get((r.collective, r.algorithm, r.P, r.bytes))
        if b is None:
            continue
        c = Case(r.collective, r.algorithm, r.P, r.bytes, transport=r.transport)
        c.measured_min, c.measured_median, c.samples = r.min_us, r.median_us, r.iterations
        c.predicted_min, c.predicted_median, c.regime = b.min_us, b.median_us, "measured"
        cases.append(c)
    if not cases:
        raise InvalidArgumentError("the two row files share no measured case")
    first = measured[0]
    return Validation(
        cases=cases,
        model="an earlier measurement",
        profile=Profile(name=source or "baseline", machine="", mpi="", date="", pair=""),
        mpi=first.mpi,
        machine=first.machine,
        date=first.date,
        load=f"as measured in {source}" if source else "",
        allocation={r.P: r.allocation for r in measured},
    )


def plot_validation(v: Validation, *, title: str = "") -> Figure:
    """Relative difference of the measured minimum and median to the prediction, by size, one
    line per algorithm (Fig. 12 of Ruefenacht, Bull, Booth 2017), one panel per (collective, P).
    Returns the Figure; the backend is left alone."""
    from matplotlib import colormaps

    from collkit.plotting import new_figure

    ok = v.ok()
    panels = sorted({(c.collective, c.P) for c in ok})
    if not panels:
        raise InvalidArgumentError("nothing to plot: no case was both predicted and measured")
    cols = min(len(panels), 3)
    nrows = -(-len(panels) // cols)
    fig = new_figure(figsize=(4.6 * cols, 3.4 * nrows))
    axes = fig.subplots(nrows, cols, squeeze=False)
    for ax, (coll, P) in zip(axes.flat, panels, strict=False):
        cs = [c for c in ok if c.collective == coll and c.P == P]
        for i, name in enumerate(sorted({c.algorithm for c in cs})):
            mine = sorted((c for c in cs if c.algorithm == name), key=lambda c: c.bytes)
            x = [c.bytes for c in mine]
            color = colormaps["tab10"](i % 10)
            label = name.split(":", 1)[1]
            for stat, style in (("min", "o-"), ("median", "s--")):
                y = [100 * getattr(c, f"error_{stat}") for c in mine]
                ax.plot(
                    x,
                    y,
                    style,
                    color=color,
                    ms=3,
                    lw=1 if stat == "min" else 0.8,
                    label=label if stat == "min" else None,
                )
        ax.axhline(0, color="black", lw=0.6)
        ax.set_xscale("log", base=2)
        # Linear within +-100 %, logarithmic beyond: a loaded machine's medians can be 10^4 %
        # off, and must not flatten the minima.
        ax.set_yscale("symlog", linthresh=100)
        ax.set_title(f"{coll}, P = {P}", fontsize=9)
        ax.set_xlabel("bytes", fontsize=8)
        ax.set_ylabel("(measured - predicted) / predicted, %", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6, title="o- min, s-- median", title_fontsize=6)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(
        title or f"measured vs {v.model} with profile '{v.profile.name}' ({v.mpi})", fontsize=9
    )
    fig.tight_layout()
    return fig


def plot_predicted_vs_measured(
    *validations: Validation, labels: Sequence[str] = (), stat: str = "min"
) -> Figure:
    """Predicted against measured time per case, log-log, one panel per validation (e.g. the
    kernel's parameters alone, then with the executor's costs): points on the diagonal are
    predicted exactly, the band is +-10 %; colour is the collective, marker the size. Each
    panel's title gives the median |error| and the pairs ordered as measured. Returns the
    Figure; the backend is left alone."""
    from matplotlib import colormaps
    from matplotlib.lines import Line2D

    from collkit.plotting import new_figure

    if not validations:
        raise InvalidArgumentError("nothing to plot: no validation given")
    if labels and len(labels) != len(validations):
        raise InvalidArgumentError("one label per validation")
    oks = [v.ok() for v in validations]
    if not any(oks):
        raise InvalidArgumentError("nothing to plot: no case was both predicted and measured")
    colls = sorted({c.collective for ok in oks for c in ok})
    sizes = sorted({c.bytes for ok in oks for c in ok})
    markers = "os^Dv<>ph*"
    fig = new_figure(figsize=(4.8 * len(validations), 4.8))
    axes = fig.subplots(1, len(validations), squeeze=False)[0]
    xs_all = [
        getattr(c, f"{k}_{stat}") for ok in oks for c in ok for k in ("measured", "predicted")
    ]
    lo, hi = min(xs_all) / 1.5, max(xs_all) * 1.5
    for i, (ax, v, ok) in enumerate(zip(axes, validations, oks, strict=True)):
        ax.fill_between([lo, hi], [lo / 1.1, hi / 1.1], [lo * 1.1, hi * 1.1], color="0.85")
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.7)
        for c in ok:
            ax.plot(
                getattr(c, f"measured_{stat}"),
                getattr(c, f"predicted_{stat}"),
                markers[sizes.index(c.bytes) % len(markers)],
                color=colormaps["tab10"](colls.index(c.collective) % 10),
                ms=4,
                alpha=0.8,
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_aspect("equal")
        ax.grid(True, which="both", alpha=0.25)
        ax.set_xlabel(f"measured {stat}, µs", fontsize=8)
        ax.set_ylabel(f"predicted ({stat} fits), µs", fontsize=8)
        ax.tick_params(labelsize=7)
        good, total, *_ = v.pairs(stat)
        label = labels[i] if labels else f"{v.model}{' + executor' if v.executor else ''}"
        ax.set_title(
            f"{label}\nmedian |error| {100 * v.median_abs_error(stat):.0f} %, "
            f"pairs ordered {good}/{total} ({_pct(good, total)})",
            fontsize=9,
        )
    handles = [
        Line2D([], [], ls="", marker="o", color=colormaps["tab10"](k % 10), label=c)
        for k, c in enumerate(colls)
    ] + [
        Line2D([], [], ls="", marker=markers[k % len(markers)], color="0.3", label=_size(s))
        for k, s in enumerate(sizes)
    ]
    axes[-1].legend(
        handles=handles, fontsize=7, loc="upper left", title="grey band: +-10 %", title_fontsize=7
    )
    v0 = validations[0]
    fig.suptitle(f"predicted vs measured: {v0.mpi}, {v0.machine}", fontsize=9)
    fig.tight_layout()
    return fig


def _size(n: int) -> str:
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k} {unit}"
    return f"{n} B"


def results_markdown(v: Validation, command: str) -> str:
    """The result file's text: what, where, when, under which load, the command, the tables."""
    head = [
        f"# collkit validate: {v.model}{' + executor' if v.executor else ''} with profile "
        f"'{v.profile.name}' against {v.mpi}",
        "",
        f"- machine: {v.machine}",
        f"- date: {v.date}",
        f"- load (1/5/15 min): {v.load}",
        f"- iterations started: {v.sync or 'as in the rows'}"
        + (
            " (each after an MPI_Barrier)"
            if v.sync == "barrier"
            else " (at one instant on aligned clocks; late starts dropped)"
            if v.sync == "window"
            else ""
        ),
        "- allocation: " + "; ".join(f"P={p}: {a}" for p, a in sorted(v.allocation.items())),
        "- transport (the bench rows'): "
        + (", ".join(sorted({c.transport for c in v.cases if c.transport})) or "not recorded"),
        f"- profile: {v.profile.name}, {v.profile.mpi}, {v.profile.pair}, {v.profile.date}, "
        f"load {v.profile.load}; S = {v.profile.threshold_bytes:g} B"
        + (
            f"; shared-memory slots up to {v.profile.shm_bytes:g} B"
            if v.profile.shm_bytes > 0
            else ""
        )
        + (
            "; executor calibrated through "
            + str(next(iter(v.profile.executor.values())).get("measured_transport") or "?")
            if v.profile.executor
            else ""
        ),
        f"- command: `{command}`",
        "- error = (measured - predicted) / predicted; a pair is ordered as measured when the "
        f"prediction puts the faster algorithm first; pairs measured within {100 * TIE:.0f}% of "
        "each other are ties and not counted, nor are two names of one schedule (same schedule: "
        "at this P and size the two algorithms generate the same ops)",
        f"- the measurement's own noise: two names of one schedule, measured in this run, differ "
        f"by {_spread(v, 'min')} (min) and {_spread(v, 'median')} (median), the median over such "
        "pairs",
        "",
        "## Summary",
        "",
        v.summary(),
        "",
        "## Where the error is (minima)",
        "",
        v.breakdown("min"),
        "",
        "## Cases (µs)",
        "",
        v.table(),
        "",
    ]
    return "\n".join(head)
