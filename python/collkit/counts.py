"""Count vectors of the irregular collectives, as the CLI's --counts writes them.

A form says how to draw a vector for any P, so that one option serves a sweep of P:

- ``1,0,5,...``: the entries as given (P of them; alltoallv: P^2, row r the counts rank r
  sends);
- ``equal(n)``: every entry n (the regular form, as a vector);
- ``random(seed,max)``: uniform in [0, max], drawn from ``seed`` (zeros among them);
- ``skewed(max)`` or ``skewed(max,seed)``: a heavy head, block b (alltoallv: pair r to q, at
  distance b = (q - r) mod P) gets max // (b + 1); with a seed the blocks are shuffled;
- ``zeros-but-one`` or ``zeros-but-one(n)`` or ``zeros-but-one(n,k)``: every entry 0 but entry
  k (default 0) which is n (default 1).

>>> parse_counts("random(7,3)").vector(4)
[3, 2, 2, 3]
>>> parse_counts("skewed(8)").vector(4), parse_counts("zeros-but-one(5,2)").vector(3)
([8, 4, 2, 2], [0, 0, 5])
>>> parse_counts("1,0").vector(3)
Traceback (most recent call last):
...
collkit.errors.InvalidArgumentError: --counts 1,0: 2 entries, but P = 3 needs 3
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from collkit.errors import InvalidArgumentError

__all__ = ["DRIVER_ARG_BYTES", "MAX_ENTRY", "CountSpec", "parse_counts"]

MAX_ENTRY = 1 << 48  # a buffer holds at most 2^48 elements
# collkit_bench takes a job's vectors as one command-line argument, and Linux takes at most
# 128 KiB in one (MAX_ARG_STRLEN): the characters of a job's vectors, kept below that.
DRIVER_ARG_BYTES = 100_000
_MAX_DRAW = 1 << 40  # random / skewed maxima: far past any buffer a sweep verifies
_MAX_PAIR_P = 4096  # alltoallv's P^2 entries (the core's bound)
_FORMS = "1,0,5 / equal(n) / random(seed,max) / skewed(max[,seed]) / zeros-but-one[(n[,k])]"


@dataclass(frozen=True)
class CountSpec:
    """A parsed --counts form; vector(P) draws its entries for P ranks."""

    text: str
    kind: str  # list, equal, random, skewed, zeros_but_one
    args: tuple[int, ...]

    def vector(self, P: int, per_pair: bool = False) -> list[int]:
        """The entries for P ranks: P of them, or P^2 (row-major, rank r to rank q) for
        alltoallv's pairs."""
        if isinstance(P, bool) or not isinstance(P, int) or P < 1:
            raise InvalidArgumentError(f"P must be an integer >= 1, not {P!r}")
        if per_pair and P > _MAX_PAIR_P:
            raise InvalidArgumentError(
                f"--counts {self.text}: P = {P} has {P * P} pairs; a per-pair count matrix "
                f"holds at most P = {_MAX_PAIR_P}"
            )
        n = P * P if per_pair else P
        if self.kind == "list":
            if len(self.args) != n:
                want = f"P^2 = {n}" if per_pair else f"{n}"
                raise InvalidArgumentError(
                    f"--counts {self.text}: {len(self.args)} entries, but P = {P} needs {want}"
                )
            return list(self.args)
        if self.kind == "equal":
            return [self.args[0]] * n
        if self.kind == "random":
            seed, most = self.args
            rng = np.random.default_rng(seed)
            return [int(x) for x in rng.integers(0, most, size=n, endpoint=True)]
        if self.kind == "skewed":
            most = self.args[0]
            dist = [((i % P) - (i // P)) % P if per_pair else i for i in range(n)]
            out = [most // (d + 1) for d in dist]
            if len(self.args) > 1:
                np.random.default_rng(self.args[1]).shuffle(out)
                out = [int(x) for x in out]
            return out
        value, which = self.args
        out = [0] * n
        out[which % n] = value
        return out


def _ints(text: str, form: str, body: str, lo: int, hi: int) -> list[int]:
    parts = [x.strip() for x in body.split(",")]
    out = []
    for x in parts:
        if not re.fullmatch(r"[0-9]+", x):
            raise InvalidArgumentError(
                f"--counts {text}: {form} takes non-negative integers, not {x[:20]!r}"
            )
        v = int(x)
        if not lo <= v <= hi:
            raise InvalidArgumentError(f"--counts {text}: {v} is not in [{lo}, {hi}]")
        out.append(v)
    return out


def parse_counts(text: object) -> CountSpec:
    """A --counts form (see the module's doc); InvalidArgumentError saying what is wrong."""
    if not isinstance(text, str):
        raise InvalidArgumentError(f"--counts takes a string, not {type(text).__name__}")
    shown = text[:60]
    t = text.strip()
    if not t:
        raise InvalidArgumentError(f"--counts is empty: give one of {_FORMS}")
    m = re.fullmatch(r"([a-z][a-z-]*)(?:\((.*)\))?", t)
    if m is None:
        if re.fullmatch(r"[0-9 \t,]+", t):
            return CountSpec(shown, "list", tuple(_ints(shown, "a list", t, 0, MAX_ENTRY)))
        raise InvalidArgumentError(f"--counts {shown!r}: not a count form ({_FORMS})")
    name, body = m.group(1), m.group(2)
    arity = {
        "equal": (1, 1),
        "random": (2, 2),
        "skewed": (1, 2),
        "zeros-but-one": (0, 2),
    }
    if name not in arity:
        raise InvalidArgumentError(f"--counts {shown!r}: unknown form {name!r} ({_FORMS})")
    lo_n, hi_n = arity[name]
    args = [] if body is None or not body.strip() else _ints(shown, name, body, 0, MAX_ENTRY)
    if not lo_n <= len(args) <= hi_n:
        want = f"{lo_n}" if lo_n == hi_n else f"{lo_n} to {hi_n}"
        raise InvalidArgumentError(
            f"--counts {shown}: {name} takes {want} argument(s), not {len(args)}"
        )
    if name in ("random", "skewed"):
        most = args[1] if name == "random" else args[0]
        if most > _MAX_DRAW:
            raise InvalidArgumentError(f"--counts {shown}: max {most} is above 2^40")
    if name == "zeros-but-one":
        args = (args + [1, 0][len(args) :])[:2]
        return CountSpec(shown, "zeros_but_one", tuple(args))
    return CountSpec(shown, name, tuple(args))
