"""The torus shapes worth trying for the torus allreduces (allreduce:bucket, allreduce:swing).

Their `dims` parameter lays the P ranks out row-major on a torus; its registered grid holds small
shapes for the test matrix (4x2, 2x2x2, ...), whose product is P for a few P only. For any P the
shapes worth tuning are one ring (`P`) and the most balanced shape of two and of three
dimensions: bucket's 2 (d_t - 1) start-ups per dimension fall from 2 (P - 1) on a ring to about
4 sqrt P and 6 cbrt P ([Jain 2010]).

>>> from collkit.analysis.torus import candidate_dims
>>> candidate_dims(64), candidate_dims(12), candidate_dims(7)
(['P', '8x8', '4x4x4'], ['P', '4x3', '3x2x2'], ['P'])
>>> candidate_dims(32, power_of_two=True)
['P', '8x4', '4x4x2']
"""

from __future__ import annotations

from collkit.errors import InvalidArgumentError

__all__ = ["balanced_dims", "candidate_dims"]


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def balanced_dims(P: int, k: int, *, power_of_two: bool = False) -> tuple[int, ...] | None:
    """The k sizes, each >= 2 (powers of two with `power_of_two`), whose product is P and whose
    largest is least (then the next largest, ...), in descending order; None if there are none."""
    if P < 1 or k < 1:
        raise InvalidArgumentError(f"P = {P} and k = {k} must be >= 1")
    if power_of_two and P & (P - 1):
        return None
    divs = [d for d in _divisors(P) if d >= 2 and (not power_of_two or not d & (d - 1))]

    def best(n: int, k: int, cap: int) -> tuple[int, ...] | None:
        # the shape of n in k sizes <= cap, descending, with the least largest size
        if k == 1:
            return (n,) if n in divs and n <= cap else None
        for d in divs:  # ascending: the first that fits has the least largest size
            if d > cap or d**k < n or n % d:
                continue
            rest = best(n // d, k - 1, d)
            if rest is not None:
                return (d, *rest)
        return None

    return best(P, k, P)


def candidate_dims(P: int, *, power_of_two: bool = False) -> list[str]:
    """`dims` values worth trying at P, as names write them: 'P' (one ring) and the most
    balanced shapes of two and three dimensions that exist ('8x8', '4x4x4')."""
    out = ["P"]
    for k in (2, 3):
        shape = balanced_dims(P, k, power_of_two=power_of_two)
        if shape is not None:
            out.append("x".join(str(d) for d in shape))
    return out
