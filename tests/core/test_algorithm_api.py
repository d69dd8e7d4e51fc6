"""collkit.Algorithm: the typed public class over the private core's."""

from __future__ import annotations

import pytest

import collkit
from collkit import _core


def test_public_class_wraps_the_core() -> None:
    a = collkit.Algorithm("alltoall:bruck(r=2)")
    assert type(a) is not _core.Algorithm and isinstance(a.core, _core.Algorithm)
    assert a == collkit.Algorithm("alltoall:bruck") and len({a, collkit.Algorithm(a)}) == 1
    assert repr(a) == "Algorithm('alltoall:bruck')" and str(a) == a.canonical
    assert a.collective == "alltoall" and a.spec["name"] == "alltoall:bruck"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ((4, 2**70), "count"),  # unchecked: the binding's TypeError
        ((2**40, 1), "P"),
        ((4, 1.5), "count must be an integer"),
        ((4, True), "count must be an integer"),
        ((4, 1, 0), "elem_size"),
        ((4, -1), "count"),
    ],
)
def test_bad_problem_arguments_are_invalid_argument_errors(
    args: tuple[int, ...], needle: str
) -> None:
    a = collkit.Algorithm("allreduce:rd")
    for call in (a.generate, a.check, a.count_ops):
        with pytest.raises(collkit.InvalidArgumentError, match=needle):
            call(*args)


def test_generate_rank_checks_the_rank() -> None:
    a = collkit.Algorithm("allreduce:rd")
    assert a.generate_rank(P=10**6, rank=12345, count=1).rank == 12345
    with pytest.raises(collkit.InvalidArgumentError, match="rank"):
        a.generate_rank(P=4, rank=4, count=1)


def test_the_rest_of_collkit_takes_the_public_class() -> None:
    a = collkit.Algorithm("allreduce:rd")
    assert collkit.generate(a, P=5, count=2) == collkit.generate("allreduce:rd", P=5, count=2)
    assert collkit.verify_algorithm(a, P=5, count=2).ok
    assert (
        collkit.simulate(a, P=8, bytes=8).makespan
        == collkit.simulate("allreduce:rd", P=8, bytes=8).makespan
    )


def test_bad_names_raise_algorithm_name_error() -> None:
    for name in ("allreduce:nope", "allreduce:rd(", "x" * 20_000, "allreduce:ring(seg=x)"):
        with pytest.raises(collkit.AlgorithmNameError):
            collkit.Algorithm(name)


@pytest.mark.parametrize("radix", ["0", "1", "x", "-3", "99999999999"])
def test_bruck_radix_refused_when_the_name_is_parsed(radix: str) -> None:
    # A value that no P can make valid is refused at once, with a caret under it.
    with pytest.raises(collkit.AlgorithmNameError, match=r"(?s)must be 'auto' or an integer.*\^"):
        collkit.Algorithm(f"alltoall:bruck(r={radix})")
    collkit.Algorithm("alltoall:bruck(r=auto)")
    collkit.Algorithm("alltoall:bruck_modified(r=3)")


def test_schedule_and_rank_program_are_typed_public_classes() -> None:
    # unchecked: collkit.Schedule and RankProgram were the raw binding classes
    s = collkit.generate("reduce:binomial", P=5, count=2, root=3)
    assert type(s) is collkit.Schedule and isinstance(s.core, _core.Schedule)
    assert repr(s) == "Schedule('reduce:binomial', P=5, count=2, elem_size=8, root=3, ops=14)"
    r = s.rank(3)
    assert type(r) is collkit.RankProgram and r.rank == 3 and len(r) == len(r.arrays()["kind"])
    assert [p.rank for p in s.ranks()] == [0, 1, 2, 3, 4]
    assert sum(len(p) for p in s.ranks()) == s.total_ops
    alone = collkit.generate_rank("reduce:binomial", P=5, rank=3, count=2, root=3)
    assert type(alone) is collkit.RankProgram
    assert alone.arrays()["kind"].tolist() == r.arrays()["kind"].tolist()


@pytest.mark.parametrize("bad", [5, -1, 1.0, True, "0"])
def test_schedule_rank_is_checked(bad: object) -> None:
    s = collkit.generate("allreduce:rd", P=5, count=2)
    with pytest.raises(collkit.InvalidArgumentError, match="not a rank of P = 5"):
        s.rank(bad)  # type: ignore[arg-type]
    with pytest.raises(collkit.InvalidArgumentError, match="not an op of this rank"):
        s.rank(0).deps(10**6)


def test_schedule_from_arrays_round_trips_and_compares_by_value() -> None:
    s = collkit.generate("alltoall:bruck(r=3)", P=7, count=2)
    t = collkit.Schedule.from_arrays(
        s.arrays(), collective="alltoall", P=7, count=2, algorithm=s.algorithm
    )
    assert t == s and t is not s and t != collkit.generate("alltoall:linear", P=7, count=2)
    assert (t == "x") is False
    with pytest.raises(TypeError):
        collkit.Schedule(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        hash(s)
