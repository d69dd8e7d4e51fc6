"""The tour's step "validate": calibrate this machine briefly, then hold the simulator's
predictions against measurements of two allreduce algorithms at P = 2 (docs/simulator.md,
"Validation", has the full run)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

Run = Callable[[list[str]], int]


def validate_step(run: Run, out: Path, quick: bool) -> int:
    """`collkit calibrate` (few sizes and samples), then `collkit validate` with that profile."""
    profile = out / "this-machine.json"
    code = run(["calibrate", "--quick", "-o", str(profile)])
    if code != 0:
        return code
    sizes = "8,64KiB" if quick else "8,1KiB,64KiB,1MiB"
    return run(
        [
            "validate", "--profile", str(profile), "--collectives", "allreduce",
            "--algos", "rd,ring", "-P", "2", "--sizes", sizes, "--rounds", "5", "--iters", "60",
            "-o", str(out / "validate"),
        ]
    )  # fmt: skip
