"""The cost models and their parameters, and the core's SimOptions built from typed settings.

Every time is in **nanoseconds** (floats), every size in bytes. Parameters accept numbers (ns) or
strings with units: ``"1.34us"``, ``"500ns"``, ``"2ms"``; per-byte costs accept ``"0.4ns"``,
``"0.4ns/B"`` or a bandwidth such as ``"2.5GB/s"``.

The models and their parameters come from the one table in the C++ core (sim/model.hpp): name,
unit ("ns", "ns/B" or "B"), meaning, default, and the models that use each. Nothing here lists
them again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from collkit import _core, units
from collkit.errors import ArgumentTypeError, InvalidArgumentError

if TYPE_CHECKING:
    from collkit.sim.noise import Distribution
    from collkit.sim.topology import Topology

Time = float | int | str

_PARAMS: list[dict[str, Any]] = list(_core.model_params())
# The models, as the core registers them (one file each under core/src/sim/models/).
MODEL_NAMES: tuple[str, ...] = tuple(str(m["name"]) for m in _core.models())
LOCAL_PARAMS: dict[str, float] = {p["name"]: float(p["default"]) for p in _PARAMS if p["local"]}
MODELS: dict[str, dict[str, float]] = {
    m.replace("_", "-"): {
        p["name"]: float(p["default"])
        for p in _PARAMS
        if m in p["models"] and p["name"] not in LOCAL_PARAMS
    }
    for m in MODEL_NAMES
}
# The engine's rules of each model ("port": a send port per rank; "loggops": CPU and NIC).
MODEL_RULES: dict[str, str] = {
    str(m["name"]).replace("_", "-"): str(m["rules"]) for m in _core.models()
}
PER_BYTE = {p["name"] for p in _PARAMS if p["unit"] == "ns/B"}
PARAM_DOCS: dict[str, str] = {p["name"]: str(p["doc"]) for p in _PARAMS}
PARAM_UNITS: dict[str, str] = {p["name"]: str(p["unit"]) for p in _PARAMS}


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
            raise InvalidArgumentError(f"{what}: must be a size >= 0")
        return float(value)
    if isinstance(value, str):
        return float(units.parse_size(value, what))
    raise InvalidArgumentError(f"{what}: expected a size, got {value!r}")


@dataclass(frozen=True)
class Model:
    """A cost model and its parameters (ns; ns per byte; S in bytes)."""

    name: str
    params: Mapping[str, float]

    @staticmethod
    def make(name: str, **params: Time | None) -> Model:
        """Model `name` with defaults overridden by `params` (numbers in ns or unit strings)."""
        if not isinstance(name, str):
            raise ArgumentTypeError(
                f"model must be a name such as 'postal' or a Model, not {type(name).__name__}"
            )
        key = name.replace("_", "-").lower()
        if key not in MODELS:
            known = ", ".join(MODELS)
            raise InvalidArgumentError(f"unknown model '{name}' (known: {known})")
        allowed = {**MODELS[key], **LOCAL_PARAMS}
        values = dict(allowed)
        for k, v in params.items():
            if v is None:
                continue
            if k not in allowed:
                raise InvalidArgumentError(
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


def model_of(model: str | Model, params: Mapping[str, Time | None]) -> Model:
    """The Model a call names: a ready Model (and no keywords), or a name and its keywords."""
    if not isinstance(model, (str, Model)):
        raise ArgumentTypeError(
            f"model must be a name such as 'postal' or a Model, not {type(model).__name__}"
        )
    if isinstance(model, Model):
        if params:
            raise InvalidArgumentError(
                "pass model parameters either in a Model or as keywords, not both"
            )
        return model
    return Model.make(model, **params)


def check_flag(value: object, what: str) -> bool:
    """`value` if it is a bool (a string 'yes' is not: the core would raise its own TypeError)."""
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{what} must be True or False, not {value!r:.60}")
    return value


def check_placement(placement: object) -> None:
    """None or a Placement (a string or an int has no rpn: AttributeError deep inside)."""
    from collkit.placement import Placement

    if placement is not None and not isinstance(placement, Placement):
        raise ArgumentTypeError(
            f"placement must be a collkit Placement (e.g. Placement(16)) or None, not "
            f"{type(placement).__name__}"
        )


def check_run(trials: int, seed: int) -> None:
    """Trials and seed are integers in range."""
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= 1_000_000:
        raise InvalidArgumentError(f"trials must be an integer in [1, 10^6], got {trials!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise InvalidArgumentError(f"seed must be an integer in [0, 2^64), got {seed!r}")


def core_options(
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


def param_help() -> str:
    """One line per model listing its parameters and defaults, for the CLI help."""

    def show(k: str, v: float) -> str:
        return f"{k}={v:g}{PARAM_UNITS[k]}"

    out = []
    for name, ps in MODELS.items():
        out.append(f"  {name:17s} " + ", ".join(show(k, v) for k, v in ps.items()))
    out.append("  every model       " + ", ".join(show(k, v) for k, v in LOCAL_PARAMS.items()))
    return "\n".join(out)
