"""Across nodes: an emulated cluster (collkit.cluster, `collkit cluster`) on this machine, and
everything that crosses nodes run on it with both MPIs (the pip MPICH, Debian's Open MPI).

The cluster tests need root (network and UTS namespaces) and skip with that reason otherwise;
CI runs as root. One cluster of 3 nodes serves the module: -np 2 runs 2 nodes x 1 rank, -np 4
2 nodes x 2 ranks (filled in turn, or round-robin with map-by node), -np 3 3 nodes x 1. It is
owned by this process: a crash leaves it to `cluster.cleanup()`, which the fixture runs first.

Checked here: the node-aware algorithms (allreduce:hier, alltoall:bruck_local, allgather:hier) and
a sample of flat ones against the MPI's own calls by collkit_conformance; the placement collkit's
executor finds with MPI_Comm_split_type equal to the ranks' real hosts; the interposition library
on an unmodified program; `collkit bench --hosts` and `collkit tune --hosts` writing rows with the
nodes and ranks per node; Open MPI's coll/han as the reference for collkit's node-aware
algorithms. Timings on these nodes are emulated (shared cores, a bridge for a network): nothing
here asserts one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_mpi_conformance import summary
from test_pmpi import PROGRAMS, mpicc, outputs

from collkit import cluster
from collkit.cluster import Cluster
from collkit.errors import InvalidArgumentError, UnsupportedError
from collkit.mpi import MPI, Mpich, OpenMpi, launch_command, launch_env, source_dir
from collkit.placement import Placement
from collkit.results import read_jsonl
from mpi_support import built, mpich_or_skip, openmpi_or_skip

NODE_AWARE = (
    "allreduce:hier;allreduce:hier(intra=allreduce:rd);alltoall:bruck_local(r=3);allgather:hier"
)
FLAT = "allreduce:rd;allreduce:ring;alltoall:bruck;bcast:binomial;allgather:ring"
# (ranks, map-by): 2 nodes x 1, 2 nodes x 2 filled in turn, 2 nodes x 2 round-robin, 3 nodes x 1.
SHAPES = [(2, ""), (4, ""), (4, "node"), (3, "")]


def fake_mpi(kind: str) -> MPI:
    cls = {"mpich": Mpich, "openmpi": OpenMpi}.get(kind, MPI)
    return cls(mpicxx="mpicxx", mpiexec=f"/usr/bin/mpiexec.{kind}", version=kind)


# --- without root ---------------------------------------------------------------------------------


def test_needs_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "needs root" in cluster.root_reason()
    with pytest.raises(UnsupportedError, match="needs root"):
        Cluster.up("x", 2)
    from collkit.cli import main

    assert main(["cluster", "up", "--nodes", "2"]) == 2
    assert main(["cluster", "down"]) == 2
    hosts = tmp_path / "hosts"
    hosts.write_text(f"{cluster.MARKER}ck: 2 nodes\nn0\nn1\n")
    with pytest.raises(UnsupportedError, match="needs root"):
        cluster.from_hostfile(str(hosts))


@pytest.mark.parametrize(
    ("text", "error"),
    [("0gbit", "positive"), ("1 furlong", "unit"), ("fast", "unit"), ("-1mbit", "unit")],
)
def test_rate_errors(text: str, error: str) -> None:
    with pytest.raises(InvalidArgumentError, match=error):
        cluster.rate_bytes_per_s(text)
    assert cluster.rate_bytes_per_s("1gbit") == 125e6


@pytest.mark.parametrize("name", ["", "Up", "1a", "a-b", "abcdefghijklm", "a/b"])
def test_bad_names(name: str) -> None:
    with pytest.raises(InvalidArgumentError, match="cluster name"):
        cluster.check_name(name)


def test_layout_and_allocation() -> None:
    c = Cluster(name="x", nodes=3)
    assert c.layout(2) == (2, 1, "contiguous")
    assert c.layout(4, "node") == (2, 2, "round_robin")
    assert c.layout(3) == (3, 1, "contiguous")
    assert c.layout(7) == (3, 3, "contiguous")
    assert c.allocation(4).startswith("2 nodes x 2 ranks (emulated cluster x")
    assert c.allocation(7).startswith("7 ranks on 3 nodes of up to 3")


def test_launch_commands() -> None:
    c = Cluster(name="x", nodes=2)
    m = launch_command_of(c, "mpich", 4, "")
    assert m[: m.index("/usr/bin/mpiexec.mpich")][:4] == ["ip", "netns", "exec", "collkit-x-head"]
    assert "-hosts" in m and m[m.index("-hosts") + 1] == "n0:2,n1:2"
    assert launch_command_of(c, "mpich", 4, "node")[m.index("-hosts") + 1] == "n0,n1"
    o = launch_command_of(c, "openmpi", 2, "")
    assert o[o.index("--host") + 1] == "n0:1,n1:1" and o[o.index("--bind-to") + 1] == "none"
    assert o[o.index("plm_rsh_agent") + 1] == str(c.agent)
    with pytest.raises(InvalidArgumentError, match="placement"):
        c.launch_command(fake_mpi("mpich"), 2, ["a"], "rack")
    with pytest.raises(UnsupportedError, match="MPICH and Open MPI"):
        c.launch_command(fake_mpi("other"), 2, ["a"])


def launch_command_of(c: Cluster, kind: str, np: int, map_by: str) -> list[str]:
    return c.launch_command(fake_mpi(kind), np, ["prog", "arg"], map_by)


def test_plain_host_files_are_not_clusters(tmp_path: Path) -> None:
    plain = tmp_path / "hosts"
    plain.write_text("node1:4\nnode2:4\n")
    assert cluster.from_hostfile(str(plain)) is None
    assert cluster.from_hostfile(None) is None
    gone = tmp_path / "gone"
    gone.write_text(f"{cluster.MARKER}zz9: 2 nodes\nn0\nn1\n")
    with pytest.raises(UnsupportedError, match="not up"):
        cluster.from_hostfile(str(gone))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["tune", "allreduce", "--hosts", "no-such-hostfile"], "does not exist"),
        (["tune", "allreduce", "--hosts", "h", "--simulate", "postal"], "not --simulate"),
        (["run", "-np", "2", "--hosts", "no-such-hostfile", "--", "true"], "does not exist"),
        (["cluster", "up", "--nodes", "0"], "--nodes 0 must be in 1..64"),
        (["cluster", "up", "--rate", "fast"], "link rate 'fast'"),
        (["cluster", "up", "--name", "Bad-Name"], "cluster name"),
    ],
)
def test_bad_hosts_and_cluster_arguments(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from collkit.cli import main

    assert main(argv) == 2
    assert message in capsys.readouterr().err


# --- the cluster ----------------------------------------------------------------------------------


def root_or_skip() -> None:
    if why := cluster.root_reason():
        pytest.skip(why)


@pytest.fixture(scope="module")
def nodes() -> Iterator[Cluster]:
    root_or_skip()
    cluster.cleanup()  # leftovers of runs that crashed (clusters of live runs are kept)
    with cluster.emulated(f"t{os.getpid()}", 3) as c:
        yield c


def host_addresses() -> str:
    return subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout


def test_nodes_are_hosts_on_their_own_network(nodes: Cluster) -> None:
    for i, name in enumerate(nodes.hostnames):
        r = nodes.run(["sh", "-c", "hostname; ip -o -4 addr show dev ck0; ip route"], node=i)
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert lines[0] == name
        assert f"inet {cluster.SUBNET}.{i + 1}/24" in lines[1]
        assert not any(ln.startswith("default") for ln in lines), r.stdout  # no way out
        # The names resolve inside the namespaces, to the nodes' own addresses.
        r = nodes.run(["getent", "hosts", "n1"], node=i)
        assert r.stdout.split()[0] == f"{cluster.SUBNET}.2", r.stdout + r.stderr
    # Nothing in the machine's own namespace: no address of the cluster, no interface of it.
    assert cluster.SUBNET not in host_addresses()
    assert set(nodes.all_namespaces()) <= set(cluster.namespaces())
    text = nodes.hostfile.read_text()
    assert text.startswith(cluster.MARKER + nodes.name) and text.split("\n", 1)[1] == "n0\nn1\nn2\n"


def test_up_with_a_rate_and_down_removes_everything() -> None:
    root_or_skip()
    c = Cluster.up(f"r{os.getpid()}", 2, rate="100mbit", owner_pid=os.getpid())
    try:
        r = subprocess.run(
            ["ip", "netns", "exec", c.node_ns(0), "tc", "qdisc", "show", "dev", "ck0"],
            capture_output=True,
            text=True,
        )
        assert "tbf" in r.stdout and "100Mbit" in r.stdout, r.stdout
        with pytest.raises(InvalidArgumentError, match="already up"):
            Cluster.up(c.name, 2)
    finally:
        removed = c.down()
    assert f"netns {c.head_ns}" in removed
    assert not [n for n in cluster.namespaces() if n.startswith(f"collkit-{c.name}-")]
    assert not c.state_dir.exists() and not (cluster.NETNS_ETC / c.node_ns(0)).exists()
    with pytest.raises(UnsupportedError, match="not up"):
        Cluster.load(c.name)


def test_cleanup_finds_leftovers_and_keeps_live_clusters() -> None:
    root_or_skip()
    gone = subprocess.Popen(["true"])  # a process that has ended: the owner of a leftover
    gone.wait()
    left = Cluster.up(f"l{os.getpid()}", 1, owner_pid=gone.pid)
    live = Cluster.up(f"k{os.getpid()}", 1, owner_pid=os.getpid())
    # A namespace of a run that crashed before it wrote its state: found by its prefix.
    subprocess.run(["ip", "netns", "add", f"collkit-o{os.getpid()}-n0"], check=True)
    try:
        assert left.leftover() and not live.leftover()
        removed = cluster.cleanup()
        assert f"netns {left.head_ns}" in removed
        assert f"netns collkit-o{os.getpid()}-n0" in removed
        assert Cluster.load(live.name).nodes == 1
    finally:
        live.down()
        left.down()


def test_cli_up_status_down(capsys: pytest.CaptureFixture[str]) -> None:
    root_or_skip()
    from collkit.cli import main

    name = f"c{os.getpid()}"
    assert main(["cluster", "up", "--name", name, "--nodes", "2"]) == 0
    try:
        out = capsys.readouterr().out
        assert f"/run/collkit/{name}/hosts" in out
        assert main(["cluster", "status"]) == 0
        assert f"up: {name}: 2 nodes (n0, n1)" in capsys.readouterr().out
        assert main(["cluster", "up", "--name", name, "--nodes", "2"]) == 2
        assert "already up" in capsys.readouterr().err
    finally:
        assert main(["cluster", "down", name]) == 0
    assert main(["cluster", "down", name]) == 1


# --- over MPI, across nodes -----------------------------------------------------------------------


def run_on(
    c: Cluster,
    mpi: MPI,
    np: int,
    argv: list[str],
    env: dict[str, str] | None = None,
    map_by: str = "",
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    hosts = str(c.hostfile)
    full, _ = launch_env(mpi, np, env, hosts=hosts)
    return subprocess.run(
        launch_command(mpi, np, argv, hosts=hosts, map_by=map_by),
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def conformance(
    c: Cluster, mpi: MPI, np: int, algos: str, map_by: str = "", env: dict[str, str] | None = None
) -> int:
    prog = str(built(mpi) / "collkit_conformance")
    r = run_on(c, mpi, np, [prog, "--algos", algos, "--level", "quick"], env, map_by)
    cases, failures, _ = summary(r.stdout)
    assert r.returncode == 0 and failures == 0, r.stdout[-4000:] + r.stderr[-3000:]
    return cases


@pytest.fixture(scope="module")
def mpich() -> MPI:
    mpi = mpich_or_skip()
    built(mpi)
    return mpi


@pytest.fixture(scope="module")
def openmpi() -> MPI:
    mpi = openmpi_or_skip()
    built(mpi)
    return mpi


# By default (CI): MPICH on 2 nodes x 1 and 2 x 2 (node-aware and flat), Open MPI on 2 x 2;
# round-robin nodes run by default in the placement test (hier on them, checked); every shape on
# both MPIs, with the whole conformance check: slow.
@pytest.mark.parametrize(
    ("np", "map_by", "algos"),
    [
        (2, "", f"{NODE_AWARE};{FLAT}"),
        (4, "", f"{NODE_AWARE};{FLAT}"),
        pytest.param(4, "node", NODE_AWARE, marks=pytest.mark.slow),
    ],
)
def test_mpich_against_its_own_calls(
    nodes: Cluster, mpich: MPI, np: int, map_by: str, algos: str
) -> None:
    assert conformance(nodes, mpich, np, algos, map_by) > 100


def test_openmpi_against_its_own_calls(nodes: Cluster, openmpi: MPI) -> None:
    assert conformance(nodes, openmpi, 4, f"{NODE_AWARE};{FLAT}") > 100


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
@pytest.mark.parametrize(("np", "map_by"), SHAPES)
def test_every_shape_both_mpis(nodes: Cluster, kind: str, np: int, map_by: str) -> None:
    mpi = mpich_or_skip() if kind == "mpich" else openmpi_or_skip()
    conformance(nodes, mpi, np, f"{NODE_AWARE};{FLAT}", map_by)


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
def test_messages_between_nodes_cross_the_bridge(nodes: Cluster, kind: str) -> None:
    """100 allreduces on 2 nodes x 1 rank, collkit's and the MPI's own: each sends at least one
    packet from node 1 through its link (shared memory between the nodes would send none: UCX
    takes them for one machine unless told otherwise, Cluster.launch_env)."""
    mpi = mpich_or_skip() if kind == "mpich" else openmpi_or_skip()
    prog = [
        str(built(mpi) / "collkit_bench"), "--collective", "allreduce",
        "--algos", "allreduce:rd,native", "--sizes", "8", "--iters", "100", "--warmup", "0",
        "--max-ms", "60000",
    ]  # fmt: skip
    before = nodes.packets(1)
    r = run_on(nodes, mpi, 2, prog)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert r.stdout.count('"kind": "row"') == 2, r.stdout[-2000:]
    sent = nodes.packets(1)[0] - before[0]
    assert sent >= 2 * 100, f"only {sent} packets from node 1: the ranks did not use the network"


# --- the placement the executor finds is the real one ---------------------------------------------


def where_program(mpi: MPI, tmp: Path) -> Path:
    bindir = built(mpi)
    exe = tmp / f"where_{mpi.kind}"
    cmd = [
        mpicc(mpi), "-O1", "-o", str(exe), str(PROGRAMS / "where.c"),
        f"-I{source_dir() / 'mpi' / 'include'}", f"-L{bindir}", "-lcollkit_mpi",
        f"-Wl,-rpath,{bindir}",
    ]  # fmt: skip
    subprocess.run(cmd, check=True)
    return exe


def real_placement(stdout: str, np: int) -> str:
    """The placement the ranks' host names make, in collkit's words (collkit.placement)."""
    lines = [ln.split() for ln in stdout.splitlines() if ln.startswith("host ")]
    host = {int(r): h for _, r, h in lines}
    assert sorted(host) == list(range(np)), stdout
    first: dict[str, int] = {}
    ids = [first.setdefault(host[r], r) for r in range(np)]
    rpn = max(ids.count(i) for i in set(ids))
    for order in ("contiguous", "round_robin"):
        p = Placement(rpn, order)
        nodes = [p.node_of(r, P=np) for r in range(np)]
        if all((nodes[a] == nodes[b]) == (ids[a] == ids[b]) for a in range(np) for b in range(np)):
            return p.describe()
    return "none"


@pytest.mark.parametrize(
    ("kind", "np", "map_by"),
    [
        *(("mpich", np, map_by) for np, map_by in SHAPES),
        ("openmpi", 4, "node"),
        *(
            pytest.param("openmpi", np, map_by, marks=pytest.mark.slow)
            for np, map_by in SHAPES
            if (np, map_by) != (4, "node")
        ),
    ],
)
def test_placement_found_is_the_real_one(
    nodes: Cluster, tmp_path_factory: pytest.TempPathFactory, kind: str, np: int, map_by: str
) -> None:
    mpi = mpich_or_skip() if kind == "mpich" else openmpi_or_skip()
    exe = where_program(mpi, tmp_path_factory.mktemp("where"))
    r = run_on(nodes, mpi, np, [str(exe)], {"COLLKIT_VERBOSE": "1"}, map_by, timeout=120)
    assert r.returncode == 0 and f"ok P={np}" in r.stdout, r.stdout + r.stderr[-3000:]
    real = real_placement(r.stdout, np)
    used, rpn, order = nodes.layout(np, map_by)
    assert real == Placement(rpn, order).describe()  # the launcher put them where it said
    assert len({ln.split()[2] for ln in r.stdout.splitlines() if ln.startswith("host ")}) == used
    assert f"collkit: placement of {np} ranks (MPI_Comm_split_type): {real}\n" in r.stderr, (
        r.stderr[-3000:]
    )


# --- an unmodified program under the interposition library ----------------------------------------


def test_interposition_across_nodes(nodes: Cluster, mpich: MPI, tmp_path: Path) -> None:
    """collectives_app (it knows nothing of collkit) under `collkit run --hosts` with a table
    that routes allreduce, alltoall and allgather to the node-aware algorithms: the same output
    as without collkit, on 2 nodes x 2 ranks, and the log says they ran there."""
    exe = tmp_path / "collectives_app"
    subprocess.run(
        [mpicc(mpich), "-O1", "-o", str(exe), str(PROGRAMS / "collectives_app.c")], check=True
    )
    rules = [
        {"collective": c, "P": [2, 64], "bytes": [0, 1 << 20], "algorithm": a}
        for c, a in (
            ("allreduce", "allreduce:hier"),
            ("alltoall", "alltoall:bruck_local"),
            ("allgather", "allgather:hier"),
        )
    ]
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"format": "collkit-tuning", "version": 1, "rules": rules}))
    plain = run_on(nodes, mpich, 4, [str(exe), str(tmp_path / "plain")])
    assert plain.returncode == 0, plain.stderr[-2000:]
    cmd = [sys.executable, "-m", "collkit", "run", "-np", "4", "--hosts", str(nodes.hostfile)]
    env = dict(os.environ, MPIEXEC=mpich.mpiexec, MPICXX=mpich.mpicxx)
    lib = subprocess.run(
        [*cmd, "--tuning", str(table), "--verbose", "--", str(exe), str(tmp_path / "lib")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert lib.returncode == 0, lib.stderr[-3000:]
    assert outputs(tmp_path / "lib", 4) == outputs(tmp_path / "plain", 4)
    log = lib.stderr
    found = "collkit: placement of 4 ranks (MPI_Comm_split_type): 2 ranks per node, contiguous"
    assert found in log, log[-3000:]
    for algo in ("allreduce:hier", "alltoall:bruck_local", "allgather:hier"):
        assert f"-> {algo} (table)" in log, log[-3000:]


# --- collkit bench and tune across nodes ----------------------------------------------------------


def test_bench_hosts_writes_nodes_and_ranks_per_node(
    nodes: Cluster, mpich: MPI, tmp_path: Path
) -> None:
    out = tmp_path / "rows.jsonl"
    r = subprocess.run(
        [
            sys.executable, "-m", "collkit", "bench", "allreduce", "-np", "2,4",
            "--algos", "hier", "--sizes", "8,4KiB", "--iters", "20", "--warmup", "2",
            "--hosts", str(nodes.hostfile), "-o", str(out),
        ],
        env=dict(os.environ, MPIEXEC=mpich.mpiexec, MPICXX=mpich.mpicxx),
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    rows = read_jsonl(out)
    assert len(rows) == 2 * 2
    shapes = {row.P: row.allocation.split(" (")[0] for row in rows}
    assert shapes == {2: "2 nodes x 1 ranks", 4: "2 nodes x 2 ranks"}
    assert all("emulated cluster" in row.allocation for row in rows)
    assert all(row.median_us > 0 and not row.error for row in rows), [r.error for r in rows]
    assert all(row.valid is True for row in rows)  # checked against the MPI's own call


def test_tune_hosts_end_to_end(nodes: Cluster, mpich: MPI, tmp_path: Path) -> None:
    r = subprocess.run(
        [
            sys.executable, "-m", "collkit", "tune", "allreduce", "-np", "4", "--sizes", "8,1KiB",
            "--only", "hier", "--no-mpi-algos", "--iters", "10", "--warmup", "2",
            "--max-ms", "100", "--no-plot", "--hosts", str(nodes.hostfile),
            "-o", str(tmp_path),
        ],
        env=dict(os.environ, MPIEXEC=mpich.mpiexec, MPICXX=mpich.mpicxx),
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    rows = read_jsonl(tmp_path / "tune.jsonl")
    assert {row.algorithm for row in rows} == {"native", "allreduce:hier"}
    assert all(row.allocation.startswith("2 nodes x 2 ranks (emulated") for row in rows)
    assert all(row.samples and row.valid is not False for row in rows)
    assert all(row.valid is True for row in rows if row.algorithm != "native")
    table = json.loads((tmp_path / "collkit-tuning.json").read_text())
    assert table["format"] == "collkit-tuning"


def test_calibrate_hosts_measures_between_two_nodes(
    nodes: Cluster, mpich: MPI, tmp_path: Path
) -> None:
    """`collkit calibrate --hosts` puts its two ranks on two nodes: its ping-pongs cross the
    bridge, and it writes a profile."""
    before = nodes.packets(1)[0]
    out = tmp_path / "profile.json"
    r = subprocess.run(
        [
            sys.executable, "-m", "collkit", "calibrate", "--quick", "--sizes", "8,1KiB",
            "--hosts", str(nodes.hostfile), "-o", str(out),
        ],
        env=dict(os.environ, MPIEXEC=mpich.mpiexec, MPICXX=mpich.mpicxx),
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(out.read_text())
    assert nodes.packets(1)[0] - before > 100


# --- Open MPI's coll/han, which needs more than one node ------------------------------------------


def test_openmpi_han_is_the_reference(nodes: Cluster, openmpi: MPI) -> None:
    """coll/han disqualifies itself on one node; on 2 nodes x 2 ranks it is selected (its own
    log says so) and collkit's node-aware allreduce agrees with it."""
    env = {**openmpi.force_env("allreduce", "ompi:han"), "OMPI_MCA_coll_base_verbose": "10"}
    prog = str(built(openmpi) / "collkit_conformance")
    algos = "allreduce:hier;allreduce:hier(intra=allreduce:rd)"
    argv = [prog, "--algos", algos, "--counts", "1,13,1000"]
    r = run_on(nodes, openmpi, 4, argv, env)
    cases, failures, _ = summary(r.stdout)
    assert r.returncode == 0 and failures == 0 and cases > 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "coll:han:comm_query (0/MPI_COMM_WORLD): pick me! pick me!" in r.stderr, r.stderr[-3000:]
    assert re.search(r"comm_select: selecting\s+han, priority 100, Enabled", r.stderr)
