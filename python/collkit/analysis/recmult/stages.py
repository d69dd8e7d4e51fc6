"""The schedule language, parsed and checked by the core (core/algorithms/phases/rm_stages.cpp):
one grammar."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from collkit import _core

StageKind = Literal["factor", "collapse", "expand", "merge", "invmerge"]
Shape = Literal["factored", "split", "merged"]


@dataclass(frozen=True)
class Stage:
    """One stage: aB (factor), cTmB / eTmB (collapse / expand), mRgGaB / nRgGaB (merges)."""

    kind: StageKind
    base: int
    threshold: int = 0
    remainder: int = 0
    groups: int = 0
    mask: int = 0  # product of the factor bases before this stage (0 for collapse / expand)

    @property
    def text(self) -> str:
        if self.kind == "factor":
            return f"a{self.base}"
        if self.kind in ("collapse", "expand"):
            return f"{self.kind[0]}{self.threshold}m{self.base}"
        letter = "m" if self.kind == "merge" else "n"
        return f"{letter}{self.remainder}g{self.groups}a{self.base}"


@dataclass(frozen=True)
class Plan:
    """A stage list checked against P."""

    P: int
    shape: Shape
    stages: tuple[Stage, ...]
    inner: int  # ranks of the hypercuboid
    threshold: int = 0
    collapse_base: int = 0
    remainder: int = 0

    @property
    def text(self) -> str:
        return ",".join(s.text for s in self.stages)

    @property
    def algorithm(self) -> str:
        """The algorithm name, e.g. allreduce:rm(a8,a4)."""
        return f"allreduce:rm({self.text})" if self.stages else "allreduce:rm"


def _split(stages: str | Sequence[str]) -> list[str]:
    if isinstance(stages, str):
        return [t.strip() for t in stages.split(",")] if stages.strip() else []
    return list(stages)


def plan(stages: str | Sequence[str], P: int) -> Plan:
    """Parse 'a8,a4' (or ['a8', 'a4']) and check it against P; raises CollkitError with a caret
    under the culprit for a malformed or impossible schedule. '' is recursive doubling."""
    d = _core.rm_plan(_split(stages), P)
    return Plan(
        P=d["P"],
        shape=d["shape"],
        stages=tuple(
            Stage(s["kind"], s["base"], s["threshold"], s["remainder"], s["groups"], s["mask"])
            for s in d["stages"]
        ),
        inner=d["inner"],
        threshold=d["threshold"],
        collapse_base=d["collapse_base"],
        remainder=d["remainder"],
    )


def recursive_doubling(P: int) -> str:
    """MPICH's recursive doubling as a stage list: 'a2,a2,a2' (P = 8), 'c2m2,a2,a2,e2m2' (P = 5)."""
    return str(_core.rm_recursive_doubling(P))
