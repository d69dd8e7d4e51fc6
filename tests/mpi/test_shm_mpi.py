"""The executor's shared-memory transport (mpi/src/shm.cpp) on both MPIs.

The conformance matrix (test_mpi_conformance.py) runs with shared memory on, its default; here:
that it is on (and off with COLLKIT_SHM=0), checked against the MPI's own calls with peers on and
off the node (COLLKIT_TEST_RPN makes the executor take the ranks to be on smaller nodes, so a
schedule mixes shared memory and MPI), with a small slot size (messages of one pair alternate
between the two transports), a stress of slot reuse: many back-to-back calls of different
collectives, algorithms and sizes on several communicators, each result checked, and the ring
itself with a reader that releases out of order (collkit_bench_shm --check-order)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from test_mpi_conformance import REFERENCE_ENV, run_conformance, summary
from test_pmpi import PROGRAMS, collkit_run, launch, mpicc

from collkit.mpi import MPI
from mpi_support import built, mpich_or_skip, openmpi_or_skip, run_program

ALGOS = (
    "allreduce:rd;allreduce:ring;allreduce:rabenseifner;allreduce:hier;bcast:pipeline(seg=16);"
    "reduce:binomial(seg=64);alltoall:pairwise;alltoall:bruck;allgather:ring;"
    "barrier:dissemination;reduce_scatter_block:pairwise;gather:binomial;scatter:binomial"
)


def the_mpi(kind: str) -> MPI:
    return mpich_or_skip() if kind == "mpich" else openmpi_or_skip()


def conformance(mpi: MPI, P: int, env: dict[str, str], algos: str = ALGOS) -> str:
    # Open MPI's own gather needs its linear algorithm as the reference (see there).
    env = {"COLLKIT_VERBOSE": "1", **REFERENCE_ENV.get((mpi.kind, "gather"), {}), **env}
    cases, r = run_conformance(mpi, built(mpi), P, algos, env)
    assert cases > 100
    return r.stderr


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
def test_on_by_default_and_off_with_the_switch(kind: str) -> None:
    mpi = the_mpi(kind)
    log = conformance(mpi, 2, {}, "allreduce:rd;bcast:binomial")
    assert "transport on a communicator of 2 ranks: shm (2 ranks on this node" in log, log[-2000:]
    log = conformance(mpi, 2, {"COLLKIT_SHM": "0"}, "allreduce:rd;bcast:binomial")
    assert "transport on a communicator of 2 ranks: p2p (COLLKIT_SHM=0)" in log, log[-2000:]
    assert "shm (" not in log


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
@pytest.mark.parametrize("order", ["contiguous", "round_robin"])
def test_peers_on_and_off_the_node(kind: str, order: str) -> None:
    # 4 ranks on "nodes" of 2: every schedule mixes shared-memory and MPI peers.
    log = conformance(the_mpi(kind), 4, {"COLLKIT_TEST_RPN": "2", "COLLKIT_TEST_ORDER": order})
    assert "transport on a communicator of 4 ranks: shm (2 ranks on this node" in log, log[-2000:]


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
def test_plans_on_shared_memory_alone_run_in_turn(kind: str) -> None:
    # COLLKIT_VERBOSE=2 names each plan's way of running: in turn (one op at a time, no queue:
    # executor.cpp, in_turn_order) where every message is on shared memory and that order is
    # proven to complete; the general loop otherwise, with the reason.
    mpi = the_mpi(kind)
    log = conformance(
        mpi, 4, {"COLLKIT_VERBOSE": "2"}, "allreduce:rd;bcast:binomial;allgather:ring"
    )
    assert "collkit: plan allreduce:rd P=4 8 B, rank 0 (" in log, log[-2000:]
    for name in ("allreduce:rd", "bcast:binomial"):
        lines = [x for x in log.splitlines() if f"collkit: plan {name} P=4 " in x]
        assert lines and all(": in turn" in x for x in lines), lines
    bcast = [x for x in log.splitlines() if "collkit: plan bcast:binomial P=4 " in x]
    assert all(x.endswith(": in turn") for x in bcast), bcast  # no reduce to fold a copy into
    # A receive whose one reader is the reduce after it is fused with it (the reduce reads the
    # peer's slot; executor.cpp, prepare_shm), and the copy (out = in) before the first such pair
    # is folded into it (forward_copies): the send reads `in`, the reduce writes out = in (+) the
    # peer's message. rd at P = 4 receives both rounds into one scratch buffer: each round's
    # receive is still read by its own reduce alone (the previous round's reduce read it before,
    # the next round's receive overwrites it). The results are checked against the MPI's as always.
    rd4 = [x for x in log.splitlines() if "collkit: plan allreduce:rd P=4 " in x]
    assert all(x.endswith(": in turn, 2 receives fused, 1 copy forwarded") for x in rd4), rd4
    two = conformance(mpi, 2, {"COLLKIT_VERBOSE": "2"}, "allreduce:rd;reduce:binomial")
    rd = [x for x in two.splitlines() if "collkit: plan allreduce:rd P=2 " in x]
    assert rd and all(x.endswith(": in turn, 1 receive fused, 1 copy forwarded") for x in rd), rd
    root = [
        x for x in two.splitlines() if "collkit: plan reduce:binomial P=2 " in x and "(3 ops)" in x
    ]
    assert root and all(x.endswith(": in turn, 1 receive fused, 1 copy forwarded") for x in root)
    # A ring's sends wait on one receive each, not on all earlier ones: no order proven.
    ring = [x for x in log.splitlines() if "collkit: plan allgather:ring P=4 " in x]
    assert any("dataflow (no receive that every send still to come waits on)" in x for x in ring)
    # Peers off the node: some messages on MPI, the general loop.
    env = {"COLLKIT_VERBOSE": "2", "COLLKIT_TEST_RPN": "2"}
    log = conformance(mpi, 4, env, "allreduce:rd;bcast:binomial")
    assert "collkit: plan allreduce:rd P=4 8 B, rank 0" in log, log[-2000:]
    assert "dataflow (messages on MPI point-to-point)" in log, log[-2000:]


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
@pytest.mark.parametrize("P", [2, 3])
def test_the_general_loop_on_shared_memory(kind: str, P: int) -> None:
    # COLLKIT_SHM_IN_TURN=0: every plan through the dataflow loop with shared memory, as plans
    # that cannot run in turn do; checked against the MPI's own calls like the default.
    log = conformance(the_mpi(kind), P, {"COLLKIT_VERBOSE": "2", "COLLKIT_SHM_IN_TURN": "0"})
    assert "dataflow (COLLKIT_SHM_IN_TURN=0)" in log, log[-2000:]
    assert ": in turn" not in log


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
def test_one_pair_on_both_transports(kind: str) -> None:
    # Slots of 64 bytes: within one pair, small messages take the slots and larger ones MPI.
    log = conformance(the_mpi(kind), 3, {"COLLKIT_SHM_MAX": "64"})
    assert "slots of 64 B" in log, log[-2000:]


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
def test_slots_without_small_bodies(kind: str) -> None:
    # Slots of 4 KiB (as a node of many ranks shrinks them to fit the segment): no small bodies,
    # messages of 241 B-4 KiB in the 32 bodies, with a window of 32.
    log = conformance(the_mpi(kind), 3, {"COLLKIT_SHM_MAX": "4096", "COLLKIT_VERBOSE": "1"})
    assert "slots of 4096 B" in log, log[-2000:]


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
@pytest.mark.parametrize("P", [2, 3])
def test_messages_up_to_the_default_slot(kind: str, P: int) -> None:
    # The default slot is 32 KiB: counts whose messages lie between 16 and 32 KiB (2500 and
    # 4000 elements: 20000 and 32000 bytes of doubles) go through the slots now, checked against
    # the MPI's own calls.
    mpi = the_mpi(kind)
    algos = "allreduce:rd;reduce:binomial;bcast:binomial;allgather:ring;alltoall:pairwise"
    env = {"COLLKIT_VERBOSE": "1", **REFERENCE_ENV.get((mpi.kind, "allreduce"), {})}
    r = run_program(
        mpi,
        built(mpi),
        P,
        "collkit_conformance",
        "--algos",
        algos,
        "--counts",
        "2500,4000",
        env=env,
    )
    cases, failures, _ = summary(r.stdout)
    assert r.returncode == 0 and failures == 0 and cases > 20, r.stdout[-3000:] + r.stderr[-3000:]
    assert "32 slots of 32768 B per pair" in r.stderr, r.stderr[-2000:]


@pytest.fixture(scope="module", params=["mpich", "openmpi"])
def stress(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[MPI, Path]:
    mpi = the_mpi(str(request.param))
    bindir = built(mpi)
    exe = tmp_path_factory.mktemp("stress") / "shm_stress"
    include = Path(__file__).resolve().parents[2] / "mpi" / "include"
    subprocess.run(
        [
            mpicc(mpi),
            "-O1",
            "-I",
            str(include),
            "-o",
            str(exe),
            str(PROGRAMS / "shm_stress.c"),
            "-L",
            str(bindir),
            "-lcollkit_mpi",
            f"-Wl,-rpath,{bindir}",
        ],
        check=True,
    )
    return mpi, exe


@pytest.mark.parametrize(("P", "env"), [(2, {}), (4, {"COLLKIT_TEST_RPN": "2"}), (3, {})])
def test_slot_reuse_under_stress(stress: tuple[MPI, Path], P: int, env: dict[str, str]) -> None:
    mpi, exe = stress
    r = launch(mpi, P, [str(exe), "400"], env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "shm_stress ok 400 transport=shm" in r.stdout, r.stdout + r.stderr[-2000:]


# Each MPI without its single-copy path for large messages, so the sender's MPI moves the data
# only from inside an MPI call (the MPI's own collective completes the program either way).
NO_SINGLE_COPY = {
    "mpich": {"MPIR_CVAR_CH4_CMA_ENABLE": "0", "MPIR_CVAR_CH4_XPMEM_ENABLE": "0"},
    "openmpi": {"OMPI_MCA_btl_vader_single_copy_mechanism": "none"},
}


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
@pytest.mark.parametrize("in_turn", ["1", "0"])
def test_a_wait_in_collkit_progresses_the_programs_pending_send(
    kind: str, in_turn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rank 0 starts a 4 MiB MPI_Isend, then calls MPI_Allreduce and MPI_Bcast (through collkit,
    on shared memory); rank 1 receives first, then joins. collkit's wait must let rank 0's MPI
    move the send (MPI's progress rule): before it did, the program hung under collkit and ran
    natively."""
    mpi = the_mpi(kind)
    built(mpi)
    exe = tmp_path / "pending_send"
    src = PROGRAMS / "pending_send.c"
    subprocess.run([mpicc(mpi), "-O1", "-o", str(exe), str(src)], check=True)
    for k, v in {**NO_SINGLE_COPY[kind], "COLLKIT_SHM_IN_TURN": in_turn}.items():
        monkeypatch.setenv(k, v)
    program = [str(exe), str(4 << 20), "4"]
    plain = launch(mpi, 2, program)
    assert plain.returncode == 0 and "pending_send ok" in plain.stdout, plain.stderr[-2000:]
    table = tmp_path / "t.json"
    rules = [
        {"collective": c, "P": [2, 2], "bytes": [1, 64], "algorithm": a}
        for c, a in (("allreduce", "allreduce:rd"), ("bcast", "bcast:binomial"))
    ]
    table.write_text(json.dumps({"format": "collkit-tuning", "version": 1, "rules": rules}))
    try:
        r = collkit_run(mpi, 2, table, program)
    except subprocess.TimeoutExpired:
        pytest.fail("the program hung under collkit (it completes with the MPI's own calls)")
    assert r.returncode == 0 and "pending_send ok" in r.stdout, r.stdout + r.stderr[-3000:]
    assert "allreduce P=2 8 B (class 8..15 B) -> allreduce:rd (table)" in r.stderr
    assert "transport on a communicator of 2 ranks: shm" in r.stderr, r.stderr[-2000:]


@pytest.mark.parametrize("kind", ["mpich", "openmpi"])
def test_ring_released_out_of_order(kind: str) -> None:
    # The reader holds up to 31 messages read but not released and releases them in a random
    # order: the sender may reuse a slot only once every earlier message is released. Messages
    # of 8-8192 B, in the heads, the small bodies (a window of four) and the bodies. A slot
    # overwritten too early shows as changed bytes ("check-order bad") or as a hang (timeout);
    # a small body's window of K instead of four fails it ("check-order bad: message 8").
    mpi = the_mpi(kind)
    r = run_program(mpi, built(mpi), 2, "collkit_bench_shm", "--check-order", "50000")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "check-order ok 50000" in r.stdout, r.stdout + r.stderr[-2000:]
