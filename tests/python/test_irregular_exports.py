"""The MPIs' tuning files for the irregular collectives, without an MPI: MPICH's selection tree
keys allgatherv and reduce_scatter by the call's total bytes with MPICH's own algorithm names,
keeps a non-commutative reduce_scatter on MPICH's branch; Open MPI's rules file has their ids,
sizes them by the total (not times P) and gives alltoallv one rule per P (tests/mpi/
test_irregular_bench.py loads both files into the MPIs)."""

from __future__ import annotations

from typing import Any

from collkit.mpi.mpich import selection_file
from collkit.mpi.openmpi import rules_file
from collkit.tune.select import Choice, Comparison

# The shape of MPICH 5's built-in branches for these collectives (its libmpi's tree).
DEFAULT: dict[str, Any] = {
    "collective=allgatherv": {
        "comm_type=intra": {"comm_size=any": {"algorithm=MPIR_Allgatherv_intra_ring": {}}},
        "comm_type=inter": {"algorithm=X": {}},
    },
    "collective=reduce_scatter": {
        "comm_type=intra": {
            "is_commutative=yes": {"algorithm=MPIR_Reduce_scatter_intra_pairwise": {}},
            "is_commutative=no": {"algorithm=MPIR_Reduce_scatter_intra_recursive_doubling": {}},
        }
    },
    "collective=alltoallv": {"comm_type=intra": {"algorithm=A": {}}},
}


def forced(coll: str, P: int, nbytes: int, algo: str) -> Choice:
    return Choice(
        coll, P, nbytes, "measured", None, Comparison(algo, 1, 2, 2, 1e-9, (1.5, 2.5)), []
    )


def test_mpich_keys_allgatherv_and_reduce_scatter_by_the_total() -> None:
    tree = selection_file(
        [
            forced("allgatherv", 4, 64, "mpich:brucks"),
            forced("allgatherv", 4, 1024, "mpich:recursive_doubling"),
            forced("reduce_scatter", 4, 256, "mpich:recursive_halving"),
            forced("alltoallv", 4, 64, "mpich:scattered"),
        ],
        DEFAULT,
    )
    ag = tree["collective=allgatherv"]["comm_type=intra"]["comm_size<=4"]
    assert ag["total_msg_size<=1023"] == {"algorithm=MPIR_Allgatherv_intra_brucks": {}}
    assert ag["total_msg_size<=2047"] == {"algorithm=MPIR_Allgatherv_intra_recursive_doubling": {}}
    assert not any(k.startswith("avg_msg_size") for k in ag)
    assert tree["collective=allgatherv"]["comm_type=inter"] == {"algorithm=X": {}}
    rs = tree["collective=reduce_scatter"]["comm_type=intra"]["comm_size<=4"]
    yes = rs["is_commutative=yes"]
    assert yes["total_msg_size<=511"] == {
        "algorithm=MPIR_Reduce_scatter_intra_recursive_halving": {}
    }
    # sizes collkit did not tune, and every non-commutative call: MPICH's own choice
    assert yes["total_msg_size<256"] == {"algorithm=MPIR_Reduce_scatter_intra_pairwise": {}}
    assert rs["is_commutative=no"] == {"algorithm=MPIR_Reduce_scatter_intra_recursive_doubling": {}}
    # alltoallv has no message size in MPICH's tree (it asserts on one): its own branch stays
    assert tree["collective=alltoallv"] == DEFAULT["collective=alltoallv"]


def _rules(text: str, coll_id: int) -> list[tuple[int, list[tuple[int, int]]]]:
    """(communicator size, [(message size, algorithm)]) of one collective in a rules file."""
    nums = [int(ln.split("#")[0].split()[0]) for ln in text.splitlines() if ln[:1].isdigit()]
    lines = [ln.split("#")[0].split() for ln in text.splitlines() if ln[:1].isdigit()]
    i = 1
    for _ in range(nums[0]):
        cid, ncomm = nums[i], nums[i + 1]
        i += 2
        out = []
        for _ in range(ncomm):
            P, nmsg = nums[i], nums[i + 1]
            i += 2
            msgs = [(int(lines[i + k][0]), int(lines[i + k][1])) for k in range(nmsg)]
            i += nmsg
            out.append((P, msgs))
        if cid == coll_id:
            return out
    raise AssertionError(f"no collective {coll_id} in\n{text}")


def test_open_mpi_rules_size_the_irregular_calls_as_coll_tuned_does() -> None:
    text = rules_file(
        [
            forced("allgatherv", 4, 64, "ompi:bruck"),
            forced("allgatherv", 4, 1024, "ompi:ring"),
            forced("alltoallv", 4, 64, "ompi:pairwise"),
            forced("alltoallv", 4, 4096, "ompi:pairwise"),
            forced("alltoallv", 8, 64, "ompi:pairwise"),
            forced("alltoallv", 8, 4096, "ompi:basic_linear"),
            forced("gatherv", 4, 64, "mpich:linear"),
        ]
    )
    # allgatherv (id 1): the total, not multiplied by P; bruck 2, ring 3
    (p4, p5) = _rules(text, 1)
    assert p4 == (4, [(0, 0), (64, 2), (1024, 3), (2048, 0)]) and p5 == (5, [(0, 0)])
    # alltoallv (id 4): one rule per P, at size 0 (what coll/tuned asks); P = 8's sizes differ
    a2av = dict(_rules(text, 4))
    assert a2av[4] == [(0, 2)] and a2av[8] == [(0, 0)]
    assert "gatherv: no coll/tuned rules id" in text
