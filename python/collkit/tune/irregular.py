"""The irregular collectives in a tuning campaign: the count vectors tune measures them at, and
how their rules are keyed (docs/tuning.md, "Tuning them").

Each --counts form (collkit.counts, bench's grammar) gives the shape of the vector and each
--sizes size its magnitude, the mean entry in bytes (bytes per block; alltoallv: per pair): at
P ranks the form is written for that mean, in the same grammar, so that every row's `counts` is
a form bench draws the same vector from:

- ``equal(x)`` -> ``equal(n)``: every entry the mean n (the regular call's layout);
- ``random(seed,x)`` -> ``random(seed,2n)``: uniform in [0, 2n], mean n, the seed kept;
- ``skewed(x[,seed])`` -> ``skewed(M[,seed])``, M the smallest whose entries sum to at least
  the entries times n;
- ``zeros-but-one(x,k)`` -> ``zeros-but-one(E n,k)``: the whole E entries' total in entry k;
- a list -> the list scaled to a total of E n (its proportions kept, rounded to whole elements
  by the largest remainders).

The interposition library keys allgatherv and reduce_scatter by the call's total (the sum of
the vector times the type size), which every rank sees; gatherv, scatterv and alltoallv by P
alone (no size of the call is the same on every rank without communicating), so only a rule of
every size routes them (mpi/src/pmpi.cpp).
"""

from __future__ import annotations

from collkit.collectives import COLLECTIVES, collective
from collkit.counts import DRIVER_ARG_BYTES, CountSpec, parse_counts
from collkit.errors import InvalidArgumentError

__all__ = [
    "ARG_BYTES",
    "BY_P_ALONE",
    "BY_TOTAL",
    "DEFAULT_FORMS",
    "EVERY_SIZE",
    "IRREGULAR",
    "at_size",
    "batches",
    "forms_at",
    "is_irregular",
]


def _whole_vector(name: str) -> bool:
    """Whether every rank of the call has its whole count vector (mpi/src/call_table.hpp's
    whole_vector): a buffer of P blocks on every rank."""
    spec = collective(name)
    everywhere = any(
        spec[b]["at_root"] == "P" and spec[b]["elsewhere"] == "P" for b in ("in", "out")
    )
    return spec["counts"] == "per_rank" and everywhere


IRREGULAR: tuple[str, ...] = tuple(c for c in COLLECTIVES if collective(c)["counts"] != "none")
BY_TOTAL: tuple[str, ...] = tuple(c for c in IRREGULAR if _whole_vector(c))
BY_P_ALONE: tuple[str, ...] = tuple(c for c in IRREGULAR if c not in BY_TOTAL)
# The byte range of a rule of every size: the only one the library routes a call keyed by P
# alone with (collkit/tuning.hpp's kMaxRuleBytes).
EVERY_SIZE = (0, 1 << 62)
# The forms measured where --counts is not given: the regular layout and a random one (seed 1,
# zeros among its entries), each at every size.
DEFAULT_FORMS = ("equal(1)", "random(1,2)")


def is_irregular(name: str) -> bool:
    return name in IRREGULAR


def _per_pair(name: str) -> bool:
    return str(collective(name)["counts"]) == "per_pair"


def _skewed_total(most: int, P: int, per_pair: bool) -> int:
    # every row of a per-pair matrix holds the distances 0..P-1 once
    return sum(most // (d + 1) for d in range(P)) * (P if per_pair else 1)


def _scaled(weights: list[int], total: int) -> list[int]:
    """`weights` scaled to sum to `total`, whole numbers by the largest remainders."""
    s = sum(weights)
    base = [w * total // s for w in weights]
    rest = total - sum(base)
    order = sorted(range(len(weights)), key=lambda i: (-(weights[i] * total % s), i))
    for i in order[:rest]:
        base[i] += 1
    return base


def at_size(form: str | CountSpec, name: str, P: int, mean: int) -> str:
    """The form (bench's grammar) that `form` is at P ranks of collective `name` with a mean
    entry of `mean` elements; an InvalidArgumentError where it cannot be (a list of another
    length, or of zeros only; a maximum past the grammar's)."""
    spec = form if isinstance(form, CountSpec) else parse_counts(form)
    per_pair = _per_pair(name)
    entries = P * P if per_pair else P
    target = entries * mean
    if spec.kind == "equal":
        out = f"equal({mean})"
    elif spec.kind == "random":
        out = f"random({spec.args[0]},{2 * mean})"
    elif spec.kind == "zeros_but_one":
        out = f"zeros-but-one({target},{spec.args[1]})"
    elif spec.kind == "skewed":
        lo, hi = 0, max(target, 1)
        while lo < hi:  # the smallest maximum whose entries reach the target
            mid = (lo + hi) // 2
            if _skewed_total(mid, P, per_pair) >= target:
                hi = mid
            else:
                lo = mid + 1
        out = f"skewed({lo}{',' + str(spec.args[1]) if len(spec.args) > 1 else ''})"
    else:
        weights = spec.vector(P, per_pair=per_pair)  # the length checked for this P
        if not any(weights):
            raise InvalidArgumentError(
                f"--counts {spec.text}: a list of zeros has no proportions to scale to a size"
            )
        out = ",".join(map(str, _scaled(weights, target)))
    parse_counts(out).vector(P, per_pair=per_pair)  # in the grammar's bounds, as bench draws it
    return out


# A campaign's vectors go to as many driver jobs as keep each job's argument within
# DRIVER_ARG_BYTES (collkit.counts), and a single vector past it is refused before anything runs.
ARG_BYTES = DRIVER_ARG_BYTES


def _text_len(form: str, name: str, P: int) -> int:
    """The characters of the vector `form` draws at P as the driver's argument (a comma list)."""
    per_pair = _per_pair(name)
    if (P * P if per_pair else P) * 2 > ARG_BYTES:
        return ARG_BYTES + 1  # a digit and a comma each at least: past it, no need to draw
    return len(",".join(map(str, parse_counts(form).vector(P, per_pair=per_pair)))) + 1


def batches(forms: list[str], name: str, P: int) -> list[list[str]]:
    """`forms` in order, in batches whose vectors at P fit in one driver argument together; an
    InvalidArgumentError for a vector that fits in none."""
    out: list[list[str]] = []
    used = ARG_BYTES
    for f in forms:
        n = _text_len(f, name, P)
        if n > ARG_BYTES:
            entries = P * P if _per_pair(name) else P
            raise InvalidArgumentError(
                f"{name} at P = {P}: the vector {f[:60]} ({entries} entries) is longer than "
                f"the {ARG_BYTES} characters collkit_bench's command line carries: lower -np "
                "or the sizes"
            )
        if used + n > ARG_BYTES:
            out.append([])
            used = 0
        out[-1].append(f)
        used += n
    return out


def forms_at(forms: list[str], name: str, P: int, elem: int, sizes: list[int]) -> list[str]:
    """The forms measured at P: each of `forms` at each size (bytes per block, `elem`-byte
    elements), in order of size, then form, each once."""
    out: dict[str, None] = {}
    for s in sizes:
        for f in forms:
            out.setdefault(at_size(f, name, P, s // elem))
    return list(out)
