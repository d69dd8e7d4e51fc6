"""The tour's step on two emulated nodes (root only; docs/cluster.md): collkit's node-aware
allreduce against recursive doubling and the MPI's own, on 2 nodes x 1 and 2 nodes x 2 ranks."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from collkit import cluster


def step(console: Console, run: Callable[[list[str]], int], out: Path, quick: bool) -> int:
    """`run` is the tour's: it prints the command and runs it."""
    if why := cluster.root_reason():
        console.print(f"skipped: {why}")
        return 0
    cluster.cleanup()  # what a crashed tour left
    name = f"tour{os.getpid() % 100000}"
    console.print(f"[bold cyan]$ collkit cluster up --name {name} --nodes 2[/bold cyan]")
    with cluster.emulated(name, 2) as c:  # owned by the tour: taken down however it ends
        console.print(c.describe() + f"; host file {c.hostfile}")
        words = c.run(["sh", "-c", "hostname; ip -o -4 addr show dev ck0"], node=1).stdout.split()
        if len(words) > 4:  # "n1", "2:", "ck0", "inet", "10.213.0.2/24", ...
            console.print(f"node 1 is host {words[0]}, address {words[4]}")
        argv = [
            "bench", "allreduce", "--algos", "hier,rd,native", "-np", "2,4",
            "--sizes", "8B..1KiB" if quick else "8B..16KiB", "--iters", "50",
            "--hosts", str(c.hostfile), "-o", str(out / "bench-2nodes.jsonl"),
        ]  # fmt: skip
        code = run(argv)
        console.print(f"[bold cyan]$ collkit cluster down {shlex.quote(name)}[/bold cyan]")
    console.print(
        "[dim]2 nodes x 1 and 2 x 2 ranks; TCP through a bridge between the nodes, shared "
        "memory inside one. The nodes share this machine's cores: the times are emulated, "
        "not a cluster's.[/dim]"
    )
    return code
