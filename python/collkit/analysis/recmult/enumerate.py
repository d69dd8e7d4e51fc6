"""Every valid recursive multiplying schedule for N ranks ([Ruefenacht 2017] §6.1: factored, split
and
merged schedules), with a maximum fan-out.

Fan-out is the most messages one rank sends in one stage: aB: B-1; cTmB: 1; eTmB: B-1;
mRgGaB: B (a remainder rank sends to the whole group); nRgGaB: B-1+ceil(R/G) (a rank of a group
also sends to the remainder ranks assigned to it). The families:

* factored: aB1,...,aBs, every ordered factorisation of N into bases 2..f+1;
* split:    cTmB, <ordered factorisation of N-T+T/B>, eTmB for every base 2..f+1 and threshold
            T = B, 2B, ... <= N (the empty factorisation too: reduce to one rank and back);
* merged:   mRgG1aB1, <ordered factorisation>, nRgGsaBs for every remainder 1 <= R <= N-4 with
            B1·...·Bs = N-R, s >= 2, G1 = (N-R)/B1, Gs = (N-R)/Bs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache

from collkit.analysis.recmult.stages import Stage
from collkit.errors import InvalidArgumentError

FAMILIES = ("factored", "split", "merged")
DEFAULT_MAX_FANOUT = 8


@lru_cache(maxsize=65536)
def _factorisations(n: int, max_base: int) -> tuple[tuple[int, ...], ...]:
    if n == 1:
        return ((),)
    out: list[tuple[int, ...]] = []
    for b in range(2, min(max_base, n) + 1):
        if n % b == 0:
            out.extend((b, *rest) for rest in _factorisations(n // b, max_base))
    return tuple(out)


@lru_cache(maxsize=65536)
def _num_factorisations(n: int, max_base: int) -> int:
    if n == 1:
        return 1
    return sum(
        _num_factorisations(n // b, max_base) for b in range(2, min(max_base, n) + 1) if n % b == 0
    )


def factorisations(n: int, max_base: int) -> tuple[tuple[int, ...], ...]:
    """Ordered factorisations of n into factors 2..max_base; ((),) for n = 1."""
    if n < 1:
        raise ValueError(f"n = {n} must be at least 1")
    return _factorisations(n, max_base)


def useful_fanout(N: int, max_fanout: int) -> int:
    """`max_fanout` lowered to the most any schedule of N ranks has (N - 1: aN and eNmN; merged
    stages send at most about N/2): every larger limit admits the same schedules, and the loops
    over bases stop at N instead of at a limit of 2^31."""
    return max(1, min(max_fanout, N - 1))


def check_space(
    N: int, max_fanout: int, families: Iterable[str], max_N: int | None = None
) -> tuple[str, ...]:
    """The families of a schedule space, after checking N, the fan-out and the family names
    (InvalidArgumentError, a ValueError, for each); shared by enumeration and search."""
    if N < 1:
        raise InvalidArgumentError(f"N = {N} must be at least 1")
    if max_N is not None and max_N < N:
        raise InvalidArgumentError(f"N = {N} must be in [1, {max_N}]")
    if max_fanout < 1:
        raise InvalidArgumentError(f"the maximum fan-out {max_fanout} must be at least 1")
    fams = tuple(families)
    for f in fams:
        if f not in FAMILIES:
            raise InvalidArgumentError(f"unknown family '{f}' (families: {', '.join(FAMILIES)})")
    return fams


def _merge_shapes(N: int, f: int) -> Iterator[tuple[int, int, int, int]]:
    """(R, B1, Bs, middle product) of every merged schedule's outer stages."""
    for R in range(1, N - 3):
        inner = N - R
        for b1 in range(2, min(f, inner) + 1):  # a remainder rank sends B1 messages
            if inner % b1:
                continue
            rest = inner // b1
            for bs in range(2, min(f + 1, rest) + 1):
                if rest % bs or bs - 1 + -(-R // (inner // bs)) > f:
                    continue
                yield R, b1, bs, rest // bs


Structure = tuple[str, "Stage | None", tuple[int, ...], "Stage | None"]
Shell = tuple[str, "Stage | None", int, "Stage | None"]


def shells(
    N: int,
    max_fanout: int = DEFAULT_MAX_FANOUT,
    families: Iterable[str] = FAMILIES,
    keep: Callable[[int], bool] | None = None,
) -> Iterator[Shell]:
    """(family, first stage or None, product of the factor stages between, last stage or None):
    every schedule is one of these shells around an ordered factorisation of the product.
    `keep(product)`: only the shells it keeps (most products past a few thousand have no
    factorisation into the bases: their shells hold no schedule)."""
    fams = check_space(N, max_fanout, families)
    f = useful_fanout(N, max_fanout)
    if "factored" in fams and (keep is None or keep(N)):
        yield "factored", None, N, None
    if "split" in fams:
        for B in range(2, f + 2):
            for T in range(B, N + 1, B):
                if keep is not None and not keep(N - T + T // B):
                    continue
                c = Stage("collapse", B, threshold=T)
                e = Stage("expand", B, threshold=T)
                yield "split", c, N - T + T // B, e
    if "merged" in fams:
        for R, b1, bs, mid in _merge_shapes(N, f):
            if keep is not None and not keep(mid):
                continue
            inner = N - R
            m = Stage("merge", b1, remainder=R, groups=inner // b1, mask=1)
            n = Stage("invmerge", bs, remainder=R, groups=inner // bs, mask=inner // bs)
            yield "merged", m, mid, n


def structures(
    N: int, max_fanout: int = DEFAULT_MAX_FANOUT, families: Iterable[str] = FAMILIES
) -> Iterator[Structure]:
    """(family, first stage or None, factor bases, last stage or None) of every schedule."""
    f = useful_fanout(N, max_fanout)
    for family, head, mid, tail in shells(N, max_fanout, families):
        for fac in _factorisations(mid, f + 1):
            yield family, head, fac, tail


def text_of(head: Stage | None, fac: tuple[int, ...], tail: Stage | None) -> str:
    parts = [f"a{b}" for b in fac]
    if head is not None and tail is not None:
        parts = [head.text, *parts, tail.text]
    return ",".join(parts)


def enumerate_schedules(
    N: int, max_fanout: int = DEFAULT_MAX_FANOUT, families: Iterable[str] = FAMILIES
) -> Iterator[str]:
    """Every valid schedule for N ranks as a stage list ('a8,a4'); '' is the one for N = 1."""
    for _, head, fac, tail in structures(N, max_fanout, families):
        yield text_of(head, fac, tail)


def count_schedules(
    N: int, max_fanout: int = DEFAULT_MAX_FANOUT, families: Iterable[str] = FAMILIES
) -> dict[str, int]:
    """How many schedules enumerate_schedules yields, per family, counted without listing them."""
    fams = check_space(N, max_fanout, families)
    f = useful_fanout(N, max_fanout)
    out = dict.fromkeys(fams, 0)
    if "factored" in fams:
        out["factored"] = _num_factorisations(N, f + 1)
    if "split" in fams:
        out["split"] = sum(
            _num_factorisations(N - T + T // B, f + 1)
            for B in range(2, f + 2)
            for T in range(B, N + 1, B)
        )
    if "merged" in fams:
        out["merged"] = sum(_num_factorisations(mid, f + 1) for *_, mid in _merge_shapes(N, f))
    return out
