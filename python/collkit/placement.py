"""Where ranks live: ``rpn`` ranks per node, contiguous or round-robin.

A schedule carries its placement in its header (``Schedule.rpn``, ``Schedule.order``); the
node-aware algorithms (``allreduce:hier``, ``alltoall:bruck_local``) read it to form their node
groups, and the simulator's topology takes its node size from it, so the two cannot disagree.

>>> Placement(16).describe()
'16 ranks per node, contiguous'
>>> Placement(4, "round_robin").node_of(5, P=12)
2
"""

from __future__ import annotations

from dataclasses import dataclass

from collkit.errors import InvalidArgumentError

ORDERS = ("contiguous", "round_robin")
_ALIASES = {
    "block": "contiguous",
    "round-robin": "round_robin",
    "rr": "round_robin",
    "cyclic": "round_robin",
}


def parse_order(text: str) -> str:
    """'contiguous' or 'round_robin' (also 'block', 'round-robin', 'rr', 'cyclic')."""
    order = _ALIASES.get(text, text)
    if order not in ORDERS:
        raise InvalidArgumentError(
            f"unknown rank order {text!r}: contiguous (node n holds ranks n*rpn..n*rpn+rpn-1) "
            "or round_robin (rank r on node r % nodes)"
        )
    return order


@dataclass(frozen=True)
class Placement:
    """``rpn`` ranks per node (>= 1) placed ``order``: 'contiguous' or 'round_robin'.
    rpn need not divide P: there are ceil(P / rpn) nodes."""

    rpn: int
    order: str = "contiguous"

    def __post_init__(self) -> None:
        if (
            isinstance(self.rpn, bool)
            or not isinstance(self.rpn, int)
            or not 1 <= self.rpn <= 2**31
        ):
            raise InvalidArgumentError(
                f"ranks per node must be an integer in [1, 2^31], got {self.rpn!r}"
            )
        object.__setattr__(self, "order", parse_order(self.order))

    def describe(self) -> str:
        return f"{self.rpn} ranks per node, {self.order}"

    def nodes(self, P: int) -> int:
        return -(-P // min(self.rpn, P))

    def node_of(self, rank: int, P: int) -> int:
        rpn = min(self.rpn, P)
        return rank // rpn if self.order == "contiguous" else rank % self.nodes(P)


def core_args(placement: Placement | None) -> tuple[int, str]:
    """(rpn, order) as the core takes them: rpn 0 is 'not given'."""
    if placement is None:
        return 0, "contiguous"
    if not isinstance(placement, Placement):
        raise InvalidArgumentError(f"placement must be a collkit.Placement, got {placement!r}")
    return placement.rpn, placement.order
