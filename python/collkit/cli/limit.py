"""The count limit from which a large-count protocol wins (Rabenseifner 1997), per P, with the
bandwidths of the new and the old protocol and their ratio, printed in the shape of Rabenseifner
1997's table.

Times come from the alpha-beta-gamma closed forms (alpha: time per message, beta: time per byte
sent, gamma: time per byte reduced). Times take a unit (ps, ns, us, ms, s; a bare number is ns),
per-byte costs are ns/B or a bandwidth (2.5GB/s). The bandwidth is bytes per rank / time at
--ref-bytes.

Defaults: reduce compares reduce:rabenseifner with reduce:folded_binomial (its switch-safe
small-count partner); allreduce compares allreduce:rabenseifner and allreduce:ring with
allreduce:rd.

Examples:
  collkit limit allreduce
  collkit limit reduce -P 2..64 --alpha 5us --beta 1ns --gamma 1GB/s --per-p
  collkit limit allreduce --new allreduce:ring(seg=64KiB) --ref-bytes 16MiB
Exit status: 0, or 2 for bad input.
"""

from __future__ import annotations

import argparse

from collkit import units
from collkit.algorithms import Algorithm
from collkit.analysis.limits import SEED_001_P, AlphaBetaGamma, format_limit_table, limit_rows
from collkit.cli._common import (
    add_json_argument,
    add_p_argument,
    algorithm,
    parse_bytes,
    parse_elem_size,
    parse_per_byte,
    parse_time,
    print_json_lines,
)
from collkit.errors import InvalidArgumentError

NAME = "limit"
HELP = "count limit of the large-count protocols (Rabenseifner 1997's table), by model"

DEFAULTS = {
    "reduce": ("reduce:folded_binomial", ["reduce:rabenseifner"]),
    "allreduce": ("allreduce:rd", ["allreduce:rabenseifner", "allreduce:ring"]),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("collective", choices=sorted(DEFAULTS), help="reduce or allreduce")
    add_p_argument(p, lists=True, default=SEED_001_P)
    d = AlphaBetaGamma()
    for name, parse, what in (
        ("alpha", parse_time, "time per message"),
        ("beta", parse_per_byte, "time per byte sent"),
        ("gamma", parse_per_byte, "time per byte reduced"),
    ):
        default = getattr(d, name) * units.NS_PER_S
        unit = "ns" if parse is parse_time else "ns/B"
        p.add_argument(
            f"--{name}",
            type=parse,
            default=default,
            metavar="TIME" if parse is parse_time else "PER_BYTE",
            help=f"{what} (default {default:g}{unit})",
        )
    p.add_argument("--old", type=algorithm, default=None, metavar="ALGO", help="small-count")
    p.add_argument(
        "--new", type=algorithm, action="append", default=None, metavar="ALGO", help="large-count"
    )
    p.add_argument(
        "--elem-size", type=parse_elem_size, default=8, metavar="BYTES", help="default 8"
    )
    p.add_argument(
        "--ref-bytes",
        type=parse_bytes,
        default=1 << 20,
        metavar="BYTES",
        help="bytes per rank at which bandwidths are given (default 1MiB)",
    )
    p.add_argument("--per-p", action="store_true", help="also one line per P")
    add_json_argument(
        p,
        "one (new algorithm, P) a line: collective, new, old, P, limit_count (null: never), "
        "bw_new_Bps, bw_old_Bps, ratio, ref_bytes and the model's alpha_s, beta_s_per_B, "
        "gamma_s_per_B",
    )


def run(args: argparse.Namespace) -> int:
    if args.ref_bytes < args.elem_size:  # 0 B has no bandwidth: the ratio printed as inf
        raise InvalidArgumentError(
            f"--ref-bytes {args.ref_bytes}: bandwidths are given at a size of at least one "
            f"{args.elem_size}-byte element"
        )
    old_default, new_default = DEFAULTS[args.collective]
    old: Algorithm = args.old or Algorithm(old_default)
    news: list[Algorithm] = args.new or [Algorithm(n) for n in new_default]
    for a in [old, *news]:
        if a.collective != args.collective:
            raise InvalidArgumentError(f"{a.canonical} is not a {args.collective} algorithm")
    s = units.seconds
    model = AlphaBetaGamma(s(args.alpha), s(args.beta), s(args.gamma))
    if args.json:
        print_json_lines(
            {
                "collective": args.collective,
                "new": new.canonical,
                "old": old.canonical,
                "P": r.P,
                "limit_count": r.limit,
                "bw_new_Bps": r.bw_new,
                "bw_old_Bps": r.bw_old,
                "ratio": r.ratio,
                "ref_bytes": args.ref_bytes,
                "elem_size": args.elem_size,
                "alpha_s": model.alpha,
                "beta_s_per_B": model.beta,
                "gamma_s_per_B": model.gamma,
            }
            for new in news
            for r in limit_rows(
                old.canonical, new.canonical, args.P, model, args.ref_bytes, args.elem_size
            )
        )
        return 0
    print(
        f"alpha-beta-gamma model: alpha = {model.alpha:g} s, beta = {model.beta:g} s/B, "
        f"gamma = {model.gamma:g} s/B; counts of {args.elem_size}-byte elements; bandwidth at "
        f"{args.ref_bytes} bytes per rank"
    )
    for new in news:
        rows = limit_rows(
            old.canonical, new.canonical, args.P, model, args.ref_bytes, args.elem_size
        )
        print()
        print(format_limit_table(f"{args.collective}: {new.canonical} vs {old.canonical}", rows))
        if args.per_p:
            print(f"\n  {'P':>6} {'limit':>10} {'new MB/s':>10} {'old MB/s':>10} {'ratio':>6}")
            for r in rows:
                lim = "never" if r.limit is None else str(r.limit)
                print(
                    f"  {r.P:>6} {lim:>10} {r.bw_new / 1e6:>10.1f} {r.bw_old / 1e6:>10.1f} "
                    f"{r.ratio:>6.2f}"
                )
    return 0
