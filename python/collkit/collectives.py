"""The collectives, as the core's CollectiveSpec table says them (core/src/collective.cpp).

Every list of collectives in Python (the CLI's choices, the docs' sections, the schedule formats'
check) is read from here, so a collective added to the core's table appears everywhere at once.

>>> from collkit.collectives import COLLECTIVES, collective
>>> COLLECTIVES[:2]
('allreduce', 'reduce')
>>> collective("reduce")["rooted"], collective("bcast")["reduction"]
(True, False)
"""

from __future__ import annotations

from typing import Any

from collkit import _core
from collkit.errors import InvalidArgumentError

__all__ = [
    "COLLECTIVES",
    "IN_PLACE_COLLECTIVES",
    "PER_BLOCK",
    "REDUCTIONS",
    "ROOTED",
    "buffer_elems",
    "collective",
    "collectives",
    "count_unit",
]


def collectives() -> list[dict[str, Any]]:
    """Every collective's spec: buffers, root, reduction, in-place rule, postcondition."""
    specs: list[dict[str, Any]] = _core.collectives()
    return specs


_SPECS = {c["name"]: c for c in collectives()}
COLLECTIVES: tuple[str, ...] = tuple(_SPECS)
ROOTED: tuple[str, ...] = tuple(n for n, c in _SPECS.items() if c["rooted"])
REDUCTIONS: tuple[str, ...] = tuple(n for n, c in _SPECS.items() if c["reduction"])
IN_PLACE_COLLECTIVES: tuple[str, ...] = tuple(
    n for n, c in _SPECS.items() if c["in_place"] != "none"
)
# Collectives with a buffer of P blocks: their count (and bytes) is per block, as in MPI.
PER_BLOCK: tuple[str, ...] = tuple(
    n
    for n, c in _SPECS.items()
    if "P" in (c["in"]["at_root"], c["in"]["elsewhere"], c["out"]["at_root"], c["out"]["elsewhere"])
)


def count_unit(name: str | None = None) -> str:
    """What a count counts: 'per block' for `name` if it holds P blocks, 'per rank' otherwise;
    for no name, the rule for all ('per rank (alltoall, ...: per block)'), for help texts."""
    if name is not None:
        return "per block" if name in PER_BLOCK else "per rank"
    return f"per rank ({', '.join(PER_BLOCK)}: per block)"


def collective(name: str) -> dict[str, Any]:
    """One collective's spec; InvalidArgumentError naming the known ones for any other name."""
    spec = _SPECS.get(name)
    if spec is None:
        raise InvalidArgumentError(
            f"unknown collective {name[:40]!r} (known: {', '.join(COLLECTIVES)})"
        )
    return spec


def buffer_elems(name: str, buffer: str, P: int, count: int, root: int, rank: int) -> int:
    """Elements of `buffer` ('in' or 'out') of `rank` for this collective."""
    collective(name)
    return int(_core.buffer_elems(name, buffer, P, count, root, rank))
