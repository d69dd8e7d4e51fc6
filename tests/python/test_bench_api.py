"""collkit.bench from Python: BenchOptions in, the rows out; its checks before anything starts
(without an MPI: the MPI is a stand-in that runs nothing), and one short run on the MPI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import collkit.bench as cb
from collkit.bench import BenchOptions, BenchResult
from collkit.errors import CollkitError, InvalidArgumentError


class _FakeMPI:
    """An MPI that is found but never launched: check_bench only asks it names."""

    version = "Fake MPI 1.0"

    def describe(self) -> str:
        return self.version

    def native_algorithms(self, collective: str) -> list[str]:
        return []

    def force_env(self, collective: str, name: str) -> dict[str, str]:
        raise InvalidArgumentError(f"{name}: not an algorithm of {self.version}")


@pytest.fixture
def fake_mpi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cb, "find_mpi", lambda *_: _FakeMPI())


def _no_mpi(*_: object) -> None:
    raise AssertionError("an MPI was looked for")


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        (BenchOptions("allreduce", root=1), "allreduce has no root"),
        (BenchOptions("bcast", P=[2], root=2), "--root 2 is not a rank of P = 2"),
        (BenchOptions("nope"), "unknown collective 'nope'"),
        (BenchOptions("allreduce", hosts="/no/such/hosts"), "--hosts: /no/such/hosts does not"),
        (BenchOptions("allreduce", P=[2**31]), "at most 2^31 - 1"),
    ],
)
def test_options_errors_come_before_the_mpi_is_looked_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, opts: BenchOptions, message: str
) -> None:
    monkeypatch.setattr(cb, "find_mpi", _no_mpi)
    opts.out = str(tmp_path / "r.jsonl")
    with pytest.raises(InvalidArgumentError, match=message.replace("^", r"\^")):
        cb.bench(opts)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"algorithms": ["rd", " "]}, "empty entry in --algos"),
        ({"algorithms": ["all-mpi"]}, "collkit knows no algorithms of this MPI"),
        ({"algorithms": ["bcast:binomial"]}, "is a bcast algorithm, not allreduce"),
        ({"algorithms": ["mpich:nope"]}, "not an algorithm of Fake MPI"),
        ({"sizes": [12]}, "12 B is not a whole number of 8-byte double"),
        ({"datatype": "long"}, "datatype 'long' must be one of"),
        ({"placements": ["nowhere"]}, "placement 'nowhere' must be one of"),
        ({"sync": "never"}, "sync must be 'barrier' or 'window'"),
    ],
)
def test_a_bad_benchmark_is_refused_before_it_runs(
    fake_mpi: None, tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    opts = BenchOptions("allreduce", P=[2], out=str(tmp_path / "r.jsonl"), **change)
    with pytest.raises(CollkitError, match=message):
        cb.check_bench(opts)
    assert list(tmp_path.iterdir()) == []


def test_a_results_file_not_ending_in_jsonl_is_refused_before_anything_is_built(
    fake_mpi: None, tmp_path: Path
) -> None:
    opts = BenchOptions("allreduce", P=[2], out=str(tmp_path / "r"))
    with pytest.raises(CollkitError, match=r"must end in \.jsonl"):
        cb.check_bench(opts)
    assert list(tmp_path.iterdir()) == []


def test_the_plan_names_the_campaign_and_the_file(fake_mpi: None, tmp_path: Path) -> None:
    plan = cb.check_bench(
        BenchOptions("allreduce", ["rd", "native"], [2], [8, 64], out=str(tmp_path / "C.jsonl"))
    )
    assert plan.campaign.algorithms == ["allreduce:rd", "native"]
    assert plan.campaign.datatype == "double" and plan.out == tmp_path / "C.jsonl"
    named = cb.check_bench(BenchOptions("bcast", out=str(tmp_path / "COLLECTIVE.jsonl")))
    assert named.out == tmp_path / "bcast.jsonl"


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    iterations=st.integers(-3, 3),
    warmup=st.integers(-3, 3),
    block=st.integers(-3, 3),
    rounds=st.integers(-3, 200),
)
def test_numbers_out_of_range_are_a_clear_error(
    fake_mpi: None, tmp_path: Path, iterations: int, warmup: int, block: int, rounds: int
) -> None:
    opts = BenchOptions(
        "allreduce",
        P=[2],
        iterations=iterations,
        warmup=warmup,
        block=block,
        rounds=rounds,
        out=str(tmp_path / "r.jsonl"),
    )
    good = iterations >= 1 and warmup >= 0 and block >= 1 and 1 <= rounds <= 100
    if good:
        assert cb.check_bench(opts).campaign.iterations == iterations
    else:
        with pytest.raises(InvalidArgumentError):
            cb.check_bench(opts)
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.mpi
def test_a_bench_from_python_gives_the_rows_the_command_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from collkit.cli import main

    out = tmp_path / "r.jsonl"
    opts = BenchOptions(
        "allreduce",
        ["native", "rd"],
        [2],
        [8, 64],
        iterations=20,
        warmup=2,
        max_ms=200,
        out=str(out),
    )
    opts.plot = False
    res = cb.bench(opts)
    assert isinstance(res, BenchResult) and res.ok
    assert {(r.algorithm, r.bytes) for r in res.rows} == {
        (a, b) for a in ("native", "allreduce:rd") for b in (8, 64)
    }
    lines = out.read_text().count("\n")
    # the command on the same file measures nothing again and prints the same rows
    args = ["allreduce", "--algos", "native,rd", "-P", "2", "--sizes", "8,64", "--iters", "20"]
    code = main(["bench", *args, "--warmup", "2", "--max-ms", "200", "-o", str(out), "--json"])
    assert code == 0 and out.read_text().count("\n") == lines
    printed = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert [(d["algorithm"], d["bytes"], d["median_us"]) for d in printed] == [
        (r.algorithm, r.bytes, r.median_us) for r in res.rows
    ]


def test_a_given_mpi_is_the_one_benched(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cb, "find_mpi", _no_mpi)
    mine = _FakeMPI()
    plan = cb.check_bench(BenchOptions("bcast", P=[2], out=str(tmp_path / "r.jsonl")), mpi=mine)
    assert plan.mpi is mine and plan.campaign.algorithms == ["native"]
