"""Benchmark campaigns over a real MPI: for each P, algorithm and size, one row of statistics.

A campaign runs the driver (`collkit_bench`, built once per MPI by collkit.mpi.programs) once per
(P, algorithm) with the sizes still missing, reads the rows it prints as they come, and appends
each to the results file at once: an interrupted campaign loses at most the row in flight, and a
rerun measures only what is missing.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import itertools
import json
import platform
import socket
import subprocess
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from collkit.algorithms import Algorithm, parse_row_name
from collkit.cli._common import check_launchable, input_file
from collkit.collectives import COLLECTIVES, REDUCTIONS, ROOTED, collective, collectives
from collkit.counts import DRIVER_ARG_BYTES, parse_counts
from collkit.drift import Block, attach_rounds, load_avg_1m, suspect_reason
from collkit.errors import CollkitError, InvalidArgumentError, UnsupportedError
from collkit.mpi import (
    MPI,
    PLACEMENTS,
    allocation,
    build,
    find_mpi,
    launch_command,
    launch_env,
)
from collkit.progress import CampaignProgress, Ticker
from collkit.results import PATTERNS, STAT_FIELDS, ResultStore, Row

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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
    from collkit.slurm import machine_of_env

    # In a Slurm job, the cluster's name, not the node collkit happens to run on (docs/cluster.md).
    return f"{machine_of_env() or socket.gethostname()} ({cpu or platform.machine()})"


def vectors_argument(vectors: Sequence[Sequence[int]], collective: str, P: int) -> str:
    """collkit_bench's --vectors argument for a job's count vectors ("1,0,2;3,3,3"), or an
    InvalidArgumentError where it would pass the command line's limit for one argument.

    >>> vectors_argument([[1, 0], [2, 2]], "allgatherv", 2)
    '1,0;2,2'
    """
    text = ";".join(",".join(map(str, v)) for v in vectors)
    if len(text) > DRIVER_ARG_BYTES:
        raise InvalidArgumentError(
            f"{collective} at P = {P}: the count vectors ({len(text)} characters) are longer "
            f"than the {DRIVER_ARG_BYTES} that collkit_bench's command line carries: lower -np "
            "or measure fewer --counts forms in one run"
        )
    return text


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
    pattern: str = "back_to_back"  # how the calls are made (results.PATTERNS, check_pattern)
    # The barrier before each collkit call of the patterns barrier and evict: "" the MPI's, or
    # the collkit barrier algorithm a table routes MPI_Barrier to (native keeps the MPI's, or
    # with native_after_barrier runs after it too: what the barrier rule costs the MPI's calls).
    barrier: str = ""
    native_after_barrier: bool = False
    max_ms: int = 2000  # time budget per row
    validate: bool = True
    raw: bool = False
    root: int = 0
    hosts: str | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    # Rank placements swept (core, socket, node; "" is the MPI's default); rows record it.
    placements: list[str] = field(default_factory=lambda: [""])
    # Native and every collkit candidate alternate in blocks inside one job, `rounds` rounds,
    # native re-measured around every candidate (collkit.drift); off: one job per algorithm.
    interleave: bool = True
    rounds: int = 3
    attempt: int = 0  # > 0: a re-measurement of rows found suspect (collkit.drift)
    # On exactly this many nodes (P / nodes ranks each: tune's shapes); None: as few ranks per
    # node as fit (collkit.mpi.launch).
    nodes: int | None = None
    # The irregular collectives' --counts forms (collkit.counts), one measured point each, in
    # place of `sizes`; none: equal(size / element size) for each size (the regular layout).
    counts: list[str] = field(default_factory=list)

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
        check_pattern(self.pattern, self.collective, self.sync)
        self.barrier = check_barrier(self.barrier, self.pattern)
        if self.iterations < 1 or self.warmup < 0 or self.block < 1:
            raise InvalidArgumentError("iterations and block must be >= 1, warmup >= 0")
        if not 1 <= self.rounds <= 100:
            raise InvalidArgumentError(f"rounds = {self.rounds} must be in 1..100")
        if collective(self.collective)["out"] == {"at_root": "none", "elsewhere": "none"}:
            self.sizes = [0]  # no data (barrier)
        self.algorithms = [self.normalize(a) for a in self.algorithms]
        self.counts = ["".join(f.split()) for f in self.counts]  # one text per form
        if self.counts and not self.irregular:
            taking = ", ".join(x["name"] for x in collectives() if x["counts"] != "none")
            raise InvalidArgumentError(
                f"--counts: {self.collective} takes one count for every rank (--sizes); a "
                f"count vector is for {taking}"
            )
        if len(set(self.counts)) != len(self.counts):
            raise InvalidArgumentError(f"--counts: a form given twice ({', '.join(self.counts)})")
        if self.irregular:
            for form in self.forms():
                for P in self.P:  # a list of the wrong length, P too large: before any run
                    self.vector(form, P)

    @property
    def irregular(self) -> bool:
        """Whether the collective takes count vectors (its points are --counts forms)."""
        return str(collective(self.collective)["counts"]) != "none"

    def forms(self) -> list[str]:
        """The irregular collective's points: the --counts forms, or equal(n) for each size."""
        if self.counts:
            return list(self.counts)
        return [f"equal({self.count(s)})" for s in self.sizes]

    def vector(self, form: str, P: int) -> list[int]:
        """The count vector (elements) a form draws for P ranks: P entries, alltoallv P^2."""
        per_pair = str(collective(self.collective)["counts"]) == "per_pair"
        return parse_counts(form).vector(P, per_pair=per_pair)

    def keys(self) -> list[int]:
        """What the campaign measures at each P: the sizes, or the irregular points' indices."""
        return list(range(len(self.forms()))) if self.irregular else list(self.sizes)

    def normalize(self, name: str) -> str:
        """'rd' -> 'allreduce:rd'; checks collkit names against the registry. `native` and an
        MPI's own algorithms (mpich:ring) stay as they are (the one grammar's row names)."""
        full = name if ":" in name or name.strip() == "native" else f"{self.collective}:{name}"
        row = parse_row_name(full)  # AlgorithmNameError with a caret
        if row.kind == "mpi":
            return f"{row.impl}:{row.algorithm}"
        if row.kind == "native" and row.collective in (None, self.collective):
            return "native"
        algo = Algorithm(full)  # raises AlgorithmNameError with a caret
        if algo.collective != self.collective:
            raise InvalidArgumentError(
                f"'{name}' is a {algo.collective} algorithm, not {self.collective}"
            )
        return str(algo.canonical)

    def count(self, size: int) -> int:
        return size // DATATYPES[self.datatype]


ProgressFn = Callable[[str, Row | None], None]


def check_pattern(pattern: str, collective: str, sync: str = "barrier") -> None:
    """An InvalidArgumentError where collkit_bench would refuse the pattern: an unknown name,
    rotate_root of a collective without a root, barrier or evict (a barrier before each call)
    with --sync window."""
    if pattern not in PATTERNS:
        raise InvalidArgumentError(f"pattern {pattern[:40]!r} must be one of {', '.join(PATTERNS)}")
    if pattern == "rotate_root" and collective not in ROOTED:
        raise InvalidArgumentError(
            f"pattern rotate_root moves the root: {collective} has none "
            f"(rooted: {', '.join(ROOTED)})"
        )
    if pattern in ("barrier", "evict") and sync == "window":
        raise InvalidArgumentError(
            f"pattern {pattern} puts a barrier before every call: not with --sync window"
        )


def check_barrier(barrier: str, pattern: str) -> str:
    """The barrier before each collkit call of `pattern` in canonical form ("" the MPI's); an
    InvalidArgumentError for a name that is not a barrier algorithm or a pattern without one."""
    if barrier in ("", "native"):
        return ""
    if pattern not in ("barrier", "evict"):
        raise InvalidArgumentError(
            f"a barrier between calls ({barrier[:40]!r}) needs the pattern barrier or evict"
        )
    name = barrier if ":" in barrier else f"barrier:{barrier}"
    try:
        algo = Algorithm(name)
    except CollkitError as e:
        raise InvalidArgumentError(f"the barrier between calls: {e}") from None
    if algo.collective != "barrier":
        raise InvalidArgumentError(f"{barrier[:40]!r} is not a barrier algorithm")
    return str(algo.canonical)


def _jobs(c: Campaign) -> list[tuple[list[str], bool]]:
    """The driver runs of one (P, placement): (algorithms, interleaved). Interleaved: native and
    every collkit candidate in one job. The MPI's own algorithms are forced through the
    environment for a whole job, so each is a job of its own, not interleaved with native."""
    forced = [a for a in c.algorithms if parse_row_name(a).kind == "mpi"]
    own = [a for a in c.algorithms if a not in forced]
    if not c.interleave:
        return [([a], False) for a in c.algorithms]
    jobs = [(own, True)] if own else []
    return jobs + [([a], False) for a in forced]


def planned_rows(c: Campaign) -> int:
    """How many rows the campaign makes (those already in a results file included)."""
    return len(c.P) * len(c.placements) * len(c.algorithms) * len(c.keys())


def run_campaign(
    c: Campaign,
    mpi: MPI,
    store: ResultStore,
    progress: ProgressFn | None = None,
    ticker: Ticker | None = None,
) -> list[Row]:
    """Measures every row of the campaign not yet in `store`; returns the rows it added.
    `ticker` (collkit.progress) is advanced by each of the campaign's planned_rows(c) rows, those
    found in `store` included; the caller plans them (ticker.grow)."""
    bindir = build(mpi, ["collkit_bench"])
    machine = machine_name()
    added: list[Row] = []
    for P, place in itertools.product(c.P, c.placements):
        alloc = allocation(P, c.hosts, c.nodes) + (f", map-by {place}" if place else "")
        for algos, interleaved in _jobs(c):
            force: dict[str, str] = {}
            driver_algos = list(algos)
            if parse_row_name(algos[0]).kind == "mpi":
                force = mpi.force_env(c.collective, algos[0])
                driver_algos = ["native"]
            elif interleaved and "native" not in algos:
                driver_algos = ["native", *algos]  # the reference, measured, not stored
            env, settings = launch_env(mpi, P, {**c.extra_env, **force}, hosts=c.hosts)

            def template(
                size: int,
                algo: str,
                settings: str = settings,
                P: int = P,
                alloc: str = alloc,
                interleaved: bool = interleaved,
                forced: bool = bool(force),
            ) -> Row:
                # irregular: `size` is a point, its bytes the whole vector's
                form = c.forms()[size] if c.irregular else ""
                count = sum(c.vector(form, P)) if c.irregular else c.count(size)
                return Row(
                    collective=c.collective,
                    algorithm=algo,
                    P=P,
                    bytes=count * DATATYPES[c.datatype],
                    datatype=c.datatype,
                    count=count,
                    counts=form,
                    mpi=mpi.version,
                    machine=machine,
                    allocation=alloc,
                    settings=settings,
                    sync=c.sync,
                    block=c.block,
                    pattern=c.pattern,
                    barrier=c.barrier
                    if (algo != "native" or c.native_after_barrier) and not forced
                    else "",
                    interleaved=interleaved,
                    attempt=c.attempt,
                )

            keys = c.keys()
            missing = [s for s in keys if any(not measured(store, template(s, a)) for a in algos)]
            if ticker:
                ticker.advance(len(algos) * (len(keys) - len(missing)), measured=False)
            name = algos[0] if len(algos) == 1 else f"{len(algos)} algorithms interleaved"
            if not missing:
                if progress:
                    progress(f"P={P} {name}: all {len(keys)} sizes already measured", None)
                continue
            if progress:
                progress(f"P={P} {name}: measuring {len(missing)} sizes", None)
            args = [
                str(bindir / "collkit_bench"),
                "--collective",
                c.collective,
                "--algos",
                ",".join(driver_algos),
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
                "--pattern",
                c.pattern,
                *(["--barrier", c.barrier] if c.barrier else []),
                *(["--native-after-barrier"] if c.barrier and c.native_after_barrier else []),
                "--max-ms",
                str(c.max_ms),
                "--root",
                str(c.root),
                "--native-label",
                algos[0] if force else "native",
                "--rounds",
                str(c.rounds),
            ]
            if c.irregular:  # the driver's points, in the order of `missing`
                vectors = [c.vector(c.forms()[k], P) for k in missing]
                args += ["--vectors", vectors_argument(vectors, c.collective, P)]
            if interleaved:
                args.append("--interleave")
            if c.validate:
                args.append("--validate")
            if c.raw:
                args.append("--raw")
            cmd = launch_command(mpi, P, args, hosts=c.hosts, map_by=place, nodes=c.nodes)

            def row_template(
                d: dict[str, object],
                algo: str,
                template: Callable[[int, str], Row] = template,
                missing: list[int] = missing,
            ) -> Row:
                point = d.get("point")
                key = missing[int(point)] if isinstance(point, int) else d["bytes"]
                return template(int(key), algo)  # type: ignore[call-overload]

            for row in _stream_rows(cmd, env, row_template):
                if row.algorithm not in algos:
                    continue  # the native reference of an interleaved job nobody asked for
                if store.append(row):
                    added.append(row)
                if ticker:
                    ticker.advance(1)
                if progress:
                    progress(f"P={P} {row.algorithm} {row.bytes} B", row)
    store.write_csv()
    return added


def measured(store: ResultStore, row: Row) -> bool:
    """Whether `store` has the measurement `row` stands for, whatever transport the driver
    reported for it: a row made before the run cannot know it (collkit's shared memory on a
    node says "shm"), and a resumed campaign must find what it measured."""
    transports = {r.transport for r in store} | {row.transport}
    return any(replace(row, transport=t) in store for t in transports)


def _stream_rows(
    cmd: Sequence[str], env: dict[str, str], template: Callable[[dict[str, object], str], Row]
) -> Iterator[Row]:
    """Runs the driver and yields each row the moment it prints it, with its rounds (from the
    driver's block lines), the machine's load and, for an interleaved candidate, whether its
    comparison with native is suspect."""
    proc = subprocess.Popen(
        list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None and proc.stderr is not None
    blocks: dict[object, list[Block]] = {}  # by point (irregular), else all in one
    try:
        for line in proc.stdout:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                continue
            if d.get("kind") == "block":
                blocks.setdefault(d.get("point", -1), []).append(Block.from_json(d))
                continue
            if d.get("kind") != "row":
                continue
            row = template(d, str(d["algorithm"]))
            row.date = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
            row.count = int(d["count"])
            row.load_avg_1m = load_avg_1m()
            for k in ("probe_rtt_ns_before", "probe_rtt_ns_after"):
                if d.get(k) is not None:
                    setattr(row, k, float(d[k]))
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
                if d.get("rank_mean_median_us") is not None:
                    row.rank_mean_median_us = float(d["rank_mean_median_us"])
                row.rank_mean_samples = [float(x) for x in d.get("rank_mean_samples", [])]
                attach_rounds(row, blocks.get(d.get("point", -1), []))
                row.suspect = suspect_reason(row) if row.algorithm != "native" else ""
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
    """The multicast benchmark of [Ruefenacht 2017] §5.1: JSON records per (mode, b), then the
    fits.
    """
    if P < 2:
        raise InvalidArgumentError("the multicast benchmark needs P >= 2")
    bindir = build(mpi, ["collkit_multicast"])
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


def plot(rows: Sequence[Row], path: str | Path | None = None, title: str = "") -> Figure:
    """Median latency against size, one line per (algorithm, P), quartiles shaded. Returns the
    Figure (the backend is left alone); with `path` it is also written there."""
    from collkit.plotting import new_figure, save_figure

    fig = new_figure(figsize=(7, 4.5))
    ax = fig.subplots()
    groups: dict[tuple[str, int], list[Row]] = {}
    for r in rows:
        if not r.error:
            groups.setdefault((r.algorithm, r.P), []).append(r)
    for (algo, P), rs in sorted(groups.items()):
        rs.sort(key=lambda r: r.bytes)
        x = [max(r.bytes, 1) for r in rs]
        ax.plot(x, [r.median_us for r in rs], marker="o", ms=3, label=f"{algo} P={P}")
        ax.fill_between(x, [r.q1_us for r in rs], [r.q3_us for r in rs], alpha=0.2)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bytes per rank")
    ax.set_ylabel("latency (µs), median, quartiles shaded")
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    if path is not None:
        save_figure(fig, path)
    return fig


@dataclass
class BenchOptions:
    """A benchmark, as `collkit bench` takes it (bench runs it); each field is the option of
    the same name, the defaults are its defaults. `algorithms`: collkit names (rd or
    allreduce:rd), native, the MPI's own (mpich:ring), or all-mpi for all of this MPI's;
    `placements`: the rank placements to sweep ("" the MPI's own); `out`: the results file,
    COLLECTIVE in it replaced by the collective; `pattern`: how the calls are made
    (results.PATTERNS, docs/tuning.md, "Patterns"); `counts`: the irregular collectives'
    --counts forms (collkit.counts), one measured point each in place of `sizes` (none:
    equal(size / element size) for each size)."""

    collective: str
    algorithms: list[str] = field(default_factory=lambda: ["native"])
    P: list[int] = field(default_factory=lambda: [4])
    sizes: list[int] = field(default_factory=lambda: [8])
    datatype: str = ""
    iterations: int = 200
    warmup: int = 20
    block: int = 1
    sync: str = "barrier"
    pattern: str = "back_to_back"
    barrier: str = ""  # the barrier before each collkit call of barrier/evict ("" the MPI's)
    max_ms: int = 2000
    rounds: int = 3
    interleave: bool = True
    validate: bool = True
    raw: bool = False
    root: int = 0
    placements: list[str] = field(default_factory=lambda: [""])
    hosts: str | None = None
    mpiexec: str | None = None
    mpi_prefix: str | None = None
    out: str = "bench-results/COLLECTIVE.jsonl"
    plot: bool = True
    counts: list[str] = field(default_factory=list)


@dataclass
class BenchPlan:
    """A benchmark checked and ready to run (check_bench): the campaign, the MPI, the file."""

    options: BenchOptions
    campaign: Campaign
    mpi: MPI
    out: Path


@dataclass
class BenchResult:
    """The benchmark's rows (those of the results file this campaign asks for, measured now or
    before), sorted by P, bytes and algorithm, and the files written."""

    rows: list[Row]
    out: Path
    written: list[Path]
    mpi: str  # the MPI's version

    @property
    def ok(self) -> bool:
        """Every row measured, and none whose result differs from the MPI's own collective."""
        return all(not r.error and r.valid is not False for r in self.rows)


def check_bench(opts: BenchOptions, *, mpi: MPI | None = None) -> BenchPlan:
    """Every check bench makes before it starts anything (an InvalidArgumentError, or the
    registry's AlgorithmNameError, naming the option), and the plan. `mpi`: the MPI to run on
    (default: found from opts.mpiexec and opts.mpi_prefix, as the command finds it)."""
    if opts.hosts is not None:
        input_file(opts.hosts, "--hosts")
    check_launchable(opts.P, opts.hosts)
    if opts.collective in ROOTED:
        for P in opts.P:
            if opts.root >= P:
                raise InvalidArgumentError(f"--root {opts.root} is not a rank of P = {P}")
    elif opts.root != 0:
        raise InvalidArgumentError(f"{opts.collective} has no root (--root {opts.root})")
    if opts.collective not in COLLECTIVES:
        raise InvalidArgumentError(
            f"unknown collective '{opts.collective}' (one of {', '.join(COLLECTIVES)})"
        )
    check_pattern(opts.pattern, opts.collective, opts.sync)
    check_barrier(opts.barrier, opts.pattern)
    if mpi is None:
        mpi = find_mpi(opts.mpiexec, opts.mpi_prefix)
    algos: list[str] = []
    for a in opts.algorithms:
        if not a.strip():
            raise InvalidArgumentError(f"empty entry in --algos '{','.join(opts.algorithms)}'")
        if a != "all-mpi":
            algos.append(a)
            continue
        own = mpi.native_algorithms(opts.collective)
        if not own:
            raise InvalidArgumentError(
                f"--algos all-mpi: collkit knows no algorithms of this MPI ({mpi.describe()}) "
                f"for {opts.collective} to force (it knows MPICH's, Open MPI's and Intel MPI's)"
            )
        algos.extend(own)
    campaign = Campaign(
        collective=opts.collective,
        algorithms=algos,
        P=list(opts.P),
        sizes=list(opts.sizes),
        datatype=opts.datatype,
        iterations=opts.iterations,
        warmup=opts.warmup,
        block=opts.block,
        sync=opts.sync,
        pattern=opts.pattern,
        barrier=opts.barrier,
        max_ms=opts.max_ms,
        validate=opts.validate,
        raw=opts.raw,
        root=opts.root,
        hosts=opts.hosts,
        placements=list(opts.placements),
        interleave=opts.interleave,
        rounds=opts.rounds,
        counts=list(opts.counts),
    )
    elem = DATATYPES[campaign.datatype]
    for size in campaign.sizes:  # fail before measuring anything
        if size % elem:
            raise InvalidArgumentError(
                f"size {size} B is not a whole number of {elem}-byte {campaign.datatype} "
                f"elements: give a multiple of {elem} (or --datatype char)"
            )
    for a in campaign.algorithms:
        if parse_row_name(a).kind == "mpi":
            mpi.force_env(campaign.collective, a)
    out = Path(opts.out.replace("COLLECTIVE", opts.collective))
    if out.suffix != ".jsonl":  # checked here, before collkit's programs are built
        raise InvalidArgumentError(f"results file '{out}' must end in .jsonl")
    return BenchPlan(opts, campaign, mpi, out)


def _no_progress(_what: str, _total: int) -> AbstractContextManager[CampaignProgress | None]:
    return contextlib.nullcontext(None)


def run_bench(
    plan: BenchPlan,
    *,
    say: Callable[[str], None] | None = None,
    progress: Callable[[str, int], AbstractContextManager[CampaignProgress | None]] = (
        _no_progress
    ),
) -> BenchResult:
    """Measure what the plan's results file still lacks (check_bench); see bench."""
    campaign, mpi, out = plan.campaign, plan.mpi, plan.out
    store = ResultStore(out)
    # rows done of rows planned, with an ETA: a bar on a terminal, a line every 10 s otherwise
    with progress("bench", planned_rows(campaign)) as ticker:

        def message(msg: str) -> None:
            if ticker is not None:
                ticker.message(msg)
            elif say:
                say(msg)

        def on_row(msg: str, row: Row | None) -> None:
            if row is None:
                message(msg)
            elif row.error:
                message(f"  {row.bytes:>9} B  error: {row.error}")
            else:
                message(f"  {row.algorithm} {row.bytes:>9} B  median {row.median_us:10.2f} µs")

        run_campaign(campaign, mpi, store, on_row, ticker)
    sizes = {campaign.count(s) * DATATYPES[campaign.datatype] for s in campaign.sizes}
    forms = set(campaign.forms()) if campaign.irregular else {""}
    rows = sorted(
        (
            r
            for r in store
            if r.collective == campaign.collective
            and r.P in campaign.P
            and r.algorithm in campaign.algorithms
            and (r.counts in forms if campaign.irregular else r.bytes in sizes)
            and r.counts in forms
            and r.datatype == campaign.datatype
            and r.mpi == mpi.version
            and r.pattern == campaign.pattern
        ),
        key=lambda r: (r.P, r.bytes, r.algorithm),
    )
    written = [store.jsonl, store.csv]
    if plan.options.plot and rows:
        png = out.with_suffix(".png")
        plot(rows, png, title=f"{campaign.collective}, {mpi.version}")
        written.append(png)
    return BenchResult(rows, out, written, mpi.version)


def bench(
    opts: BenchOptions,
    *,
    mpi: MPI | None = None,
    say: Callable[[str], None] | None = None,
    progress: Callable[[str, int], AbstractContextManager[CampaignProgress | None]] = (
        _no_progress
    ),
) -> BenchResult:
    """Run the benchmark `opts` as `collkit bench` does: check it (check_bench), build the
    driver for the MPI (once per MPI), measure the rows the results file still lacks, and
    return the campaign's rows. `say` receives the progress messages when `progress(what,
    rows planned)` gives no ticker (collkit.progress.CampaignProgress gives one); `mpi` as in
    check_bench."""
    return run_bench(check_bench(opts, mpi=mpi), say=say, progress=progress)


__all__ = [
    "BenchOptions",
    "BenchPlan",
    "BenchResult",
    "Campaign",
    "CollkitError",
    "bench",
    "check_bench",
    "check_pattern",
    "machine_name",
    "plot",
    "run_bench",
    "run_campaign",
    "run_multicast",
]
