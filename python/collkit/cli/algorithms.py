"""List the registered algorithms, or show one in full.

Examples:
  collkit algorithms                  every algorithm, one line each
  collkit algorithms allreduce        those of one collective
  collkit algorithms allreduce:rd     one algorithm: parameters, restrictions, cost, reference
  collkit algorithms --json           machine-readable
"""

from __future__ import annotations

import argparse
import json
import re

from collkit.algorithms import Algorithm, algorithms
from collkit.cli._common import console
from collkit.cli._common import table as new_table
from collkit.collectives import COLLECTIVES, collectives
from collkit.errors import InvalidArgumentError

NAME = "algorithms"
HELP = "list algorithms with their parameters and documentation"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "which",
        nargs="?",
        default=None,
        metavar="COLLECTIVE|ALGO",
        help=f"a collective ({', '.join(COLLECTIVES)}) or one algorithm name",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument(
        "--markdown",
        action="store_true",
        help="print the reference page docs/algorithms.md (generated from the registry)",
    )


def _restrictions(spec: dict[str, object]) -> str:
    r = spec["restrictions"]
    assert isinstance(r, dict)
    out = []
    if r["exact_op"]:
        out.append("an op exact under any grouping (integer sum, product, min, max; bitwise)")
    elif r["commutative_op"]:
        out.append("commutative op")
    if r["power_of_two"]:
        out.append("P = 2^k")
    if r["min_P"] > 1 and r["min_P"] == r["max_P"]:
        out.append(f"P = {r['min_P']}")
    elif r["min_P"] > 1:
        out.append(f"P >= {r['min_P']}")
    if r["max_P"] > 0 and r["min_P"] != r["max_P"]:
        out.append(f"P <= {r['max_P']}")
    if r.get("needs_placement"):
        out.append("needs the placement of ranks on nodes (--rpn, --order)")
    if r.get("all_counts"):
        out.append("reads other ranks' counts (an MPI caller gathers them first)")
    return ", ".join(out) or "none"


def _params(spec: dict[str, object]) -> str:
    ps = spec["params"]
    assert isinstance(ps, list)
    if not ps:
        return "-"
    return ", ".join(f"{p['name']}={p['default'] or '…'}" for p in ps)


# The specification documents as the registrations cite them, and their entries in
# docs/references.md (the one bibliography).
CITATIONS = {
    "Ruefenacht, Bull, Booth, Parallel Computing 2017": "ruefenacht2017",
    "Ruefenacht et al. 2017": "ruefenacht2017",
    "Ruefenacht et al. poster": "ruefenacht-poster",
    'Rabenseifner, "New optimized MPI reduce algorithm", 1997': "rabenseifner",
    "Rabenseifner 1997": "rabenseifner",
    "Fan & Kumar, SC22 poster (radix-r Bruck)": "fan2022",
    "Fan & Kumar 2022": "fan2022",
    "the latency-model slides": "latency-models",
    "The latency-model slides": "latency-models",
}


def linked(text: str) -> str:
    """`text` with the citations of CITATIONS linked to docs/references.md."""
    pattern = "|".join(re.escape(k) for k in sorted(CITATIONS, key=len, reverse=True))
    return re.sub(pattern, lambda m: f"[{m[0]}](references.md#{CITATIONS[m[0]]})", text)


def markdown() -> str:
    """docs/algorithms.md, generated from the registry (a test keeps the file up to date)."""
    lines = [
        "# Algorithms",
        "",
        "Generated from the registry by `collkit algorithms --markdown`; do not edit by hand.",
        "Each algorithm lives in `core/algorithms/<collective>/<name>.cpp`.",
        "",
    ]
    for c in collectives():
        coll = c["name"]
        specs = algorithms(coll)
        lines += [f"## {coll}", "", f"`{c['mpi']}`: {c['summary']}.", ""]
        if not specs:
            lines += ["None yet.", ""]
            continue
        for s in specs:
            lines += [
                f"### `{s['name']}`",
                "",
                f"{s['summary']}",
                "",
                f"- **Phases**: {linked(s['phases'])}",
                f"- **Cost**: {linked(s['cost'])}",
                f"- **Restrictions**: {_restrictions(s)}",
                f"- **Reference**: {linked(s['reference'])}",
            ]
            for p in s["params"]:
                default = f", default `{p['default']}`" if p["default"] else ""
                lines.append(f"- **Parameter** `{p['name']}` ({p['type']}{default}): {p['doc']}")
            if s["mpi_equivalents"]:
                same = ", ".join(f"`{e}`" for e in s["mpi_equivalents"])
                lines.append(f"- **The MPIs' own**: {same}")
            lines.append("")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    out = console()
    if args.markdown:
        print(markdown(), end="")
        return 0
    which: str | None = args.which
    if which is not None and not which.strip():  # '' listed nothing and exited 0
        raise InvalidArgumentError(
            f"an empty name: give a collective ({', '.join(COLLECTIVES)}) or an algorithm name"
        )
    if which and ":" in which:
        spec = Algorithm(which).spec
        if args.json:
            print(json.dumps(spec, indent=2))
            return 0
        out.print(f"[bold]{spec['name']}[/bold]: {spec['summary']}")
        out.print(f"  phases:       {spec['phases']}")
        out.print(f"  cost:         {spec['cost']}")
        out.print(f"  restrictions: {_restrictions(spec)}")
        out.print(f"  reference:    {spec['reference']}")
        if spec["mpi_equivalents"]:
            out.print(f"  the MPIs' own: {', '.join(spec['mpi_equivalents'])}")
        for p in spec["params"]:
            rng = ""
            if p["min"] is not None or p["max"] is not None:
                rng = (
                    f" in [{p['min'] if p['min'] is not None else '-inf'}, "
                    f"{p['max'] if p['max'] is not None else 'inf'}]"
                )
            default = f" (default {p['default']})" if p["default"] else ""
            out.print(f"  param {p['name']}: {p['type']}{rng}{default}: {p['doc']}")
        return 0
    if which and which not in COLLECTIVES:  # main() prints it on stderr, not into the table
        raise InvalidArgumentError(
            f"unknown collective '{which}' ({', '.join(COLLECTIVES)}, or an algorithm name)"
        )
    specs = algorithms(which)
    if args.json:
        print(json.dumps(specs, indent=2))
        return 0
    table = new_table(f"collkit algorithms{' for ' + which if which else ''}")
    for col in ("name", "parameters", "restrictions", "cost", "summary"):
        table.add_column(col, overflow="fold", no_wrap=col == "name")
    for s in specs:
        table.add_row(s["name"], _params(s), _restrictions(s), s["cost"], s["summary"])
    out.print(table)
    if not specs:
        out.print("no algorithms registered for this collective yet")
    return 0
