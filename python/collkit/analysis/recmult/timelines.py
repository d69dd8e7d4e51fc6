"""Simulated timelines of the recursive multiplying examples ([Ruefenacht 2017] §6.2-6.3,
Figs. 18-22): a2,a2,a2 and a8 at N = 8; c6m2,a2,a2,e6m2, m1g2a3,n1g3a2 and m3g2a2,n3g2a2 at
N = 7, in the pipelining postal model with the seed's settings (latency alpha_p = 500 ns,
pipeline latency alpha_r = 100 ns, 0.4 ns per byte, 10 ns per reduction, 8 bytes).

Needs the simulator (collkit.simulate, collkit.timeline).

    python -m collkit.analysis.recmult.timelines docs/img
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collkit.errors import UnsupportedError

SEED_EXAMPLES = [
    ("a2,a2,a2", 8, "Fig. 18"),
    ("a8", 8, "Fig. 19"),
    ("c6m2,a2,a2,e6m2", 7, "Fig. 20"),
    ("m1g2a3,n1g3a2", 7, "Fig. 21"),
    ("m3g2a2,n3g2a2", 7, "Fig. 22"),
]
# Seed 002 §6.2 ("latency 500 ns, pipeline latency 100 ns, bandwidth 0.4 ns per byte, compute
# tasks ten nanoseconds"), in the simulator's parameter names.
SEED_SIM_PARAMS: dict[str, Any] = {
    "model": "pipelined-postal",
    "alpha_p": "500ns",
    "alpha_r": "100ns",
    "beta": "0.4ns",
    "reduce_base": "10ns",
}
SEED_BYTES = 8


@dataclass(frozen=True)
class Timeline:
    schedule: str
    N: int
    figure: str
    makespan_ns: float
    skew_ns: float  # latest minus earliest rank finish
    finish_ns: tuple[float, ...]
    picture: Path | None


def simulator() -> Any:
    """The simulate function, or UnsupportedError when the simulator is not built in."""
    try:
        return importlib.import_module("collkit.simulate").simulate
    except (ImportError, AttributeError):
        raise UnsupportedError("the simulator (collkit.simulate) is not available") from None


def simulate_schedule(
    schedule: str, N: int, nbytes: int = SEED_BYTES, timeline: bool = False, **params: Any
) -> Any:
    """A SimResult of allreduce:rm(schedule) on N ranks (seed parameters unless overridden)."""
    kw = {**SEED_SIM_PARAMS, **params}
    name = f"allreduce:rm({schedule})" if schedule else "allreduce:rm"
    return simulator()(name, P=N, bytes=nbytes, timeline=timeline, **kw)


def seed_timelines(outdir: str | Path | None = None) -> list[Timeline]:
    """Simulate the seed's five examples; draw their timelines into `outdir` if given."""
    out = []
    for schedule, N, fig in SEED_EXAMPLES:
        r = simulate_schedule(schedule, N, timeline=outdir is not None)
        finish = tuple(float(x) for x in r.finish)
        picture = None
        if outdir is not None:
            plot_timeline = importlib.import_module("collkit.timeline").plot_timeline
            d = Path(outdir)
            d.mkdir(parents=True, exist_ok=True)
            picture = d / f"rm-timeline-{schedule.replace(',', '-')}.png"
            plot_timeline(
                r,
                picture,
                title=f"allreduce:rm({schedule}), N = {N} (cf. seed {fig}): "
                f"makespan {r.makespan:.0f} ns, skew {max(finish) - min(finish):.0f} ns",
            )
        out.append(
            Timeline(
                schedule, N, fig, float(r.makespan), max(finish) - min(finish), finish, picture
            )
        )
    return out


def main(argv: list[str]) -> int:
    rows = seed_timelines(argv[0] if argv else "docs/img")
    print("| schedule | N | seed | makespan (ns) | skew (ns) | finish times (ns) | picture |")
    print("| --- | ---: | --- | ---: | ---: | --- | --- |")
    for t in rows:
        fin = ", ".join(f"{x:.0f}" for x in t.finish_ns)
        print(
            f"| {t.schedule} | {t.N} | {t.figure} | {t.makespan_ns:.0f} | {t.skew_ns:.0f} | "
            f"{fin} | {t.picture} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
