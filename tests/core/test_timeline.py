"""Timelines: Perfetto tracks whose slices nest, and pictures returned as Figures with the
matplotlib backend left alone."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib
import pytest
from matplotlib.figure import Figure

import collkit
from collkit.timeline import plot_timeline, trace_events


def _overlapping(slices: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    """Pairs of slices of one track that overlap without one containing the other."""
    bad = []
    xs = sorted(slices, key=lambda e: (e["ts"], -e["dur"]))
    stack: list[dict[str, Any]] = []
    for e in xs:
        while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"] + 1e-12:
            stack.pop()
        if stack and e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"] + 1e-12:
            bad.append((stack[-1]["name"], e["name"]))
        stack.append(e)
    return bad


@pytest.mark.parametrize(
    ("algo", "P", "nbytes", "model", "params"),
    [
        ("allreduce:ring", 4, 1 << 20, "loggops", {"L": "1us", "o": "200ns", "G": "0.1ns"}),
        ("allreduce:ring", 5, 1 << 20, "postal", {"alpha": "1us", "beta": "0.1ns"}),
        ("alltoall:linear", 6, 4096, "pipelined-postal", {"beta": "0.5ns"}),
        ("bcast:binomial", 7, 64, "logp", {}),
    ],
)
def test_slices_of_one_track_nest(
    algo: str, P: int, nbytes: int, model: str, params: dict[str, str]
) -> None:
    r = collkit.simulate(algo, P, bytes=nbytes, model=model, timeline=True, **params)
    ev = trace_events(r)["traceEvents"]
    slices = [e for e in ev if e["ph"] == "X"]
    assert len(slices) == r.ops
    by_track: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for e in slices:
        by_track[(e["pid"], e["tid"])].append(e)
    for track, xs in by_track.items():
        assert _overlapping(xs) == [], f"track {track} has overlapping slices"
    # Every track is named, and holds one rank's ops of one kind.
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    assert set(by_track) <= set(names)
    for (pid, tid), xs in by_track.items():
        assert {e["cat"] for e in xs} == {names[(pid, tid)].split()[0]}
    assert {e["pid"] for e in slices} == set(range(P))


def test_the_ring_at_1MiB_overlaps_within_a_rank() -> None:
    """The case of the issue: a ring step sends and receives at once, so one rank's ops overlap;
    they must then sit on different tracks (a single track per rank could not nest them)."""
    r = collkit.simulate(
        "allreduce:ring", 4, bytes=1 << 20, model="loggops", G="0.1ns", timeline=True
    )
    ev = trace_events(r)["traceEvents"]
    rank0 = [e for e in ev if e["ph"] == "X" and e["pid"] == 0]
    assert _overlapping(rank0), "the premise: rank 0's ops overlap in time"
    assert len({e["tid"] for e in rank0}) >= 2


def test_flows_bind_to_the_tracks_of_their_send_and_receive() -> None:
    r = collkit.simulate("alltoall:linear", 4, bytes=64, model="loggp", timeline=True)
    ev = trace_events(r)["traceEvents"]
    slices = [e for e in ev if e["ph"] == "X"]
    for ph, cat in (("s", "send"), ("f", "recv")):
        for f in (e for e in ev if e["ph"] == ph):
            inside = [
                s
                for s in slices
                if (s["pid"], s["tid"]) == (f["pid"], f["tid"])
                and s["cat"] == cat
                and s["ts"] - 1e-9 <= f["ts"] <= s["ts"] + s["dur"] + 1e-9
            ]
            assert inside, f"flow {ph} {f['id']} lies in no {cat} slice of its track"


def test_plot_returns_a_figure_and_leaves_the_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(matplotlib, "use", lambda *a, **k: calls.append(str(a)))
    r = collkit.simulate("allreduce:rd", 4, bytes=8, model="pipelined-postal", timeline=True)
    fig = plot_timeline(r)
    assert isinstance(fig, Figure) and fig.axes
    assert calls == []
    p = plot_timeline(r, tmp_path / "rd4")
    assert isinstance(p, Figure)
    assert (tmp_path / "rd4.png").read_bytes()[:4] == b"\x89PNG"
