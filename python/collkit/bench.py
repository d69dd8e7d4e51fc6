"""Benchmark campaigns over a real MPI: for each P, algorithm and size, one row of statistics.

A campaign runs the driver (`collkit_bench`, built once per MPI by collkit.mpirun) once per
(P, algorithm) with the sizes still missing, reads the rows it prints as they come, and appends
each to the results file at once: an interrupted campaign loses at most the row in flight, and a
rerun measures only what is missing.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import platform
import socket
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from collkit.algorithms import Algorithm
from collkit.collectives import COLLECTIVES, REDUCTIONS, collective
from collkit.errors import CollkitError, InvalidArgumentError, UnsupportedError
from collkit.mpirun import MPI, PLACEMENTS, allocation, build, launch_command, launch_env
from collkit.results import STAT_FIELDS, ResultStore, Row

DATATYPES = {"double": 8, "float": 4, "int": 4, "char": 1}


def machine_name() -> str:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor()
    return f"{socket.gethostname()} ({cpu or platform.machine()})"


@dataclass
class Campaign:
    collective: str
    algorithms: list[str]  # collkit names, "native", or the MPI's own: mpich:ring / ompi:ring
    P: list[int]
    sizes: list[int]  # bytes per rank (per block: collectives.PER_BLOCK)
    datatype: str = ""
    iterations: int = 200
    warmup: int = 20
    block: int = 1
    sync: str = "barrier"
    max_ms: int = 2000  # time budget per row
    validate: bool = True
    raw: bool = False
    root: int = 0
    hosts: str | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    # Rank placements swept (core, socket, node; "" is the MPI's default); rows record it.
    placements: list[str] = field(default_factory=lambda: [""])

    def __post_init__(self) -> None:
        for place in self.placements:
            if place and place not in PLACEMENTS:
                raise InvalidArgumentError(
                    f"placement '{place}' must be one of {', '.join(PLACEMENTS)}"
                )
        if not self.placements:
            raise InvalidArgumentError("no placement to run (use '' for the MPI's default)")
        if self.collective not in COLLECTIVES:
            raise InvalidArgumentError(
                f"unknown collective '{self.collective}' (one of {', '.join(COLLECTIVES)})"
            )
        if not self.datatype:
            self.datatype = "double" if self.collective in REDUCTIONS else "char"
        if self.datatype not in DATATYPES:
            raise InvalidArgumentError(
                f"datatype '{self.datatype}' must be one of {', '.join(DATATYPES)}"
            )
        if self.sync not in ("barrier", "window"):
            raise InvalidArgumentError("sync must be 'barrier' or 'window'")
        if self.iterations < 1 or self.warmup < 0 or self.block < 1:
            raise InvalidArgumentError("iterations and block must be >= 1, warmup >= 0")
        if collective(self.collective)["out"] == {"at_root": "none", "elsewhere": "none"}:
            self.sizes = [0]  # no data (barrier)
        self.algorithms = [self.normalize(a) for a in self.algorithms]

    def normalize(self, name: str) -> str:
        """'rd' -> 'allreduce:rd'; checks collkit names against the registry."""
        if name == "native" or name.startswith(("mpich:", "ompi:")):
            return name
        full = name if ":" in name else f"{self.collective}:{name}"
        algo = Algorithm(full)  # raises AlgorithmNameError with a caret
        if algo.collective != self.collective:
            raise InvalidArgumentError(
                f"'{name}' is a {algo.collective} algorithm, not {self.collective}"
            )
        return str(algo.canonical)

    def count(self, size: int) -> int:
        return size // DATATYPES[self.datatype]


ProgressFn = Callable[[str, Row | None], None]


def run_campaign(
    c: Campaign, mpi: MPI, store: ResultStore, progress: ProgressFn | None = None
) -> list[Row]:
    """Measures every row of the campaign not yet in `store`; returns the rows it added."""
    bindir = build(mpi)
    machine = machine_name()
    added: list[Row] = []
    for P, place in itertools.product(c.P, c.placements):
        alloc = allocation(P, c.hosts) + (f", map-by {place}" if place else "")
        for algo in c.algorithms:
            force: dict[str, str] = {}
            driver_algo = algo
            if algo.startswith(("mpich:", "ompi:")):
                force = mpi.force_env(c.collective, algo)
                driver_algo = "native"
            env, settings = launch_env(mpi, P, {**c.extra_env, **force}, hosts=c.hosts)

            def template(
                size: int,
                algo: str = algo,
                settings: str = settings,
                P: int = P,
                alloc: str = alloc,
            ) -> Row:
                return Row(
                    collective=c.collective,
                    algorithm=algo,
                    P=P,
                    bytes=c.count(size) * DATATYPES[c.datatype],
                    datatype=c.datatype,
                    count=c.count(size),
                    mpi=mpi.version,
                    machine=machine,
                    allocation=alloc,
                    settings=settings,
                    sync=c.sync,
                    block=c.block,
                )

            missing = [s for s in c.sizes if template(s) not in store]
            if not missing:
                if progress:
                    progress(f"P={P} {algo}: all {len(c.sizes)} sizes already measured", None)
                continue
            if progress:
                progress(f"P={P} {algo}: measuring {len(missing)} sizes", None)
            args = [
                str(bindir / "collkit_bench"),
                "--collective",
                c.collective,
                "--algos",
                driver_algo,
                "--sizes",
                ",".join(map(str, missing)),
                "--datatype",
                c.datatype,
                "--iters",
                str(c.iterations),
                "--warmup",
                str(c.warmup),
                "--block",
                str(c.block),
                "--sync",
                c.sync,
                "--max-ms",
                str(c.max_ms),
                "--root",
                str(c.root),
                "--native-label",
                algo,
            ]
            if c.validate:
                args.append("--validate")
            if c.raw:
                args.append("--raw")
            cmd = launch_command(mpi, P, args, hosts=c.hosts, map_by=place)
            for row in _stream_rows(cmd, env, template):
                if store.append(row):
                    added.append(row)
                if progress:
                    progress(f"P={P} {algo} {row.bytes} B", row)
    store.write_csv()
    return added


def _stream_rows(
    cmd: Sequence[str], env: dict[str, str], template: Callable[[int], Row]
) -> Iterator[Row]:
    """Runs the driver and yields each row the moment it prints it."""
    proc = subprocess.Popen(
        list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        for line in proc.stdout:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                continue
            if d.get("kind") != "row":
                continue
            row = template(int(d["bytes"]))
            row.date = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
            row.count = int(d["count"])
            if "error" in d:
                row.error = str(d["error"])
            else:
                for k in STAT_FIELDS:
                    setattr(row, k, float(d[k]))
                row.iterations = int(d["iterations"])
                row.warmup = int(d["warmup"])
                row.valid = d.get("valid")
                row.transport = str(d.get("transport", ""))
                row.samples = [float(x) for x in d.get("samples", [])]
            yield row
        rc = proc.wait()
        if rc != 0:
            raise UnsupportedError(
                f"{' '.join(cmd[:6])} ... failed (exit {rc}):\n{proc.stderr.read()[-2000:]}"
            )
    finally:
        if proc.poll() is None:  # interrupted: stop the run, keep what was written
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def run_multicast(
    mpi: MPI,
    P: int,
    *,
    max_b: int = 16,
    iterations: int = 1000,
    warmup: int = 100,
    bytes_: int = 8,
    fit_max_b: int = 8,
) -> list[dict[str, object]]:
    """The multicast benchmark of seed 002 §5.1: JSON records per (mode, b), then the fits."""
    if P < 2:
        raise InvalidArgumentError("the multicast benchmark needs P >= 2")
    bindir = build(mpi)
    env, _ = launch_env(mpi, P)
    cmd = launch_command(
        mpi,
        P,
        [
            str(bindir / "collkit_multicast"),
            "--max-b",
            str(max_b),
            "--iters",
            str(iterations),
            "--warmup",
            str(warmup),
            "--bytes",
            str(bytes_),
            "--fit-max-b",
            str(fit_max_b),
        ],
    )
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise UnsupportedError(
            f"collkit_multicast failed (exit {r.returncode}):\n{r.stderr[-2000:]}"
        )
    return [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]


def plot(rows: Sequence[Row], path: str | Path, title: str = "") -> None:
    """Median latency against size, one line per (algorithm, P), quartiles shaded."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise UnsupportedError("plotting needs matplotlib: pip install matplotlib") from e
    fig, ax = plt.subplots(figsize=(7, 4.5))
    groups: dict[tuple[str, int], list[Row]] = {}
    for r in rows:
        if not r.error:
            groups.setdefault((r.algorithm, r.P), []).append(r)
    for (algo, P), rs in sorted(groups.items()):
        rs.sort(key=lambda r: r.bytes)
        x = [max(r.bytes, 1) for r in rs]
        ax.plot(x, [r.median for r in rs], marker="o", ms=3, label=f"{algo} P={P}")
        ax.fill_between(x, [r.q1 for r in rs], [r.q3 for r in rs], alpha=0.2)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bytes per rank")
    ax.set_ylabel("latency (µs), median, quartiles shaded")
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


__all__ = ["Campaign", "CollkitError", "machine_name", "plot", "run_campaign", "run_multicast"]
