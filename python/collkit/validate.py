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
import itertools
import json
import math
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from collkit.algorithms import Algorithm, algorithms
from collkit.collectives import REDUCTIONS
from collkit.errors import CollkitError, InvalidArgumentError, UnsupportedError
from collkit.profile import Profile
from collkit.results import Row

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from collkit.mpi import MPI

__all__ = [
    "Case",
    "Validation",
    "plot_validation",
    "registry_algorithms",
    "validate",
    "validate_rows",
]

DATATYPE_BYTES = {"double": 8, "char": 1}
# Two measured times closer than this (relative) are a tie: no order to get right or wrong.
TIE = 0.05


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

    def ok(self) -> list[Case]:
        return [c for c in self.cases if not c.error and c.measured_min > 0]

    def median_abs_error(self, stat: str = "min", cases: Sequence[Case] | None = None) -> float:
        errs = [abs(getattr(c, f"error_{stat}")) for c in (cases or self.ok())]
        return float(np.median(errs)) if errs else math.nan

    def pairs(self, stat: str = "min", cases: Sequence[Case] | None = None) -> tuple[int, int, int]:
        """(ordered as measured, distinguishable pairs, ties): over every pair of algorithms of
        one (collective, P, size); a pair whose measured times are within TIE of each other is a
        tie (counted apart: no order to get right); a prediction that ties a distinguishable
        pair orders it wrongly."""
        groups: dict[tuple[str, int, int], list[Case]] = {}
        for c in cases or self.ok():
            groups.setdefault((c.collective, c.P, c.bytes), []).append(c)
        good = total = ties = 0
        for cs in groups.values():
            for a, b in itertools.combinations(cs, 2):
                ma, mb = getattr(a, f"measured_{stat}"), getattr(b, f"measured_{stat}")
                pa, pb = getattr(a, f"predicted_{stat}"), getattr(b, f"predicted_{stat}")
                if abs(ma - mb) <= TIE * min(ma, mb):
                    ties += 1
                    continue
                total += 1
                good += (ma < mb) == (pa < pb) and pa != pb
        return good, total, ties

    def rows(self) -> list[Row]:
        """Measured and simulated rows of THE results schema, side by side."""
        out: list[Row] = []
        for c in self.cases:
            dt = "double" if c.collective in REDUCTIONS else "char"
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
            m = Row(**base, source="measured", mpi=self.mpi, iterations=c.samples)  # type: ignore[arg-type]
            m.min_us, m.median_us = c.measured_min, c.measured_median
            if c.error:
                m.error = c.error
            s = Row(
                **base,  # type: ignore[arg-type]
                source="simulated",
                mpi=f"simulated: {self.model}, profile {self.profile.name} ({self.profile.mpi})",
                settings=f"regime={c.regime}",
                iterations=1,
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
        """Median |error| and pair order, overall and per (collective, P)."""
        lines = [
            "| cases | P | median abs error (min) | median abs error (median) | "
            "pairs ordered as measured (min) | (median) |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]

        def line(label: str, P: str, cs: list[Case]) -> str:
            g1, t1, z1 = self.pairs("min", cs)
            g2, t2, z2 = self.pairs("median", cs)
            return (
                f"| {label} | {P} | {100 * self.median_abs_error('min', cs):.0f}% | "
                f"{100 * self.median_abs_error('median', cs):.0f}% | "
                f"{g1}/{t1} ({_pct(g1, t1)}; {z1} ties) | {g2}/{t2} ({_pct(g2, t2)}; {z2} ties) |"
            )

        ok = self.ok()
        for (coll, P), cs in itertools.groupby(
            sorted(ok, key=lambda c: (c.P, c.collective)), key=lambda c: (c.collective, c.P)
        ):
            lines.append(line(coll, str(P), list(cs)))
        for P in sorted({c.P for c in ok}):
            lines.append(line("**all**", str(P), [c for c in ok if c.P == P]))
        return "\n".join(lines)


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}%" if b else "n/a"


def registry_algorithms(collective: str, P: int) -> list[str]:
    """Every registered algorithm of `collective` at its defaults that runs on P ranks without a
    placement (node-aware ones need nodes this check does not have)."""
    out = []
    for spec in algorithms(collective):
        r = spec["restrictions"]
        if r["min_P"] > P or (r["power_of_two"] and P & (P - 1)):
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


def largest_message(algorithm: str, P: int, count: int, elem: int) -> int:
    """Bytes of the largest message any rank sends (it picks the profile's regime)."""
    algo = Algorithm(algorithm)
    biggest = 0
    for r in range(P):
        a = algo.generate_rank(P, r, count, elem, 0).arrays()
        sends = a["len"][a["kind"] == 0]
        if len(sends):
            biggest = max(biggest, int(sends.max()) * elem)
    return biggest


def predict(
    profile: Profile, model: str, algorithm: str, P: int, nbytes: int, collective: str
) -> tuple[float, float, str]:
    """(from minima, from medians, regime) predicted makespans in µs."""
    from collkit.simulate import simulate

    dt = "double" if collective in REDUCTIONS else "char"
    elem = DATATYPE_BYTES[dt]
    count = nbytes // elem
    big = largest_message(algorithm, P, count, elem)
    regime = "rendezvous" if big > profile.threshold_bytes else "eager"
    out = []
    for stat in ("min", "median"):
        m = profile.model(model, stat=stat, datatype=dt, op="sum", message_bytes=big)
        r = simulate(algorithm, P, count=count, elem_size=elem, model=m)
        out.append(r.makespan / 1e3)
    return out[0], out[1], regime


def measure(
    mpi: MPI,
    collective: str,
    P: int,
    algos: Sequence[str],
    sizes: Sequence[int],
    *,
    rounds: int,
    iterations: int,
    warmup: int = 5,
    hosts: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[tuple[str, int], list[float]]:
    """Per (algorithm, bytes) the per-iteration times (µs, maximum over ranks) of all rounds:
    each round one run of the bench driver with every algorithm, size by size interleaved, the
    algorithm order rotated from round to round."""
    from collkit.mpi import build, launch_command, launch_env

    bindir = build(mpi, ["collkit_bench"])
    env, _ = launch_env(mpi, P, hosts=hosts)
    dt = "double" if collective in REDUCTIONS else "char"
    samples: dict[tuple[str, int], list[float]] = {}
    for rnd in range(rounds):
        k = rnd % len(algos)
        order = list(algos[k:]) + list(algos[:k])
        if progress:
            progress(f"{collective} P={P}: round {rnd + 1}/{rounds}")
        args = [
            str(bindir / "collkit_bench"),
            "--collective",
            collective,
            "--algos",
            ",".join(order),
            "--sizes",
            ",".join(map(str, sizes)),
            "--datatype",
            dt,
            "--iters",
            str(iterations),
            "--warmup",
            str(warmup),
            "--max-ms",
            "1000",
            "--interleave",
            "--raw",
        ]
        if rnd == 0:
            args.append("--validate")
        cmd = launch_command(mpi, P, args, hosts=hosts)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise UnsupportedError(
                f"collkit_bench failed (exit {r.returncode}):\n{(r.stdout + r.stderr)[-2000:]}"
            )
        for ln in r.stdout.splitlines():
            if not ln.startswith("{"):
                continue
            d = json.loads(ln)
            if d.get("kind") != "row":
                continue
            if "error" in d or d.get("valid") is False:
                why = d.get("error") or "result differs from the MPI's own collective"
                raise UnsupportedError(f"{d['algorithm']} at {d['bytes']} B: {why}")
            samples.setdefault((str(d["algorithm"]), int(d["bytes"])), []).extend(
                float(x) for x in d.get("samples", [])
            )
    return samples


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
) -> Validation:
    """Predict and measure every case (see the module's docstring)."""
    from collkit.bench import machine_name
    from collkit.mpi import allocation
    from collkit.profile import machine_load

    if rounds < 1 or iterations < 1:
        raise InvalidArgumentError("rounds and iterations must be >= 1")
    load0 = machine_load()
    cases: list[Case] = []
    for coll, p in itertools.product(collectives, P):
        names = (algos or {}).get(coll) or registry_algorithms(coll, p)
        if not names:
            continue
        dt = "double" if coll in REDUCTIONS else "char"
        elem = DATATYPE_BYTES[dt]
        szs = sorted({max(elem, s - s % elem) for s in sizes})
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
        )
        for name, s in itertools.product(names, szs):
            c = Case(coll, name, p, s)
            try:
                c.predicted_min, c.predicted_median, c.regime = predict(
                    profile, model, name, p, s, coll
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
    )


def validate_rows(
    profile: Profile, rows: Sequence[Row], *, model: str = "loggops", source: str = ""
) -> Validation:
    """The measured rows of an earlier validation (or any measured rows of collkit's
    algorithms) predicted again, with this profile and model: another model or fit compared on
    one measurement, without measuring again."""
    measured = [r for r in rows if r.source == "measured" and ":" in r.algorithm and not r.error]
    if not measured:
        raise InvalidArgumentError("no measured rows of collkit's algorithms to predict")
    cases = []
    for r in measured:
        c = Case(r.collective, r.algorithm, r.P, r.bytes)
        c.measured_min, c.measured_median, c.samples = r.min_us, r.median_us, r.iterations
        try:
            c.predicted_min, c.predicted_median, c.regime = predict(
                profile, model, r.algorithm, r.P, r.bytes, r.collective
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


def results_markdown(v: Validation, command: str) -> str:
    """The result file's text: what, where, when, under which load, the command, the tables."""
    head = [
        f"# collkit validate: {v.model} with profile '{v.profile.name}' against {v.mpi}",
        "",
        f"- machine: {v.machine}",
        f"- date: {v.date}",
        f"- load (1/5/15 min): {v.load}",
        "- allocation: " + "; ".join(f"P={p}: {a}" for p, a in sorted(v.allocation.items())),
        f"- profile: {v.profile.name}, {v.profile.mpi}, {v.profile.pair}, {v.profile.date}, "
        f"load {v.profile.load}; S = {v.profile.threshold_bytes:g} B",
        f"- command: `{command}`",
        "- error = (measured - predicted) / predicted; a pair is ordered as measured when the "
        f"prediction puts the faster algorithm first; pairs measured within {100 * TIE:.0f}% of "
        "each other are ties and not counted",
        "",
        "## Summary",
        "",
        v.summary(),
        "",
        "## Cases (µs)",
        "",
        v.table(),
        "",
    ]
    return "\n".join(head)
