"""What the simulated studies (sim_bcast_scale.py, sim_swing_torus.py) share, written once: one
simulated point run and appended to the results store as it is done (so that an interrupted
run resumes), and their outputs: the figure in docs/img/, and the result file in
benchmarks/results/ opening with when, where and with which collkit and command it was made
(not a benchmark: the scripts here write through it).
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import collkit
from collkit.results import ResultStore, Row
from collkit.sim.memory import memory_estimate

__all__ = [
    "ROOT",
    "ops_over",
    "pyplot",
    "result_head",
    "save_figure",
    "simulate_point",
    "skipped_note",
    "write_result",
]

ROOT = Path(__file__).resolve().parents[1]


def ops_over(algo: str, P: int, nbytes: int, model: str, max_ops: float) -> float | None:
    """The ops of the schedule where they are more than `max_ops` (the point is left out), else
    None."""
    _, ops = memory_estimate(algo, P, nbytes // 8, 8, model=model)
    return float(ops) if ops > max_ops else None


def simulate_point(
    algo: str, P: int, nbytes: int, store: ResultStore, label: str, t0: float, **sim: Any
) -> tuple[Row, float]:
    """Simulate one point (`sim`: the model's and topology's keywords of collkit.simulate),
    append its row to `store` and say it on stderr after `label`; returns the row and the
    makespan in us."""
    t = time.time()
    res = collkit.simulate(algo, P=P, bytes=nbytes, **sim)
    row = res.to_row(date=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d"))
    store.append(row)
    us = res.makespan / 1e3
    print(
        f"{label}: {us:.2f} us ({time.time() - t:.1f} s; {time.time() - t0:.0f} s in all)",
        file=sys.stderr,
        flush=True,
    )
    return row, us


def result_head(title: str, script: str, argv: Sequence[str]) -> str:
    """The opening of a result file: its title; the date, machine, load and collkit version;
    the command that made it (the docs' check reads that line)."""
    cmd = f".venv/bin/python benchmarks/{script} " + " ".join(shlex.quote(x) for x in argv)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"# {title}\n\n{stamp}; machine `{platform.node()}` "
        f"({os.cpu_count()} CPUs), load average {load} (simulated times do not depend on it); "
        f"collkit {collkit.__version__}.\n\nCommand: `{cmd.strip()}` (under nice -n 19)\n\n"
    )


def skipped_note(skipped: Sequence[str]) -> str:
    """The result file's line naming the points left out for their size ("" when none)."""
    if not skipped:
        return ""
    return "\nNot simulated (more than --max-ops ops): " + "; ".join(skipped) + ".\n"


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (files only), imported where a figure is made."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, name: str) -> Path:
    """Write a matplotlib figure to docs/img/NAME."""
    png = ROOT / "docs" / "img" / name
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")
    return png


def write_result(name: str, text: str) -> Path:
    """Write (replace) benchmarks/results/NAME."""
    out = ROOT / "benchmarks" / "results" / name
    out.write_text(text)
    print(f"wrote {out}")
    return out
