"""Machine profiles: the simulator's model parameters measured on the MPI in use.

`collkit calibrate` runs the measurement kernel (mpi/src/calibrate.cpp) between two ranks and
fits, from its minima and its medians:

- **LogGP / LogGOPS** after Hoefler, Lichei and Rehm, "Low-Overhead LogGP Parameter Assessment
  for Modern Interconnection Networks" (IPDPS 2007), Netgauge's method: the send overhead
  ``o_s + (s-1) O`` is the time MPI_Send blocks, the receive overhead ``o_r`` the time MPI_Recv
  takes for a message already there, the gap ``g + (s-1) G`` is
  ``(PRTT(n,0,s) - PRTT(1,0,s)) / (n-1)``, and ``L`` what is left of the one-way time
  ``PRTT(1,0,s) / 2`` after both overheads.
- **postal** ``alpha + s beta``: the one-way time fitted over the sizes;
- **pipelined postal** ``alpha_p, alpha_r``: the multicast benchmark (`collkit bench multicast`,
  Ruefenacht, Bull, Booth 2017, §5.1), ``beta`` as in postal;
- **gamma** and ``reduce_base`` per datatype and op from collkit's own local reductions,
  ``copy_beta`` from memcpy; a prediction takes gamma and copy_beta at the size of its largest
  message (the slope between the two measured sizes around it, Profile.local_slope): buffers
  that outgrow the caches cost more a byte, which one line over all sizes does not say;
- the **transport threshold** ``S``: the largest size whose MPI_Send returns while the receiver
  is still away (eager); above it the send waits for the receiver (rendezvous). The parameters
  are fitted on each side of it separately: one line through both would fit neither.
- **collkit's shared-memory transport** (mpi/src/shm.cpp, the executor's path between ranks of
  one node for messages up to its slot size): the same four kernels through its slots give the
  LogGOPS / postal parameters of the regime ``shm`` (messages up to ``shm_bytes``, the slot
  size the transport reports); a profile of an intra-node pair predicts such messages with them.

Each line is fitted by least squares on relative residuals (sizes span six decades: an absolute
fit would let the largest size decide the intercept). Times are ns, per-byte costs ns/B.

>>> p = load_profile("this-machine.json")  # doctest: +SKIP
>>> collkit.simulate("allreduce:rd", P=2, bytes=8, model="loggops", **p.params("loggops"))
... # doctest: +SKIP
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import math
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from collkit.calibrate_executor import (
    CALIBRATION_SIZES,
    EXECUTOR_REGIMES,
    fit_executor,
    measure_executor,
)
from collkit.errors import InvalidArgumentError, UnsupportedError
from collkit.sim.options import MODELS as _SIM_PARAMS
from collkit.strictjson import unique_keys

__all__ = [
    "FORMAT",
    "VERSION",
    "Line",
    "Profile",
    "calibrate",
    "fit_profile",
    "load_profile",
    "machine_load",
    "refit",
]

FORMAT = "collkit-profile"
VERSION = 3
# Terms of an executor fit that are not simulator parameters (Profile.call_ns, barrier_skew_ns).
EXECUTOR_TERMS = ("call", "barrier_skew", "slot_copy")  # not Model parameters
# 2 added the optional `executor` section (collkit.calibrate_executor); 3 the shared-memory
# transport's own fits (models[stat]["shm"], shm_bytes).
READ_VERSIONS = (1, 2, 3)
REGIMES = ("eager", "rendezvous", "shm")
STATS = ("min", "median")
# The simulator's models, as the core registers them (one file each, core/src/sim/models/): a
# profile holds, per regime, the value of each parameter it fits, and every model whose
# parameters are all among them.
SIM_MODELS: tuple[str, ...] = tuple(_SIM_PARAMS)
DATATYPES = ("double", "float", "int", "char")
OPS = ("sum", "prod", "max", "min")
DEFAULT_SIZES = (1, 8, 64, 512, 4096, 16384, 65536, 262144, 1048576)
DEFAULT_REDUCE_SIZES = (1024, 16384, 131072, 1048576)
US = 1e3  # ns per µs: the kernel prints µs


@dataclass(frozen=True)
class Line:
    """A fitted ``y = a + b x`` (x in bytes, y in ns) and how well it fits."""

    a: float  # ns
    b: float  # ns per byte
    rms_rel_residual: float  # root mean square of (y - fit) / y over the points
    max_rel_residual: float  # largest |y - fit| / y over the points
    points: int

    def at(self, x: float) -> float:
        return self.a + self.b * x


def _models_of(values: Mapping[str, float]) -> dict[str, dict[str, float]]:
    """Every registered model whose parameters all have a value in `values`, with them."""
    return {
        m: {k: values[k] for k in ps} for m, ps in _SIM_PARAMS.items() if set(ps) <= set(values)
    }


def _one_value_each(models: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """The value of each parameter the models give: a parameter (one name, one meaning in the
    registry) has one fit, so two models that give it differently are an error."""
    out: dict[str, float] = {}
    first: dict[str, str] = {}
    for m, ps in models.items():
        for k, v in ps.items():
            same = k not in out or out[k] == v or (math.isnan(out[k]) and math.isnan(v))
            if not same:
                raise InvalidArgumentError(
                    f"{m} gives {k}={v:g} unlike {first[k]} ({k}={out[k]:g})"
                )
            out.setdefault(k, v)
            first.setdefault(k, m)
    return out


def fit_line(x: Sequence[float], y: Sequence[float]) -> Line:
    """Least squares on relative residuals, ``a`` and ``b`` kept >= 0 (a negative latency or
    per-byte cost is noise, not a parameter). One point gives b = 0."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(xs) == 0:
        raise InvalidArgumentError("nothing to fit: no sizes in this regime")
    ys = np.maximum(ys, 1e-3)
    if len(xs) == 1 or np.ptp(xs) == 0:
        a, b = float(np.mean(ys)), 0.0
    else:
        from scipy.optimize import lsq_linear  # type: ignore[import-untyped]

        A = np.stack([np.ones_like(xs), xs], axis=1) / ys[:, None]
        sol = lsq_linear(A, np.ones_like(ys), bounds=([0.0, 0.0], [np.inf, np.inf]))
        a, b = float(sol.x[0]), float(sol.x[1])
    rel = (ys - (a + b * xs)) / ys
    return Line(a, b, float(np.sqrt(np.mean(rel**2))), float(np.max(np.abs(rel))), len(xs))


@dataclass
class Profile:
    """A named machine profile (see the module's docstring). `models[stat][regime][model]` holds
    the parameters of each simulator model (ns, ns/B; S in bytes) fitted from the minima or the
    medians, for MPI's eager messages and rendezvous ones and for messages through collkit's
    shared-memory slots ("shm", up to shm_bytes); `local[stat]` the local costs."""

    name: str
    machine: str
    mpi: str
    date: str
    pair: str  # "intra-node" or "inter-node (...)"
    load: str = ""  # the machine's load average while it was measured
    command: str = ""
    threshold_bytes: float = math.inf  # S: largest eager size measured (inf: no rendezvous seen)
    # The largest message through collkit's shared-memory slots between the pair (0: the
    # transport was off or the ranks on two nodes); models[stat]["shm"] holds its fits.
    shm_bytes: float = 0.0
    models: dict[str, dict[str, dict[str, dict[str, float]]]] = field(default_factory=dict)
    local: dict[str, dict[str, Any]] = field(default_factory=dict)
    fits: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    measurements: list[dict[str, Any]] = field(default_factory=list)
    # collkit's executor calibrated (collkit.calibrate_executor): per statistic its regime
    # threshold and per regime and model the fitted parameters and the per-call cost "call".
    executor: dict[str, Any] = field(default_factory=dict)
    format: str = FORMAT
    version: int = VERSION

    def params(
        self,
        model: str,
        *,
        stat: str = "min",
        datatype: str = "double",
        op: str = "sum",
        message_bytes: float | None = None,
        executor: bool = True,
        slots: bool = False,
        transport: str = "",
    ) -> dict[str, float]:
        """Keyword parameters for `collkit.simulate(model=...)` / `Model.make`: the model's own
        (of the regime of `message_bytes`, see regime) and the local costs (gamma and
        reduce_base of `datatype` and `op`, copy_beta).

        With `executor` (the default) and a profile that has them, the parameters fitted to
        collkit's executor (collkit.calibrate_executor) replace the kernel's: the network
        parameters and reduce_base of the executor's regime of `message_bytes`; gamma and
        copy_beta stay the kernel's. The per-call cost is not a simulator parameter: see
        call_ns. With `slots`, messages through collkit's shared-memory slots take the fit
        whose per-byte costs are the slots' copies as ops of their own (their cost a byte:
        executor_term("slot_copy", ...); for a schedule built with
        collkit.calibrate_executor.SlotCopies), where the profile has one."""
        key = model.replace("_", "-").lower()
        if key not in SIM_MODELS:
            raise InvalidArgumentError(f"unknown model '{model}' (known: {', '.join(SIM_MODELS)})")
        if stat not in self.models:
            raise InvalidArgumentError(
                f"profile '{self.name}' has no '{stat}' fits (it has {', '.join(self.models)})"
            )
        regime = self.regime(message_bytes, stat=stat, transport=transport)
        if key not in self.models[stat][regime]:
            have = {k for ps in self.models[stat][regime].values() for k in ps}
            lacking = [k for k in _SIM_PARAMS[key] if k not in have]
            raise InvalidArgumentError(
                f"profile '{self.name}' has no fit of model {key}: it measured no "
                f"{', '.join(lacking)} ({stat}, {regime})"
            )
        out = dict(self.models[stat][regime][key])
        local = self.local[stat]
        gam = local["gamma"].get(datatype, {}).get(op)
        if gam is None:
            known = ", ".join(f"{d}/{o}" for d, ops in local["gamma"].items() for o in ops)
            raise InvalidArgumentError(
                f"profile '{self.name}' has no gamma for {datatype}/{op} (it has {known})"
            )
        out["reduce_base"] = float(gam["reduce_base"])
        # Per byte at this size: a reduction or copy of buffers that outgrow the caches costs
        # more a byte (here the kernel's sum of doubles: 0.04 ns/B at 128 KiB, 0.08 at 1 MiB).
        out["gamma"] = self._local_at("reduce", stat, message_bytes, datatype, op)
        out["copy_beta"] = self._local_at("copy", stat, message_bytes, datatype, op)
        ex = self._executor_fit(key, stat, message_bytes, slots) if executor else None
        if ex is not None:
            out.update({k: float(v) for k, v in ex.items() if k not in EXECUTOR_TERMS})
        return out

    def _local_at(
        self, kind: str, stat: str, nbytes: float | None, datatype: str, op: str
    ) -> float:
        """ns per byte of the local `kind` at `nbytes` for `stat`: the slope there, else the
        line over all sizes; for a statistic above the minimum never below the minimum's (two
        slopes of noisy medians can cross the minima's, and a lower per-byte cost would
        predict a median call faster than the fastest, as _order_fits keeps for the lines)."""

        def at(s: str) -> float:
            slope = self.local_slope(kind, s, nbytes, datatype=datatype, op=op)
            if slope is not None:
                return slope
            loc = self.local.get(s, {})
            if kind == "copy":
                return float(loc.get("copy_beta", 0.0))
            return float(loc.get("gamma", {}).get(datatype, {}).get(op, {}).get("gamma", 0.0))

        v = at(stat)
        return max(v, at("min")) if stat != "min" else v

    def local_slope(
        self,
        kind: str,
        stat: str,
        nbytes: float | None,
        *,
        datatype: str = "",
        op: str = "",
    ) -> float | None:
        """ns per byte of the kernel's local `kind` ("reduce" of `datatype` and `op`, or "copy")
        at `nbytes` (None: the smallest): the slope of the measured times between the two
        measured sizes around it (the last two above the largest). None without two measured
        sizes or when the slope is not positive (noise): the line fitted over all sizes then."""
        pts: dict[int, float] = {}
        for r in self.measurements:
            if r.get("kind") != kind:
                continue
            if kind == "reduce" and (r.get("datatype") != datatype or r.get("op") != op):
                continue
            try:
                b, t = int(r["bytes"]), float(r[stat])
            except (KeyError, TypeError, ValueError):
                continue
            if b > 0 and math.isfinite(t) and t >= 0:
                pts[b] = t
        xs = sorted(pts)
        if len(xs) < 2:
            return None
        n = xs[0] if nbytes is None else nbytes
        a, b = next(((x, y) for x, y in itertools.pairwise(xs) if n <= y), (xs[-2], xs[-1]))
        slope = (pts[b] - pts[a]) / (b - a) * US
        return slope if slope > 0 else None

    def regime(self, message_bytes: float | None, *, stat: str = "min", transport: str = "") -> str:
        """Which of the kernel's fits carry a message of `message_bytes` (None: a small one):
        "shm" up to shm_bytes when the transport is collkit's shared memory (`transport`
        "shm", or "" with a profile that measured it), else MPI's "eager" up to S and
        "rendezvous" above."""
        if transport not in ("", "shm") and not transport.startswith("p2p"):
            raise InvalidArgumentError(f"transport is 'shm' or 'p2p', got {transport!r}")
        fits = self.models.get(stat, {})
        if (
            transport in ("", "shm")
            and "shm" in fits
            and (message_bytes is None or message_bytes <= self.shm_bytes)
        ):
            return "shm"
        if (
            message_bytes is not None
            and message_bytes > self.threshold_bytes
            and "rendezvous" in fits
        ):
            return "rendezvous"
        return "eager"

    def _executor_fit(
        self, key: str, stat: str, message_bytes: float | None, slots: bool = False
    ) -> dict[str, float] | None:
        ex = self.executor.get(stat)
        if not ex:
            return None
        thr, large = ex["threshold_bytes"], ex.get("large_bytes") or math.inf
        regime = "eager"
        if message_bytes is not None and message_bytes > thr and "rendezvous" in ex["regimes"]:
            regime = "rendezvous"
        if message_bytes is not None and message_bytes >= large and "large" in ex["regimes"]:
            regime = "large"
        if regime == "eager" and slots and key in ex["regimes"].get("slots", {}):
            regime = "slots"
        fits = ex["regimes"].get(regime) or next(iter(ex["regimes"].values()))
        got = fits.get(key)
        return dict(got) if got is not None else None

    def call_ns(
        self,
        model: str,
        *,
        stat: str = "min",
        message_bytes: float | None = None,
        executor: bool = True,
        slots: bool = False,
    ) -> float:
        """The executor's cost of one collective call (ns) fitted with `model` (0 when the
        profile has no executor fits or `executor` is False): what to add to a simulated
        makespan to predict a measured call of collkit."""
        return self.executor_term(
            "call", model, stat=stat, message_bytes=message_bytes, executor=executor, slots=slots
        )

    def barrier_skew_ns(
        self,
        model: str,
        *,
        stat: str = "min",
        message_bytes: float | None = None,
        executor: bool = True,
        slots: bool = False,
    ) -> float:
        """How much later than rank 0 the other ranks leave the MPI_Barrier that starts each
        measured iteration (ns), fitted with the executor's costs (0 without them, or when
        the calibration started its iterations in windows): the measurement's, not the
        collective's (collkit.calibrate_executor.elapsed)."""
        return self.executor_term(
            "barrier_skew",
            model,
            stat=stat,
            message_bytes=message_bytes,
            executor=executor,
            slots=slots,
        )

    def executor_term(
        self,
        term: str,
        model: str,
        *,
        stat: str = "min",
        message_bytes: float | None = None,
        executor: bool = True,
        slots: bool = False,
    ) -> float:
        """The executor's fitted `term` (EXECUTOR_TERMS: "call", "barrier_skew", or
        "slot_copy", ns a byte each of the slots' copies, collkit.calibrate_executor.SlotCopies,
        in the slots' fit alone) of `model` for messages of `message_bytes`; 0 without it."""
        key = model.replace("_", "-").lower()
        ex = self._executor_fit(key, stat, message_bytes, slots) if executor else None
        return float(ex.get(term, 0.0)) if ex is not None else 0.0

    def model(self, model: str, **kw: Any) -> Any:
        """The simulator's Model for `model` with this profile's parameters (see params)."""
        from collkit.simulate import Model

        return Model.make(model, **self.params(model, **kw))

    def param_strings(self, model: str, **kw: Any) -> dict[str, str]:
        """params() as the strings the CLI's K=V options take ('1.5ns', '0.2ns/B', '4096')."""
        from collkit.simulate import PARAM_UNITS

        out = {}
        for k, v in self.params(model, **kw).items():
            unit = PARAM_UNITS.get(k, "ns")
            if k == "S":
                out[k] = "inf" if math.isinf(v) else str(int(v))
            else:
                out[k] = f"{v!r}{unit}"
        return out

    def to_json(self) -> str:
        d = asdict(self)
        d["threshold_bytes"] = None if math.isinf(self.threshold_bytes) else self.threshold_bytes
        for stat in d["models"].values():
            for regime in stat.values():
                for ps in regime.values():
                    if "S" in ps and math.isinf(ps["S"]):
                        ps["S"] = None
        for ex in d["executor"].values():
            for k in ("threshold_bytes", "large_bytes"):
                if math.isinf(ex.get(k, 0)):
                    ex[k] = None
            for fits in ex["regimes"].values():
                for m, ps in fits.items():
                    if m != "fit" and "S" in ps and math.isinf(ps["S"]):
                        ps["S"] = None
        return json.dumps(d, indent=1, allow_nan=False) + "\n"

    def save(self, path: str | os.PathLike[str]) -> Path:
        p = Path(path)
        p.write_text(self.to_json())
        return p

    def summary(self) -> str:
        """The fitted parameters, one model a line, for the terminal."""
        lines = [
            f"profile '{self.name}': {self.mpi}, {self.machine}, {self.pair}, {self.date}"
            + (f", load {self.load}" if self.load else ""),
            "transport threshold S (largest eager size): "
            + ("none seen" if math.isinf(self.threshold_bytes) else f"{self.threshold_bytes:g} B")
            + (
                f"; collkit's shared-memory slots up to {self.shm_bytes:g} B"
                if self.shm_bytes > 0
                else ""
            ),
        ]
        for stat, regimes in self.models.items():
            for regime, models in regimes.items():
                fq = self.fits.get(stat, {}).get(regime, {})
                quality = ", ".join(
                    f"{k} {100 * fq[k]['rms_rel_residual']:.0f}%"
                    for k in ("one_way", "gap", "o_s", "o_r")
                    if k in fq
                )
                lines.append(
                    f"{stat}, {regime}:"
                    + (f"  (fit rms relative residual: {quality})" if quality else "")
                )
                for m, ps in models.items():
                    lines.append(
                        f"  {m:17s} " + ", ".join(f"{k}={_fmt(k, v)}" for k, v in ps.items())
                    )
            loc = self.local[stat]
            g = loc["gamma"].get("double", {}).get("sum")
            if g:
                lines.append(
                    f"  local             gamma(double,sum)={g['gamma']:.4g}ns/B, "
                    f"reduce_base={g['reduce_base']:.4g}ns, copy_beta={loc['copy_beta']:.4g}ns/B"
                )
        for stat, ex in self.executor.items():
            thr, large = ex["threshold_bytes"], ex.get("large_bytes")
            lines.append(
                f"executor, {stat} ({ex['transport']}; sync {ex.get('sync') or '?'}; "
                "regimes split at "
                + ("inf" if math.isinf(thr) else f"{thr:g} B")
                + (f" and {large:g} B (large: {ex.get('large_why', '')})" if large else "")
                + f"; fitted to {', '.join(ex['algorithms'])}):"
            )
            for regime, fits in ex["regimes"].items():
                for m, ps in fits.items():
                    if m == "fit":
                        continue
                    q = fits.get("fit", {}).get(m, {})
                    lines.append(
                        f"  {regime:10s} {m:17s} "
                        + ", ".join(f"{k}={_fmt(k, v)}" for k, v in ps.items())
                        + (
                            f"  (rms relative residual {100 * q['rms_rel_residual']:.0f}%, "
                            f"kernel's parameters {100 * q['rms_rel_residual_before']:.0f}%)"
                            if q
                            else ""
                        )
                    )
        return "\n".join(lines)


def _fmt(k: str, v: float) -> str:
    if k == "S":
        return "inf" if math.isinf(v) else f"{v:g}B"
    if k in ("beta", "G", "O", "gamma", "copy_beta", "slot_copy"):
        return f"{v:.4g}ns/B"
    return f"{v:.4g}ns"


def _bad(msg: str) -> InvalidArgumentError:
    return InvalidArgumentError(msg)


def _num(v: Any, what: str, *, allow_none: bool = False) -> float:
    if v is None and allow_none:
        return math.inf
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise _bad(f"profile: {what} must be a number >= 0, got {v!r}")
    return float(v)


def profile_from_dict(d: Any, source: str = "profile") -> Profile:
    """A Profile from its JSON object; anything malformed is an InvalidArgumentError that says
    what and where."""
    from collkit.simulate import LOCAL_PARAMS, MODELS

    if not isinstance(d, dict):
        raise _bad(f"{source}: a profile is a JSON object")
    if d.get("format") != FORMAT:
        raise _bad(f"{source}: not a collkit profile (format is {d.get('format')!r})")
    if d.get("version") not in READ_VERSIONS:
        raise _bad(
            f"{source}: profile version {d.get('version')!r}; this collkit reads versions "
            + ", ".join(map(str, READ_VERSIONS))
        )
    known = {f for f in Profile.__dataclass_fields__}
    unknown = set(d) - known
    if unknown:
        raise _bad(f"{source}: unknown profile fields: {', '.join(sorted(unknown))}")
    for k in ("name", "machine", "mpi", "date", "pair"):
        if not isinstance(d.get(k), str):
            raise _bad(f"{source}: '{k}' must be a string")
    for k in ("load", "command"):
        if not isinstance(d.get(k, ""), str):
            raise _bad(f"{source}: '{k}' must be a string")
    models = d.get("models")
    if not isinstance(models, dict) or not models:
        raise _bad(f"{source}: 'models' must be an object of fits by statistic (min, median)")
    out_models: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for stat, regimes in models.items():
        if stat not in STATS:
            raise _bad(f"{source}: models.{stat}: the statistic must be one of {STATS}")
        if not isinstance(regimes, dict) or "eager" not in regimes:
            raise _bad(f"{source}: models.{stat} needs an 'eager' regime")
        out_models[stat] = {}
        for regime, ms in regimes.items():
            if regime not in REGIMES or not isinstance(ms, dict):
                raise _bad(
                    f"{source}: models.{stat}.{regime}: regime is one of {', '.join(REGIMES)}"
                )
            out_models[stat][regime] = {}
            for m, ps in ms.items():
                if m not in MODELS:
                    raise _bad(f"{source}: models.{stat}.{regime}: unknown model '{m}'")
                if not isinstance(ps, dict) or set(ps) != set(MODELS[m]):
                    raise _bad(
                        f"{source}: models.{stat}.{regime}.{m} must give exactly "
                        f"{', '.join(MODELS[m])}"
                    )
                out_models[stat][regime][m] = {
                    k: _num(v, f"models.{stat}.{regime}.{m}.{k}", allow_none=k == "S")
                    for k, v in ps.items()
                }
            try:
                pool = _one_value_each(out_models[stat][regime])
            except InvalidArgumentError as e:
                raise _bad(f"{source}: models.{stat}.{regime}: {e}") from None
            # A model registered after the profile was made takes its parameters' fits, where
            # the profile has them all.
            out_models[stat][regime] = _models_of(pool)
    local = d.get("local")
    if not isinstance(local, dict) or set(local) != set(out_models):
        raise _bad(f"{source}: 'local' must have the statistics of 'models' ({list(out_models)})")
    for stat, loc in local.items():
        if not isinstance(loc, dict) or not isinstance(loc.get("gamma"), dict):
            raise _bad(f"{source}: local.{stat} needs 'gamma' and 'copy_beta'")
        _num(loc.get("copy_beta"), f"local.{stat}.copy_beta")
        for dt, ops in loc["gamma"].items():
            if not isinstance(ops, dict):
                raise _bad(f"{source}: local.{stat}.gamma.{dt} must be an object of ops")
            for op, g in ops.items():
                if not isinstance(g, dict):
                    raise _bad(f"{source}: local.{stat}.gamma.{dt}.{op} must be an object")
                for k in ("gamma", "reduce_base"):
                    _num(g.get(k), f"local.{stat}.gamma.{dt}.{op}.{k}")
    assert set(LOCAL_PARAMS) == {"gamma", "reduce_base", "copy_beta"}
    for k in ("fits",):
        if not isinstance(d.get(k, {}), dict):
            raise _bad(f"{source}: '{k}' must be an object")
    if not isinstance(d.get("measurements", []), list):
        raise _bad(f"{source}: 'measurements' must be a list")
    executor = _executor_from_dict(d.get("executor", {}), source, out_models)
    return Profile(
        name=d["name"],
        machine=d["machine"],
        mpi=d["mpi"],
        date=d["date"],
        pair=d["pair"],
        load=d.get("load", ""),
        command=d.get("command", ""),
        threshold_bytes=_num(d.get("threshold_bytes"), "threshold_bytes", allow_none=True),
        shm_bytes=_num(d.get("shm_bytes", 0.0), "shm_bytes"),
        models=out_models,
        local=local,
        fits=d.get("fits", {}),
        measurements=d.get("measurements", []),
        executor=executor,
    )


def _executor_from_dict(ex: Any, source: str, models: Mapping[str, Any]) -> dict[str, Any]:
    """The `executor` section checked (see Profile.executor), infinities restored."""
    from collkit.simulate import MODELS

    if not isinstance(ex, dict):
        raise _bad(f"{source}: 'executor' must be an object of fits by statistic")
    out: dict[str, Any] = {}
    for stat, e in ex.items():
        where = f"{source}: executor.{stat}"
        if stat not in models:
            raise _bad(f"{where}: no such statistic in 'models' ({', '.join(models)})")
        if not isinstance(e, dict) or not isinstance(e.get("regimes"), dict) or not e["regimes"]:
            raise _bad(f"{where} needs 'threshold_bytes', 'transport' and 'regimes'")
        for k in ("transport", "sync"):
            if not isinstance(e.get(k, ""), str):
                raise _bad(f"{where}.{k} must be a string")
        regimes: dict[str, Any] = {}
        for regime, fits in e["regimes"].items():
            if regime not in EXECUTOR_REGIMES or not isinstance(fits, dict):
                raise _bad(f"{where}.regimes.{regime}: regime is {', '.join(EXECUTOR_REGIMES)}")
            regimes[regime] = {}
            for m, ps in fits.items():
                if m == "fit":
                    if not isinstance(ps, dict):
                        raise _bad(f"{where}.regimes.{regime}.fit must be an object")
                    regimes[regime][m] = ps
                    continue
                # The slots' regime has their copies' cost a byte (SlotCopies), no other.
                want = set(MODELS.get(m, {})) | {"reduce_base", "call", "barrier_skew"}
                want |= {"slot_copy"} if regime == "slots" else set()
                if m not in MODELS or not isinstance(ps, dict) or set(ps) != want:
                    raise _bad(
                        f"{where}.regimes.{regime}.{m}: a model of the simulator giving exactly "
                        + ", ".join(sorted(want))
                    )
                regimes[regime][m] = {
                    k: _num(v, f"executor.{stat}.{regime}.{m}.{k}", allow_none=k == "S")
                    for k, v in ps.items()
                }
        out[stat] = {
            **e,
            "threshold_bytes": _num(
                e.get("threshold_bytes"), f"executor.{stat}.threshold_bytes", allow_none=True
            ),
            "large_bytes": _num(
                e.get("large_bytes", 0), f"executor.{stat}.large_bytes", allow_none=True
            ),
            "transport": e.get("transport", ""),
            "algorithms": list(e.get("algorithms", [])),
            "sizes": list(e.get("sizes", [])),
            "regimes": regimes,
        }
    return out


# A profile is a few KiB of JSON; 64 MiB is far above any that calibrate writes.
_MAX_PROFILE = 1 << 26


def load_profile(path: str | os.PathLike[str]) -> Profile:
    """Read a profile written by `collkit calibrate` (InvalidArgumentError if it is not one;
    ArgumentTypeError if `path` is not a path)."""
    from collkit import files
    from collkit.errors import ArgumentTypeError

    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentTypeError(f"path must be a str or a path, not {type(path).__name__}")
    # only a regular file, of a bounded size: /dev/zero would be read until MemoryError
    text = files.read_text(path, "profile", _MAX_PROFILE)
    try:
        d = json.loads(text, object_pairs_hook=unique_keys(InvalidArgumentError))
    except json.JSONDecodeError as e:
        raise _bad(f"profile '{path}' is not JSON: {e}") from None
    return profile_from_dict(d, f"profile '{path}'")


def machine_load() -> str:
    """The 1, 5 and 15 minute load averages and the core count, e.g. '7.9 6.1 4.0 on 2 cores'."""
    try:
        a, b, c = os.getloadavg()
    except OSError:
        return ""
    return f"{a:.1f} {b:.1f} {c:.1f} on {os.cpu_count()} cores"


def _series(records: Sequence[Mapping[str, Any]], kind: str, stat: str) -> dict[int, float]:
    """size -> time (ns) of kernel `kind` by statistic `stat`."""
    return {int(r["bytes"]): float(r[stat]) * US for r in records if r.get("kind") == kind}


def fit_profile(
    records: Sequence[Mapping[str, Any]],
    multicast: Sequence[Mapping[str, Any]],
    *,
    name: str,
    machine: str,
    mpi: str,
    pair: str,
    load: str = "",
    command: str = "",
    date: str = "",
) -> Profile:
    """The profile from the kernel's records and the multicast benchmark's (see the module's
    docstring for what is fitted from what)."""
    meta = next((r for r in records if r.get("kind") == "meta"), {})
    n = int(meta.get("n", 8))
    late_ns = float(meta.get("late_us", 200)) * US
    late = _series(records, "late", "median")
    sizes = sorted(_series(records, "prtt1", "min"))
    if len(sizes) < 2:
        raise _bad("calibration needs at least two message sizes")
    # Eager: MPI_Send returns although the receiver comes late_ns later. The first size whose
    # send waits for it, and every size above, are rendezvous.
    rdv = [s for s in sizes if late.get(s, 0.0) > 0.5 * late_ns]
    threshold = math.inf
    if rdv:
        below = [s for s in sizes if s < rdv[0]]
        threshold = float(below[-1]) if below else 0.0
    eager = [s for s in sizes if s <= threshold]
    rendez = [s for s in sizes if s > threshold]
    # collkit's shared-memory transport: its slot size (0: off), the sizes measured through it.
    shm_meta = next((r for r in records if r.get("kind") == "shm"), {})
    shm_bytes = float(shm_meta.get("slot_bytes", 0) or 0)
    shm_sizes = sorted(_series(records, "shm_prtt1", "min")) if shm_bytes > 0 else []
    models: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    local: dict[str, dict[str, Any]] = {}
    fits: dict[str, dict[str, dict[str, Any]]] = {}
    for stat in STATS:
        models[stat], fits[stat] = {}, {}
        for regime, ss in (("eager", eager), ("rendezvous", rendez), ("shm", shm_sizes)):
            if not ss and regime != "eager":
                continue
            pre = "shm_" if regime == "shm" else ""
            t1 = _series(records, pre + "prtt1", stat)
            tn = _series(records, pre + "prttn", stat)
            os_ = _series(records, pre + "o_s", stat)
            or_ = _series(records, pre + "o_r", stat)
            if regime == "eager" and not ss:
                # Everything is rendezvous: fit the smallest sizes as eager all the same.
                ss = sizes[:2]
            x = [max(s - 1, 0) for s in ss]  # LogGP's (s-1)
            one_way = fit_line(ss, [t1[s] / 2 for s in ss])
            gap = fit_line(x, [max(tn[s] - t1[s], 0.0) / (n - 1) for s in ss])
            send = fit_line(x, [os_[s] for s in ss])
            recv = fit_line(x, [or_[s] for s in ss])
            o = (send.a + recv.a) / 2
            O_ = (send.b + recv.b) / 2
            G = gap.b
            # One-way time = o_s + L + (s-1) max(O, G) + o_r (LogGOPSim charges the larger of
            # the per-byte costs at the receiver): L is what the overheads leave of it.
            L = max(one_way.at(1) - send.a - recv.a, 0.0)
            if regime == "rendezvous" and "eager" in models[stat]:
                # A rendezvous send blocks until its data has moved: the fixed part of that is
                # the handshake, not CPU overhead. The CPU overhead o stays the eager one, the
                # handshake goes into L and the per-byte time into G, so that
                # 2o + L + (s-1) max(O, G) is the measured one-way time (the simulator completes
                # such a send with its receive, S).
                # On shared memory the transfer is a copy by the CPUs at both ends: the
                # per-byte time of the blocking calls stays CPU time (O), so a rank that sends
                # and receives at once pays for both copies.
                o = models[stat]["eager"]["loggops"]["o"]
                G = one_way.b
                L = max(one_way.at(1) - 2 * o, 0.0)
            # Rendezvous fits keep S: the simulator then completes the large sends as
            # rendezvous sends (when their receive completes) with the rendezvous parameters.
            # A send through a slot never waits for its receiver.
            S = math.inf if regime == "shm" else threshold
            mc = _multicast_fit(multicast, stat)
            # Each parameter fitted once; every registered model takes its own from these.
            models[stat][regime] = _models_of(
                {
                    "alpha": one_way.a,
                    "beta": one_way.b,
                    # The multicast benchmark times the issuing of b sends: its slope is
                    # alpha_r, but its intercept is not the latency. One message arrives
                    # alpha_p + alpha_r + n beta after it is sent: alpha_p is the one-way
                    # time's rest.
                    "alpha_p": max(one_way.a - (mc[1] if mc else gap.a), 0.0),
                    "alpha_r": mc[1] if mc else gap.a,
                    "L": L,
                    "o": o,
                    "g": gap.a,
                    "G": G,
                    "O": O_,
                    "S": S,
                }
            )
            fits[stat][regime] = {
                "sizes": ss,
                "one_way": asdict(one_way),
                "gap": asdict(gap),
                "o_s": asdict(send),
                "o_r": asdict(recv),
            }
        gamma: dict[str, dict[str, dict[str, float]]] = {}
        for r in records:
            if r.get("kind") != "reduce":
                continue
            gamma.setdefault(str(r["datatype"]), {}).setdefault(str(r["op"]), {})
        for dt, ops in gamma.items():
            for op in ops:
                pts = {
                    int(r["bytes"]): float(r[stat]) * US
                    for r in records
                    if r.get("kind") == "reduce" and r["datatype"] == dt and r["op"] == op
                }
                line = fit_line(sorted(pts), [pts[s] for s in sorted(pts)])
                ops[op] = {
                    "gamma": line.b,
                    "reduce_base": line.a,
                    "rms_rel_residual": line.rms_rel_residual,
                }
        cp = _series(records, "copy", stat)
        copy = fit_line(sorted(cp), [cp[s] for s in sorted(cp)]) if cp else None
        local[stat] = {
            "gamma": gamma,
            "copy_beta": copy.b if copy else 0.0,
            "copy_fit": asdict(copy) if copy else None,
        }
    _order_fits(models, local)
    if not date:
        date = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    prof = Profile(
        name=name,
        machine=machine,
        mpi=mpi,
        date=date,
        pair=pair,
        load=load,
        command=command,
        threshold_bytes=threshold,
        shm_bytes=shm_bytes if shm_sizes else 0.0,
        models=models,
        local=local,
        fits=fits,
        measurements=[dict(r) for r in records] + [dict(r) for r in multicast],
    )
    if any(r.get("kind") == "executor" for r in records):
        prof.executor = fit_executor(prof, records, on_one_node=pair == "intra-node")
    return prof


def _order_fits(
    models: dict[str, dict[str, dict[str, dict[str, float]]]], local: dict[str, dict[str, Any]]
) -> None:
    """Every parameter fitted from the medians at least the one fitted from the minima: the
    minima and the medians are fitted apart, and a median line below the minimum's (a
    different split of one time into latency and overhead, say) would predict a median call
    faster than the fastest. The simulated time grows with every parameter, so this keeps
    the predicted minimum <= the predicted median."""
    if "min" not in models or "median" not in models:
        return
    for regime, ms in models["median"].items():
        for m, ps in ms.items():
            lo = models["min"].get(regime, {}).get(m, {})
            for k, v in ps.items():
                if k != "S" and k in lo:
                    ps[k] = max(v, lo[k])
    lo_loc, hi_loc = local["min"], local["median"]
    hi_loc["copy_beta"] = max(hi_loc["copy_beta"], lo_loc["copy_beta"])
    for dt, ops in hi_loc["gamma"].items():
        for op, g in ops.items():
            lo = lo_loc["gamma"].get(dt, {}).get(op, {})
            for k in ("gamma", "reduce_base"):
                if k in lo:
                    g[k] = max(g[k], lo[k])


def refit(p: Profile) -> Profile:
    """The profile fitted again from its own measurements (after a change of the fitting; the
    machine, MPI, date, load and command stay those of the measurement)."""
    kernel = [m for m in p.measurements if m.get("kind") not in ("multicast", "fit")]
    multicast = [m for m in p.measurements if m.get("kind") in ("multicast", "fit")]
    return fit_profile(
        kernel,
        multicast,
        name=p.name,
        machine=p.machine,
        mpi=p.mpi,
        pair=p.pair,
        load=p.load,
        command=p.command,
        date=p.date,
    )


def _multicast_fit(records: Sequence[Mapping[str, Any]], stat: str) -> tuple[float, float] | None:
    """(alpha_p, alpha_r) in ns from the multicast benchmark's non-blocking fit (collkit's
    executor sends with MPI_Isend)."""
    for r in records:
        if r.get("kind") == "fit" and r.get("mode") == "nonblocking":
            return (
                max(float(r[f"alpha_p_{stat}"]), 0.0) * US,
                max(float(r[f"alpha_r_{stat}"]), 0.0) * US,
            )
    return None


def run_kernel(
    mpi: Any,
    *,
    hosts: str | None = None,
    sizes: Sequence[int] = DEFAULT_SIZES,
    reduce_sizes: Sequence[int] = DEFAULT_REDUCE_SIZES,
    iterations: int = 30,
    rounds: int = 3,
    n: int = 8,
) -> list[dict[str, Any]]:
    """Runs collkit_calibrate on two ranks (one per host with `hosts`) and returns its records."""
    from collkit.mpi import build, launch_command, launch_env

    bindir = build(mpi, ["collkit_calibrate"])
    env, _ = launch_env(mpi, 2, hosts=hosts)
    args = [
        str(bindir / "collkit_calibrate"),
        "--sizes",
        ",".join(map(str, sizes)),
        "--reduce-sizes",
        ",".join(map(str, reduce_sizes)),
        "--iters",
        str(iterations),
        "--rounds",
        str(rounds),
        "--n",
        str(n),
    ]
    cmd = launch_command(mpi, 2, args, hosts=hosts, map_by="node" if hosts else "")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise UnsupportedError(
            f"collkit_calibrate failed (exit {r.returncode}):\n{(r.stdout + r.stderr)[-2000:]}"
        )
    return [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]


def calibrate(
    mpi: Any,
    *,
    name: str,
    hosts: str | None = None,
    sizes: Sequence[int] = DEFAULT_SIZES,
    reduce_sizes: Sequence[int] = DEFAULT_REDUCE_SIZES,
    iterations: int = 30,
    rounds: int = 3,
    command: str = "",
    executor: bool = True,
    executor_sizes: Sequence[int] | None = None,
    executor_rounds: int = 5,
    executor_iterations: int = 60,
    sync: str = "barrier",
    progress: Callable[[str], None] | None = None,
) -> Profile:
    """Measure and fit a profile of `mpi` (collkit.mpi.MPI) between two ranks: on this node,
    or on the first two hosts of the host file `hosts`; with `executor`, collkit's executor
    too (collkit.calibrate_executor: its per-call and per-op costs), each of its cases in
    `executor_rounds` x `executor_iterations` calls: validate's default, 300 calls, the number
    at which two measurements of a case agree to a few per cent on this machine (90 calls, the
    kernel's, left the fits' medians two-humped)."""
    from collkit.bench import machine_name, run_multicast

    if any(s < 1 for s in sizes) or len(set(sizes)) < 2:
        raise _bad("calibration sizes must be at least two distinct sizes >= 1 B")
    if min(iterations, rounds, executor_iterations, executor_rounds) < 1:
        raise _bad("iterations and rounds must be >= 1")
    load_before = machine_load()
    recs = run_kernel(
        mpi,
        hosts=hosts,
        sizes=sorted(set(sizes)),
        reduce_sizes=sorted(set(reduce_sizes)),
        iterations=iterations,
        rounds=rounds,
    )
    multicast = [] if hosts else run_multicast(mpi, 2, iterations=max(iterations * 10, 100))
    if executor:
        recs += measure_executor(
            mpi,
            hosts=hosts,
            sizes=executor_sizes or CALIBRATION_SIZES,
            rounds=executor_rounds,
            iterations=executor_iterations,
            progress=progress,
            sync=sync,
        )
    return fit_profile(
        recs,
        multicast,
        name=name,
        machine=machine_name(),
        mpi=mpi.version,
        pair=f"inter-node (hosts from {Path(hosts).name})" if hosts else "intra-node",
        load=f"{load_before} before, {machine_load()} after",
        command=command,
    )
