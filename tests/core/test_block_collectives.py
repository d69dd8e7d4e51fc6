"""The block collectives (allgather, reduce_scatter_block, gather, scatter): every
registered algorithm and parameter set through the verifier, for every root of the rooted ones,
under MPI_IN_PLACE as the spec places it, with counts 0, 1, odd and P - 1, and with a
non-commutative op wherever the algorithm does not declare that it needs a commutative one.

The algorithms are read from the registry, so a new one is swept without being named here."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

import collkit
from collkit.collectives import collective
from conftest import EVERY_P

BLOCK_COLLECTIVES = ("allgather", "reduce_scatter_block", "gather", "scatter")


def _names() -> list[str]:
    """Every algorithm of the four collectives, with every combination of its parameter grid."""
    out: list[str] = []
    for spec in collkit.algorithms():
        if spec["collective"] in BLOCK_COLLECTIVES:
            out.extend(spec["grid"] or [spec["name"]])
    return out


NAMES = _names()
# The first parameter set of each algorithm: the one taken past 256 ranks.
FIRST = {n for i, n in enumerate(NAMES) if i == 0 or n.split("(")[0] != NAMES[i - 1].split("(")[0]}
# P * (P - 1) messages: past a few hundred ranks the symbolic execution takes minutes.
QUADRATIC = {"allgather:ring", "reduce_scatter_block:pairwise", "reduce_scatter_block:ring"}


def _rooted(name: str) -> bool:
    return bool(collective(name.split(":", 1)[0])["rooted"])


def _runs(name: str, P: int) -> bool:
    r = collkit.Algorithm(name).spec["restrictions"]
    if r["needs_placement"]:  # node-aware (allgather:hier): tests/core/test_hier.py, on placements
        return False
    return not r["power_of_two"] or P & (P - 1) == 0


def _check(name: str, P: int, counts: Iterable[int], roots: Iterable[int] | None = None) -> None:
    algo = collkit.Algorithm(name)
    commutative = algo.spec["restrictions"]["commutative_op"]
    if roots is None:
        roots = range(P) if _rooted(name) else [0]
    for count in counts:
        for root in roots:
            s = algo.generate(P, count, 8, root)
            for in_place in (False, True):
                r = collkit.verify(s, commutative=commutative, in_place=in_place)
                where = f"{name} P={P} count={count} root={root} in_place={in_place}"
                assert r.ok, where + ": " + r.summary()
                if not commutative and s.collective == "reduce_scatter_block":
                    assert r.consistent_noncommutative, where


def _some_roots(name: str, P: int) -> list[int]:
    return sorted({0, 1 % P, P // 2, P - 1}) if _rooted(name) else [0]


def test_every_block_collective_has_algorithms_and_costs() -> None:
    assert {n.split(":", 1)[0] for n in NAMES} == set(BLOCK_COLLECTIVES)
    for spec in collkit.algorithms():
        if spec["collective"] in BLOCK_COLLECTIVES:
            # Node-aware compositions cost what their parts cost: no closed form while their
            # bcast parts declare none.
            modeled = spec["has_model"] or spec["restrictions"]["needs_placement"]
            assert modeled and spec["reference"] and spec["phases"], spec["name"]


@pytest.mark.parametrize("name", NAMES)
def test_every_P_to_20_every_root(name: str) -> None:
    for P in range(1, 21):
        if _runs(name, P):
            _check(name, P, sorted({0, 1, 3, P - 1}), None if P <= 12 else _some_roots(name, P))


def _sample(name: str) -> list[int]:
    """Larger P, to 4096 where the verifier's work (messages, and elements: P^2 for a
    reduce_scatter_block) stays in milliseconds; one parameter set of each algorithm past 256."""
    if name.split("(")[0] in QUADRATIC:
        return [37, 64, 100]
    big = [1024] if name.startswith("reduce_scatter_block") else [1024, 4096]
    big = big if name in FIRST else []
    return [37, 64, 100, 256, *big]


@pytest.mark.parametrize("name", NAMES)
def test_a_sample_to_4096(name: str) -> None:
    for P in _sample(name):
        if _runs(name, P):
            _check(name, P, [1] if P > 256 else [1, 2], _some_roots(name, P))


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_P_to_256(name: str) -> None:
    """Every P <= 256: every root of the rooted ones with count 1, and counts 0 and 5 (and
    P - 1, to P = 64 where every rank holds P blocks: P^3 elements to execute) for the roots
    0, 1, P/2, P - 1."""
    every_rank_has_P_blocks = not _rooted(name)
    for P in EVERY_P:
        if not _runs(name, P):
            continue
        _check(name, P, [1], None)
        big = [P - 1] if P <= 64 or not every_rank_has_P_blocks else []
        _check(name, P, sorted({0, 5, *big}), _some_roots(name, P))


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("reduce_scatter_block")])
def test_reduce_scatter_block_at_4096(name: str) -> None:
    if name.split("(")[0] not in QUADRATIC and name in FIRST:
        _check(name, 4096, [1], [0])


def _text(collective: str, ranks: list[str], P: int = 2) -> collkit.Schedule:
    body = "".join(f"rank {r}\n{ops}" for r, ops in enumerate(ranks))
    return collkit.from_text(
        f'collective {collective}\nalgorithm ""\nP {P}\ncount 1\nelem_size 8\nroot 0\n{body}'
    )


def test_in_place_allgather_input_is_its_own_block_of_out() -> None:
    """Rank 0 parks rank 1's block in out[0] before copying its input there: right with two
    buffers, wrong under MPI_IN_PLACE, where its input *is* out[0]."""
    s = _text(
        "allgather",
        [
            "  0: send in[0:1] to 1\n  1: recv out[0:1] from 1\n"
            "  2: copy out[1:2] = out[0:1]  after 1\n  3: copy out[0:1] = in[0:1]  after 2\n",
            "  0: send in[0:1] to 0\n  1: recv out[0:1] from 0\n  2: copy out[1:2] = in[0:1]\n",
        ],
    )
    assert collkit.verify(s).ok
    r = collkit.verify(s, in_place=True)
    assert not r.ok and "rank 0" in r.summary() and "out[0:1]" in r.summary()


def test_in_place_scatter_root_keeps_its_block_in_the_send_buffer() -> None:
    """The root stages rank 1's block in `out`: under MPI_IN_PLACE `out` is in[root n], so the
    staging overwrites the root's own block."""
    s = _text(
        "scatter",
        [
            "  0: copy out[0:1] = in[1:2]\n  1: send out[0:1] to 1  after 0\n"
            "  2: copy out[0:1] = in[0:1]  after 1\n",
            "  0: recv out[0:1] from 0\n",
        ],
    )
    assert collkit.verify(s).ok
    assert not collkit.verify(s, in_place=True).ok


def test_in_place_reduce_scatter_block_reads_the_receive_buffer() -> None:
    """MPI_IN_PLACE: the P input blocks are in the receive buffer, which is P blocks long; a
    result written to out[0] before block 0 is sent away is caught."""
    good = collkit.generate("reduce_scatter_block:pairwise", 3, 2)
    assert collkit.verify(good, commutative=True, in_place=True).ok
    early = _text(
        "reduce_scatter_block",
        [
            "  0: copy out[0:1] = in[1:2]\n  1: send in[0:1] to 1  after 0\n"
            "  2: recv out[0:1] from 1\n  3: copy out[0:1] = in[0:1]  after 2\n",
            "  0: recv out[0:1] from 0\n  1: send in[0:1] to 0\n  2: copy out[0:1] = in[1:2]\n",
        ],
    )
    assert not collkit.verify(early, in_place=True).ok


def test_the_cli_shows_verifies_simulates_and_exports_a_new_collective(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from collkit.cli import main

    assert main(["verify", "gather:binomial", "-P", "1..9", "--count", "0,3", "--in-place"]) == 0
    assert main(["show", "scatter:knomial(k=3)", "-P", "5", "--root", "2", "--count", "1"]) == 0
    assert "collective scatter" in capsys.readouterr().out
    for ext in ("txt", "json", "goal"):
        path = tmp_path / f"ag.{ext}"
        assert (
            main(["export", "allgather:bruck(r=3)", "-P", "7", "--count", "2", "-o", str(path)])
            == 0
        )
        assert main(["verify", "--file", str(path), "--in-place"]) == 0
        assert main(["simulate", "--file", str(path)]) == 0
    capsys.readouterr()
    assert main(["simulate", "reduce_scatter_block:halving", "-P", "12", "--count", "3"]) == 0
    assert "B per block" in capsys.readouterr().out
    assert main(["algorithms", "reduce_scatter_block"]) == 0
    out = capsys.readouterr().out
    assert "reduce_scatter_block:halving" in out and "commutative" in out
