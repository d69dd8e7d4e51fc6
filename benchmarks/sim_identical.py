"""No behaviour change in the simulator: this build against another, run for run, bit for bit.

    .venv/bin/python benchmarks/sim_identical.py --against DIR [--max-P 17] [--grid]
        [--P 1000,65537 --algorithms bcast:binomial,bcast:knomial] [--plain]

DIR holds the other build's `collkit` package (e.g. a copy of main's site-packages/collkit),
put first on PYTHONPATH for a child process. Both builds simulate every registry algorithm
(default parameters; with --grid every point of its parameter grid) at every P from 1 to
--max-P, rooted collectives at root 0 and P - 1, at 0, 8 and 4096 bytes, under every model,
with noise, skew and a fat tree with congestion: once with a timeline (the whole Schedule is
generated first) and once without (each rank's program pulled from the generator, as large runs
are). Each run's makespans, finish times and counts, and the timeline's op and message times and
critical path, are hashed as raw float64 bytes. With --plain the runs have no noise, skew or
topology (the engine's quiet paths, which the default runs never take). Prints the number of
runs and the runs whose digests differ (none: exit 0). Not a speed test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import hashlib, json, sys
import numpy as np
import collkit
from collkit import _core

Ps = [int(x) for x in sys.argv[1].split(",")]
grid = sys.argv[2] == "grid"
only = [x for x in sys.argv[3].split(",") if x]
plain = sys.argv[4] == "plain"
models = [m["name"] for m in _core.models()] if hasattr(_core, "models") else [
    "postal", "pipelined_postal", "logp", "loggp", "loggops"]
kw = dict(noise="exponential(20ns)", skew="uniform(0,50ns)", seed=3, trials=2,
          topology="fattree(k=2,hop=30ns,link=0.5ns,rpn=1)")
if plain:
    kw = dict(seed=3, trials=1)
extra = {"postal": dict(beta="0.2ns"), "pipelined_postal": dict(beta="0.2ns"),
         "logp": {}, "loggp": dict(G="0.1ns"), "loggops": dict(G="0.1ns", O="0.05ns", S=64)}
rooted = {"bcast", "reduce", "gather", "scatter"}
out = {}
for a in collkit.algorithms():
    if only and str(a["name"]) not in only:
        continue
    names = [str(g) for g in a["grid"]] if grid and a["grid"] else [str(a["name"])]
    for name in names:
        for P in Ps:
            roots = (0, P - 1) if a["collective"] in rooted and P > 1 else (0,)
            for root in roots:
                for nbytes in (0, 8, 4096):
                    for m in models:
                        for timeline in (True, False):
                            key = f"{name} P={P} root={root} {nbytes}B {m} timeline={timeline}"
                            try:
                                r = collkit.simulate(name, P, bytes=nbytes, model=m, root=root,
                                                     timeline=timeline, **kw, **extra[m])
                            except collkit.CollkitError as e:
                                out[key] = "error: " + str(e).split(":")[0]
                                continue
                            h = hashlib.sha256()
                            arrs = [r.makespans, r.finish]
                            if timeline:
                                arrs += [r.op_start, r.op_end, r.msg_depart, r.msg_arrive,
                                         r.critical_path]
                            for arr in arrs:
                                h.update(np.ascontiguousarray(arr).tobytes())
                            h.update(f"{r.messages} {r.bytes_sent} {r.ops} {r.events}".encode())
                            out[key] = h.hexdigest()
print(json.dumps(out))
"""


def digests(
    env: dict[str, str], Ps: list[int], grid: bool, only: str, plain: bool
) -> dict[str, str]:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            ",".join(map(str, Ps)),
            "grid" if grid else "default",
            only,
            "plain" if plain else "noisy",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return dict(json.loads(out.stdout))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--against", required=True, help="a folder holding the other collkit")
    ap.add_argument("--max-P", type=int, default=17)
    ap.add_argument("--grid", action="store_true", help="every point of each parameter grid")
    ap.add_argument("--P", help="these P (comma list) instead of 1 .. --max-P")
    ap.add_argument("--algorithms", default="", help="only these algorithms (comma list)")
    ap.add_argument("--plain", action="store_true", help="no noise, skew or topology")
    args = ap.parse_args()
    Ps = [int(x) for x in args.P.split(",")] if args.P else list(range(1, args.max_P + 1))
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    a = digests({**base, "PYTHONPATH": args.against}, Ps, args.grid, args.algorithms, args.plain)
    b = digests(base, Ps, args.grid, args.algorithms, args.plain)
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    errors = sum(1 for v in b.values() if v.startswith("error"))
    print(f"{len(b)} runs ({errors} refused by both alike), {len(differ)} differ")
    for k in differ[:20]:
        print(f"  {k}: {a.get(k)} vs {b.get(k)}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
