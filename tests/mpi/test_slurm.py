"""Slurm: a real Slurm (Debian's slurm-wlm 22.05, munge) on an emulated cluster, and collkit
inside its allocations (collkit.slurm, collkit.mpi.launch).

The cluster tests need root and Slurm's daemons and clients (scripts/test.sh installs slurm-wlm
and munge) and skip with the reason otherwise; CI runs them as root. One cluster of 2 nodes with
Slurm serves the module, owned by this process. Checked: the daemons come up in the cluster's
namespaces with the nodes' host names; `collkit bench` in `salloc -N 2 --ntasks-per-node 2`
through srun (COLLKIT_LAUNCHER=srun) and through the MPI's mpiexec writes rows whose shape is 2
nodes x 2 ranks; `collkit run` under srun routes the program's calls by its table; a campaign
in an sbatch job stopped by SIGTERM (what the job's time limit sends first) keeps its rows and
the next job measures only what is missing; teardown leaves no Slurm or munge process. The
parsers of the allocation's variables are checked everywhere, root or not."""

from __future__ import annotations

import getpass
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_pmpi import PROGRAMS, mpicc

from collkit import cluster, slurm
from collkit.cluster import Cluster
from collkit.errors import InvalidArgumentError, UnsupportedError
from collkit.mpi import MPI, Mpich, OpenMpi, launch_command
from collkit.mpi.launch import allocation, preload_command
from collkit.mpi.stats import read_stats, world_rank
from collkit.results import read_jsonl
from collkit.tune import run as tune_run
from mpi_support import built, mpich_or_skip, openmpi_or_skip

# --- the allocation's variables -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("n0", ["n0"]),
        ("n[0-2]", ["n0", "n1", "n2"]),
        ("n[0-1,5],login", ["n0", "n1", "n5", "login"]),
        ("node[008-011]", ["node008", "node009", "node010", "node011"]),
        ("r[1-2]c[1-2]", ["r1c1", "r1c2", "r2c1", "r2c2"]),
        ("a.b-c,x[3]", ["a.b-c", "x3"]),
    ],
)
def test_host_lists_expand_as_scontrol_does(text: str, hosts: list[str]) -> None:
    assert slurm.expand_hostlist(text) == hosts


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "empty host name"),
        ("n0,,n1", "empty host name"),
        ("n[0-1", "not closed"),
        ("n0-1]", "without"),
        ("n[[0]]", "nested"),
        ("n[a-b]", "numbers and ranges"),
        ("n[3-1]", "bad range"),
        ("n[0-99999999]", "bad range"),
        ("bad host", "bad host name"),
        ("n[0-1]x y", "bad host name"),
    ],
)
def test_bad_host_lists_are_refused(text: str, error: str) -> None:
    with pytest.raises(InvalidArgumentError, match=error):
        slurm.expand_hostlist(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="n0123456789[],-x. \x00é", max_size=30))
def test_any_host_list_expands_or_is_refused_clearly(text: str) -> None:
    try:
        hosts = slurm.expand_hostlist(text)
    except InvalidArgumentError as e:
        assert "host list" in str(e)
        return
    assert hosts and all(h and "[" not in h and "," not in h for h in hosts)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20))
def test_any_tasks_per_node_parses_or_is_refused_clearly(text: str) -> None:
    try:
        tasks = slurm.expand_tasks_per_node(text)
    except InvalidArgumentError as e:
        assert "SLURM_TASKS_PER_NODE" in str(e)
        return
    assert tasks and all(t >= 1 for t in tasks)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="n01[]-,", max_size=12), st.text(alphabet="0123(x),", max_size=10))
def test_any_allocation_environment_reads_or_is_refused_clearly(nodes: str, per: str) -> None:
    try:
        a = slurm.allocation_of_env(job_env(nodes, per))
    except InvalidArgumentError as e:
        assert "host list" in str(e) or "SLURM_" in str(e)
        return
    assert a is not None and len(a.hosts) == len(a.tasks_per_node) >= 1


def test_tasks_per_node() -> None:
    assert slurm.expand_tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    for bad in ("", "0", "2(x0)", "x", "2(x3"):
        with pytest.raises(InvalidArgumentError, match="SLURM_TASKS_PER_NODE"):
            slurm.expand_tasks_per_node(bad)


def job_env(nodes: str = "n[0-1]", per: str = "2(x2)", **more: str) -> dict[str, str]:
    return {"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": nodes, "SLURM_TASKS_PER_NODE": per, **more}


def test_allocation_of_env() -> None:
    assert slurm.allocation_of_env({}) is None
    a = slurm.allocation_of_env(job_env())
    assert a is not None and a.hosts == ["n0", "n1"] and a.tasks == 4
    assert [a.layout(n) for n in (1, 2, 3, 4)] == [(1, 1), (2, 1), (2, 2), (2, 2)]
    assert a.shape(4) == "2 nodes x 2 ranks" and a.shape(3) == "3 ranks on 2 nodes of up to 2"
    with pytest.raises(InvalidArgumentError, match="has 4 tasks on 2 nodes"):
        a.layout(5)
    # Only SLURM_NTASKS_PER_NODE (sbatch --ntasks-per-node without the per-node counts).
    b = slurm.allocation_of_env(
        {"SLURM_JOB_ID": "8", "SLURM_NODELIST": "n[0-2]", "SLURM_NTASKS_PER_NODE": "3"}
    )
    assert b is not None and b.tasks_per_node == [3, 3, 3]
    # Uneven nodes: filled in turn up to the largest count.
    c = slurm.allocation_of_env(job_env("n[0-1]", "3,1"))
    assert c is not None and c.layout(4) == (2, 3)
    with pytest.raises(InvalidArgumentError, match="gives 3 nodes"):
        slurm.allocation_of_env(job_env("n[0-1]", "1(x3)"))
    with pytest.raises(InvalidArgumentError, match="SLURM_JOB_NODELIST is not set"):
        slurm.allocation_of_env({"SLURM_JOB_ID": "9"})


def fake_mpi(kind: str) -> MPI:
    cls = {"mpich": Mpich, "openmpi": OpenMpi}.get(kind, MPI)
    return cls(mpicxx="mpicxx", mpiexec=f"/usr/bin/mpiexec.{kind}", version=kind)


def test_launch_commands_in_an_allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    """In an allocation, without --hosts: the MPI's mpiexec told the allocation's hosts and
    ranks per node, or srun (COLLKIT_LAUNCHER=srun) with the MPI's PMI; rows say the shape."""
    for k, v in job_env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("SLURM_MPI_TYPE", raising=False)
    m = launch_command(fake_mpi("mpich"), 4, ["prog"])
    assert m[m.index("-hosts") + 1] == "n0:2,n1:2" and m[-3:] == ["-n", "4", "prog"]
    o = launch_command(fake_mpi("openmpi"), 2, ["prog"])
    assert o[o.index("--host") + 1] == "n0:1,n1:1"
    assert allocation(4) == "2 nodes x 2 ranks (Slurm, mpiexec)"
    monkeypatch.setenv("COLLKIT_LAUNCHER", "srun")
    s = launch_command(fake_mpi("mpich"), 4, ["prog"])
    assert Path(s[0]).name == "srun" and "--mpi=pmi2" in s and s[-1] == "prog"
    assert s[s.index("-N") + 1] == "2" and s[s.index("--ntasks-per-node") + 1] == "2"
    assert "--mpi=pmix" in launch_command(fake_mpi("openmpi"), 4, ["prog"])
    assert "--distribution=cyclic" in launch_command(fake_mpi("mpich"), 4, ["p"], map_by="node")
    assert allocation(2).startswith("2 nodes x 1 ranks (Slurm, srun")
    monkeypatch.setenv("SLURM_MPI_TYPE", "pmix")
    assert "--mpi=pmix" in launch_command(fake_mpi("mpich"), 4, ["prog"])
    monkeypatch.delenv("SLURM_MPI_TYPE")
    with pytest.raises(UnsupportedError, match="SLURM_MPI_TYPE"):
        launch_command(fake_mpi("other"), 2, ["prog"])
    with pytest.raises(InvalidArgumentError, match="has 4 tasks"):
        launch_command(fake_mpi("mpich"), 8, ["prog"])
    # collkit run: the library and its settings reach the ranks only, through `env`.
    pre = preload_command(fake_mpi("mpich"), 4, ["app", "x"], Path("/l.so"), {"COLLKIT_X": "1"})
    at = pre.index("env")
    assert pre[at + 1].startswith("LD_PRELOAD=/l.so") and pre[at + 2 :] == [
        "COLLKIT_X=1",
        "app",
        "x",
    ]
    monkeypatch.setenv("COLLKIT_LAUNCHER", "slurm")
    with pytest.raises(InvalidArgumentError, match="COLLKIT_LAUNCHER"):
        launch_command(fake_mpi("mpich"), 4, ["prog"])


def test_srun_needs_an_allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in ("SLURM_JOB_ID", "SLURM_JOBID"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("COLLKIT_LAUNCHER", "srun")
    with pytest.raises(UnsupportedError, match="inside a Slurm allocation"):
        launch_command(fake_mpi("mpich"), 2, ["prog"])
    with pytest.raises(UnsupportedError, match="inside a Slurm allocation"):
        allocation(2)


def test_slurm_needs_its_tools(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cluster, "root_reason", lambda: "")
    real = slurm.find
    monkeypatch.setattr(slurm, "find", lambda t: None if t == "slurmd" else real(t))
    assert "slurmd" in slurm.slurm_reason() and "slurm-wlm" in slurm.slurm_reason()
    with pytest.raises(UnsupportedError, match="slurm-wlm"):
        Cluster.up("s", 1, slurm=True)
    from collkit.cli import main

    assert main(["cluster", "up", "--name", "s", "--nodes", "1", "--slurm"]) == 2
    assert "apt-get install slurm-wlm munge" in capsys.readouterr().err
    assert not (cluster.STATE_ROOT / "s").exists()  # refused before anything was made


def test_sigterm_stops_a_campaign_as_an_interruption(tmp_path: Path) -> None:
    """The handler tune measures under: SIGTERM raises an interruption (not an error that code
    would catch and go on after), says what was kept, and the old handler is back after."""
    from collkit.results import ResultStore

    said: list[str] = []
    before = signal.getsignal(signal.SIGTERM)
    with (
        pytest.raises(KeyboardInterrupt),
        tune_run._stop_on_sigterm(ResultStore(tmp_path / "tune.jsonl"), said.append),
    ):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler interrupts this
    assert said and "stopped by SIGTERM" in said[0] and "resumes" in said[0]
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_rerun_finds_rows_whatever_their_transport(tmp_path: Path) -> None:
    """The rows a campaign looks for before a run have no transport yet; the driver's rows say
    "shm" (collkit's shared memory) or another: found all the same, so nothing is measured
    twice; another allocation is another measurement."""
    from collkit.bench import measured
    from collkit.results import ResultStore, Row

    def row(transport: str = "", alloc: str = "2 nodes x 2 ranks (Slurm, srun)") -> Row:
        return Row(collective="allreduce", algorithm="allreduce:rd", P=4, bytes=8,
                   allocation=alloc, transport=transport)  # fmt: skip

    store = ResultStore(tmp_path / "rows.jsonl")
    store.append(row("shm"))
    again = ResultStore(tmp_path / "rows.jsonl")  # as the next job reads it
    assert measured(again, row()) and measured(again, row("shm"))
    assert not measured(again, row(alloc="2 nodes x 1 ranks (Slurm, srun)"))


# --- a Slurm on an emulated cluster ---------------------------------------------------------------


def slurm_or_skip() -> None:
    if why := slurm.slurm_reason():
        pytest.skip(why)


@pytest.fixture(scope="module")
def sl() -> Iterator[Cluster]:
    slurm_or_skip()
    cluster.cleanup()  # leftovers of runs that crashed
    with cluster.emulated(f"s{os.getpid() % 10**6}", 2, slurm=True) as c:
        yield c


@pytest.fixture(autouse=True)
def no_job_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test on the emulated Slurm, none of its jobs is left holding the nodes (a test
    that failed mid-job would make every later one wait for them)."""
    yield
    if "sl" not in request.fixturenames:
        return
    s = request.getfixturevalue("sl").slurm_of()
    if s.client(["squeue", "-h"]).stdout.strip():
        s.client(["scancel", "--full", "-u", getpass.getuser()])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and s.client(["squeue", "-h"]).stdout.strip():
            time.sleep(0.5)


def client_env(c: Cluster, mpi: MPI | None = None, **more: str) -> dict[str, str]:
    env = dict(os.environ, **c.slurm_of().env(), **more)
    if mpi is not None:
        env.update(MPIEXEC=mpi.mpiexec, MPICXX=mpi.mpicxx)
    return env


def test_slurm_comes_up_on_the_nodes(sl: Cluster) -> None:
    s = sl.slurm_of()
    assert s.node_states() == {"n0": "idle", "n1": "idle"}
    r = s.client(["srun", "-N", "2", "--ntasks-per-node", "1", "sh", "-c", "hostname"])
    assert r.returncode == 0 and sorted(r.stdout.split()) == ["n0", "n1"], r.stderr
    # Its files are the cluster's, its daemons run in its namespaces.
    assert s.conf.is_file() and s.conf.is_relative_to(sl.state_dir)
    in_ns = {int(p) for ns in sl.all_namespaces() for p in netns_pids(ns)}
    assert set(s.pids()) <= in_ns and len(s.pids()) == 2 + sl.nodes  # munged, ctld, slurmds


def netns_pids(ns: str) -> list[str]:
    return subprocess.run(
        ["ip", "netns", "pids", ns], capture_output=True, text=True
    ).stdout.split()


def cancel(c: Cluster, name: str) -> str:
    """Cancels the job `name` and waits for it to leave the queue (a job left running holds
    the nodes, and every later test's job would wait for them); returns what squeue said of it."""
    s = c.slurm_of()
    state = s.client(["squeue", "-h", "-n", name, "-o", "%i %T %R"]).stdout.strip()
    s.client(["scancel", "--full", "-n", name])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and s.client(["squeue", "-h", "-n", name]).stdout.strip():
        time.sleep(0.5)
    return state


def text_of(out: str | bytes | None) -> str:
    return out.decode(errors="replace") if isinstance(out, bytes) else out or ""


def salloc(c: Cluster, argv: list[str], env: dict[str, str], timeout: float = 300) -> str:
    name = f"ck-{os.getpid()}-{time.monotonic_ns()}"
    cmd = [str(c.slurm_of().bin / "salloc"), "-J", name, "-N", "2", "--ntasks-per-node", "2", *argv]
    try:
        r = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as e:
        state = cancel(c, name)
        pytest.fail(
            f"salloc did not end in {timeout:.0f} s (job '{state}', now cancelled):\n"
            + text_of(e.stdout)[-2000:]
            + text_of(e.stderr)[-3000:]
        )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return r.stderr


@pytest.mark.parametrize(
    ("kind", "how"), [("mpich", "srun"), ("mpich", "mpiexec"), ("openmpi", "srun")]
)
def test_bench_in_an_allocation(sl: Cluster, tmp_path: Path, kind: str, how: str) -> None:
    """`salloc -N 2 --ntasks-per-node 2 collkit bench ...` with no --hosts: the ranks go where
    the allocation is, 2 per node on both nodes, and the rows say so (srun with PMI-2 for the
    pip MPICH, PMIx for Debian's Open MPI)."""
    mpi = mpich_or_skip() if kind == "mpich" else openmpi_or_skip()
    built(mpi)
    out = tmp_path / "rows.jsonl"
    argv = [
        sys.executable, "-m", "collkit", "bench", "allreduce", "-np", "4", "--algos", "rd",
        "--sizes", "8,1KiB", "--iters", "10", "--warmup", "1", "-o", str(out),
    ]  # fmt: skip
    salloc(sl, argv, client_env(sl, mpi, COLLKIT_LAUNCHER=how))
    rows = read_jsonl(out)
    assert len(rows) == 2 and all(r.valid is True and not r.error for r in rows)
    assert {r.allocation.split(" (")[0] for r in rows} == {"2 nodes x 2 ranks"}
    assert all(f", {how}; emulated cluster {sl.name}" in r.allocation for r in rows)
    if kind == "mpich":
        assert all("UCX_TLS=^sm" in r.settings for r in rows)  # across nodes over TCP


def test_run_under_srun_routes_the_calls(sl: Cluster, tmp_path: Path) -> None:
    """`collkit run` under srun: an unmodified program's allreduces go where the table says,
    as under mpiexec (its --stats rows say so), and its output is the program's."""
    mpi = mpich_or_skip()
    exe = tmp_path / "collectives_app"
    subprocess.run(
        [mpicc(mpi), "-O1", "-o", str(exe), str(PROGRAMS / "collectives_app.c")], check=True
    )
    rule = {
        "collective": "allreduce",
        "P": [2, 64],
        "bytes": [0, 1 << 20],
        "algorithm": "allreduce:rd",
    }
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"format": "collkit-tuning", "version": 1, "rules": [rule]}))
    stats = tmp_path / "calls.jsonl"
    argv = [
        sys.executable, "-m", "collkit", "run", "-np", "4", "--tuning", str(table),
        "--stats", str(stats), "--verbose", "--", str(exe), str(tmp_path / "lib"),
    ]  # fmt: skip
    log = salloc(sl, argv, client_env(sl, mpi, COLLKIT_LAUNCHER="srun", COLLKIT_SETUP_US="0"))
    assert "srun" in log and "-> allreduce:rd (table)" in log, log[-3000:]
    routed = read_stats(stats, rank=None)
    assert any(row.algorithm == "allreduce:rd" for row in routed), routed[:5]
    assert {world_rank(row) for row in routed} == {0, 1, 2, 3}  # every rank's, across the nodes


def test_campaign_stopped_by_sigterm_resumes(sl: Cluster, tmp_path: Path) -> None:
    """A tune campaign in an sbatch job gets SIGTERM (as at its time limit, KillWait seconds
    before the SIGKILL) after its first rows: it stops, keeping them; the same job again
    measures only the sizes it lacks, and every row is there once."""
    mpi = mpich_or_skip()
    built(mpi)
    # Five sizes after the first: SIGTERM comes mid-campaign on an idle machine too.
    sizes = {"8": 8, "64": 64, "512": 512, "4KiB": 4096, "32KiB": 32768, "128KiB": 131072}
    script = tmp_path / "tune.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"exec {sys.executable} -m collkit tune allreduce -np 4 --sizes {','.join(sizes)} "
        "--only rd --no-mpi-algos --iters 300 --warmup 2 --max-ms 1000 --no-plot "
        f"--routing-us 0 -o {tmp_path / 'out'}\n"
    )
    env = client_env(sl, mpi, COLLKIT_LAUNCHER="srun")
    s = sl.slurm_of()

    def submit(name: str) -> str:
        cmd = [str(s.bin / "sbatch"), "--parsable", "-N", "2", "--ntasks-per-node", "2",
               "-o", str(tmp_path / f"{name}.log"), str(script)]  # fmt: skip
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=False)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip().split(";")[0]

    def wait_done(job: str, timeout: float = 480) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = s.client(["squeue", "-h", "-j", job, "-o", "%T"])
            if not r.stdout.strip():
                return
            time.sleep(0.5)
        state = s.client(["squeue", "-h", "-j", job, "-o", "%i %T %R"]).stdout.strip()
        s.client(["scancel", "--full", job])
        pytest.fail(f"job {job} still there after {timeout} s ('{state}', now cancelled)")

    rows_file = tmp_path / "out" / "tune.jsonl"
    job = submit("first")
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and len(lines(rows_file)) < 2:
        time.sleep(0.05)
    assert len(lines(rows_file)) >= 2, (tmp_path / "first.log").read_text()[-3000:]
    assert s.client(["scancel", "--signal=TERM", "--full", job]).returncode == 0
    wait_done(job)
    first_log = (tmp_path / "first.log").read_text()
    assert "stopped by SIGTERM" in first_log, first_log[-3000:]
    kept = lines(rows_file)
    assert 2 <= len(kept) < 2 * len(sizes), first_log[-2000:]  # stopped before the end
    first = [json.loads(ln) for ln in kept]
    done = {d["bytes"] for d in first if d["attempt"] == 0 and d["algorithm"] == "native"} & {
        d["bytes"] for d in first if d["attempt"] == 0 and d["algorithm"] == "allreduce:rd"
    }
    wait_done(submit("second"))
    second_log = (tmp_path / "second.log").read_text()
    every = lines(rows_file)
    assert every[: len(kept)] == kept  # kept as they were
    # Only the sizes the first job lacked are measured (suspects measured again after them
    # are new attempts, each once).
    said = [ln for ln in second_log.splitlines() if "interleaved: measuring" in ln]
    assert said and said[0].endswith(f"measuring {len(sizes) - len(done)} sizes"), second_log
    # (the native call is timed twice per size: beside rd, and alone, tune's reference)
    keys = [
        (d["algorithm"], d["bytes"], d["attempt"], d["interleaved"]) for d in map(json.loads, every)
    ]
    assert len(keys) == len(set(keys)), second_log[-3000:]
    assert {(a, b) for a, b, n, _ in keys if n == 0} == {
        (a, b) for a in ("native", "allreduce:rd") for b in sizes.values()
    }
    assert (tmp_path / "out" / "collkit-tuning.json").exists()


def lines(path: Path) -> list[str]:
    try:
        return [ln for ln in path.read_text().splitlines() if ln.strip()]
    except FileNotFoundError:
        return []


def test_down_leaves_no_slurm_or_munge_process() -> None:
    slurm_or_skip()
    before = {pid for pid, _ in slurm.daemon_processes()}
    c = Cluster.up(f"d{os.getpid() % 10**6}", 2, owner_pid=os.getpid(), slurm=True)
    try:
        mine = set(c.slurm_of().pids())
        assert len(mine) == 4 and not mine & before
        states = c.slurm_of().node_states()
        assert states == {"n0": "idle", "n1": "idle"}, states
    finally:
        removed = c.down()
    assert str(c.state_dir) in removed and not c.state_dir.exists()
    left = [(p, n) for p, n in slurm.daemon_processes() if p not in before]
    assert not left, left
