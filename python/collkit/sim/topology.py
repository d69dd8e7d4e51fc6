"""Topologies: an extra latency per pair of ranks, and links that messages share (see
docs/simulator.md). Each kind and the arguments it takes are said once, in KINDS."""

from __future__ import annotations

from dataclasses import dataclass, replace

from collkit import units
from collkit.errors import ArgumentTypeError, InvalidArgumentError
from collkit.placement import Placement
from collkit.sim.options import Time, parse_per_byte, parse_time
from collkit.sim.spec import parse_spec

# Each kind and its own arguments (in the order describe() writes them); every kind also takes
# COMMON. The core knows the same kinds by these names (sim/topology.hpp's TopoKind).
KINDS: dict[str, tuple[str, ...]] = {
    "none": (),
    "fattree": ("k", "hop"),
    "dragonfly": ("p", "a", "hop", "global"),
    "torus": ("dims", "hop"),
}
COMMON = ("rpn", "intra", "link")


@dataclass(frozen=True)
class Topology:
    """An extra latency per pair of ranks (see docs/simulator.md)."""

    kind: str = "none"  # one of KINDS
    ranks_per_node: int = 0  # 0: the schedule's placement says (1 if it gives none)
    intra: float = 0.0
    hop: float = 0.0
    global_: float = 0.0
    k: int = 2
    p: int = 1
    a: int = 1
    dims: tuple[int, ...] = ()
    link: float = 0.0  # ns per byte on each link: messages share links (congestion); 0: never
    order: str = "contiguous"  # rank order on nodes: from the schedule's placement

    def describe(self) -> str:
        """The spec this topology reads back from, e.g. 'fattree(k=16,hop=100ns,rpn=4)'."""
        if self.kind == "none" and self.ranks_per_node == 0 and self.intra == 0 and not self.link:
            return "none"
        shown = {
            "k": str(self.k),
            "p": str(self.p),
            "a": str(self.a),
            "dims": "x".join(str(d) for d in self.dims),
            "hop": f"{self.hop:g}ns",
            "global": f"{self.global_:g}ns",
            "rpn": str(self.ranks_per_node) if self.ranks_per_node else "",
            "intra": f"{self.intra:g}ns" if self.intra else "",
            "link": f"{self.link:g}ns" if self.link else "",
        }
        args = [f"{key}={shown[key]}" for key in (*KINDS[self.kind], *COMMON) if shown[key]]
        return f"{self.kind}({','.join(args)})"


def parse_topology(
    spec: str | Topology | None, ranks_per_node: int = 0, intra: Time = 0.0
) -> Topology:
    """A topology from its spec: ``none``, ``fattree(k=16,hop=100ns)``,
    ``dragonfly(p=4,a=8,hop=100ns,global=500ns)``, ``torus(dims=8x8x8,hop=50ns)``; every spec also
    takes ``rpn=N`` (ranks per node: left out, the schedule's placement gives it, and where both
    are given they must agree), ``intra=TIME`` (latency within a node) and ``link=COST``
    (time per byte on each link, e.g. ``0.1ns`` or ``10GB/s``: messages then share links and wait
    for each other, congestion)."""
    if isinstance(spec, Topology):
        return spec
    # Not `or`: 0 or [] is no spec; and only a str is compared (an array's == is elementwise).
    spec = "none" if spec is None or (isinstance(spec, str) and spec == "") else spec
    if not isinstance(spec, str):
        raise ArgumentTypeError(
            f"topology: expected a spec string such as fattree(k=16,hop=100ns), "
            f"got {type(spec).__name__}"
        )
    kind, args = parse_spec(spec, "topology")
    if kind not in KINDS:
        raise InvalidArgumentError(f"topology: unknown kind '{kind}' (known: {', '.join(KINDS)})")
    takes = (*KINDS[kind], *COMMON)
    values: dict[str, str] = {}
    for key, val in args:
        if key not in takes:
            raise InvalidArgumentError(
                f"topology: bad argument '{key + '=' if key else ''}{val}' for {kind} "
                f"(takes {', '.join(f'{t}=...' for t in sorted(takes))})"
            )
        values[key] = val
    if kind != "none" and "hop" not in values:
        raise InvalidArgumentError(
            f"topology: {kind} needs hop=TIME, the latency per switch hop (without it every "
            f"message between nodes would cost nothing extra), e.g. {kind}(...,hop=100ns)"
        )

    def integer(key: str, default: int, lo: int = 1) -> int:
        text = values.get(key)
        if text is None:
            return default
        v = units.parse_int(text, f"topology: {key}")
        if v < lo or v > 2**31:
            raise InvalidArgumentError(f"topology: {key} must be in [{lo}, 2^31], got {v}")
        return v

    dims: tuple[int, ...] = ()
    if kind == "torus":
        if "dims" not in values:
            raise InvalidArgumentError(
                "topology: torus needs dims=AxBx..., e.g. torus(dims=8x8x8,hop=50ns)"
            )
        try:
            dims = tuple(units.parse_int(d, "dims") for d in values["dims"].lower().split("x"))
        except InvalidArgumentError:
            raise InvalidArgumentError(
                f"topology: dims '{values['dims']}' must look like 8x8x8"
            ) from None
        if not dims or len(dims) > 8 or any(d < 1 or d > 2**31 for d in dims):
            raise InvalidArgumentError("topology: torus needs 1 to 8 dimensions, each in [1, 2^31]")
    return Topology(
        kind=kind,
        ranks_per_node=integer("rpn", ranks_per_node),
        intra=parse_time(values.get("intra", intra), "topology intra"),
        hop=parse_time(values.get("hop", 0.0), "topology hop"),
        global_=parse_time(values.get("global", 0.0), "topology global"),
        k=integer("k", 2, lo=2),
        p=integer("p", 1),
        a=integer("a", 1),
        dims=dims,
        link=parse_per_byte(values["link"], "topology link") if "link" in values else 0.0,
    )


def placed_topology(topo: Topology, placement: Placement | None) -> Topology:
    """The topology with its node size and rank order from the placement: one node size, so a
    topology that names another (rpn=N) is an error."""
    if placement is None:
        return topo
    if topo.ranks_per_node and topo.ranks_per_node != placement.rpn:
        raise InvalidArgumentError(
            f"the topology's rpn={topo.ranks_per_node} disagrees with the placement "
            f"({placement.describe()}): they are one node size; give it once (--rpn), or give "
            "the same number"
        )
    return replace(topo, ranks_per_node=placement.rpn, order=placement.order)
