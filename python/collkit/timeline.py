"""Timelines of a simulated run: Perfetto / Chrome trace JSON and a picture in the style of
[Ruefenacht 2017]
Figs. 18-23 (one row per rank; sends, receives and computations as bars; messages as arrows).

Both need a result recorded with ``simulate(..., timeline=True)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from collkit.errors import InvalidArgumentError
from collkit.plotting import new_figure, save_figure
from collkit.simulate import SimResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_timeline", "trace_events", "write_perfetto"]

KIND_NAMES = ["send", "recv", "reduce", "copy", "compute", "sleep"]
KIND_COLORS = {
    "send": "#1f77b4",
    "recv": "#2ca02c",
    "reduce": "#ff7f0e",
    "copy": "#9467bd",
    "compute": "#d62728",
    "sleep": "#7f7f7f",
}


def _recorded(result: SimResult) -> dict[str, Any]:
    if result.op_start is None or result.schedule is None:
        raise InvalidArgumentError("no per-op times: simulate with timeline=True")
    arrays: dict[str, Any] = result.schedule.arrays()
    return arrays


def _tracks(result: SimResult, a: dict[str, Any]) -> tuple[list[tuple[int, str, int]], Any]:
    """Every recorded op's track: slices on one track never overlap, so each track's slices
    nest (Perfetto draws overlapping slices of one thread wrongly). A rank's ops go to one
    track per kind (send, recv, reduce, ...); where ops of one kind overlap (sends issued
    together), the kind takes as many tracks as it needs, each op the first that is free.
    Returns the tracks as (rank, kind, lane) and each op's track index (-1: not recorded)."""
    assert result.op_start is not None and result.op_end is not None
    ranks, kinds = a["rank"], a["kind"]
    start, end = result.op_start, result.op_end
    track_of = np.full(len(kinds), -1, dtype=np.int64)
    tracks: list[tuple[int, str, int]] = []
    lanes: dict[tuple[int, int], list[tuple[float, int]]] = {}  # (rank, kind) -> (free at, track)
    finite = np.isfinite(start) & np.isfinite(end)
    order = np.lexsort((-(end - start), start))  # by start; the longer first at a tie
    for k in order:
        if not finite[k]:
            continue
        key = (int(ranks[k]), int(kinds[k]))
        free = lanes.setdefault(key, [])
        s, e = float(start[k]), float(end[k])
        for i, (at, t) in enumerate(free):
            if at <= s:
                free[i] = (max(e, s), t)
                track_of[k] = t
                break
        else:
            track_of[k] = len(tracks)
            tracks.append((key[0], KIND_NAMES[key[1]], len(free)))
            free.append((max(e, s), len(tracks) - 1))
    return tracks, track_of


def trace_events(result: SimResult) -> dict[str, Any]:
    """The run as a Chrome trace (Perfetto's JSON format): one process per rank, in it one
    thread per kind of op (and more where ops of a kind overlap, so that the slices of one
    thread never overlap), a slice per op (ts / dur in microseconds, as the format wants), a
    flow per message from its send to its receive."""
    a = _recorded(result)
    assert result.op_start is not None and result.op_end is not None
    ranks, kinds, peers = a["rank"], a["kind"], a["peer"]
    lens, stages = a["len"], a["stage"]
    elem = result.schedule.elem_size if result.schedule is not None else 1
    tracks, track_of = _tracks(result, a)
    title = f"{result.algorithm} P={result.P} ({result.model.describe()})"
    events: list[dict[str, Any]] = []
    for r in range(result.P):
        events.append({"ph": "M", "name": "process_name", "pid": r, "args": {"name": f"rank {r}"}})
        events.append(
            {"ph": "M", "name": "process_sort_index", "pid": r, "args": {"sort_index": r}}
        )
    # Thread ids are unique over the whole trace (track index + 1); within a rank the kinds
    # keep the order of KIND_NAMES.
    for t, (r, kind, lane) in enumerate(tracks):
        name = kind if lane == 0 else f"{kind} {lane + 1}"
        events.append(
            {"ph": "M", "name": "thread_name", "pid": r, "tid": t + 1, "args": {"name": name}}
        )
        events.append(
            {
                "ph": "M",
                "name": "thread_sort_index",
                "pid": r,
                "tid": t + 1,
                "args": {"sort_index": KIND_NAMES.index(kind) * 1000 + lane},
            }
        )
    rank_begin = result.rank_op_begin
    assert rank_begin is not None
    for k in range(len(kinds)):
        if track_of[k] < 0:
            continue
        kind = KIND_NAMES[int(kinds[k])]
        start, end = float(result.op_start[k]), float(result.op_end[k])
        r = int(ranks[k])
        args: dict[str, Any] = {"op": int(k - int(rank_begin[r])), "stage": int(stages[k])}
        name = kind
        if kind in ("send", "recv"):
            args["peer"] = int(peers[k])
            args["bytes"] = int(lens[k]) * elem
            name = f"{kind} {'to' if kind == 'send' else 'from'} {int(peers[k])}"
        events.append(
            {
                "ph": "X",
                "name": name,
                "cat": kind,
                "pid": r,
                "tid": int(track_of[k]) + 1,
                "ts": start / 1e3,
                "dur": max(end - start, 0.0) / 1e3,
                "args": args,
            }
        )
    assert result.msg_send is not None and result.msg_recv is not None
    assert result.msg_depart is not None and result.msg_arrive is not None
    for m in range(len(result.msg_send)):
        s, rcv = int(result.msg_send[m]), int(result.msg_recv[m])
        if rcv >= len(kinds):
            continue
        # The flow starts inside the send's slice and ends inside the receive's slice.
        t_end = float(result.op_end[rcv])
        events.append(
            {
                "ph": "s",
                "id": m,
                "name": "message",
                "cat": "message",
                "pid": int(ranks[s]),
                "tid": int(track_of[s]) + 1,
                "ts": float(result.msg_depart[m]) / 1e3,
            }
        )
        events.append(
            {
                "ph": "f",
                "bp": "e",
                "id": m,
                "name": "message",
                "cat": "message",
                "pid": int(ranks[rcv]),
                "tid": int(track_of[rcv]) + 1,
                "ts": t_end / 1e3,
            }
        )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "algorithm": result.algorithm,
            "P": result.P,
            "model": result.model.describe(),
            "title": title,
            "makespan_ns": result.makespan,
        },
    }


def write_perfetto(result: SimResult, path: str | Path) -> Path:
    """Write the trace JSON (open it at ui.perfetto.dev or chrome://tracing)."""
    p = Path(path)
    p.write_text(json.dumps(trace_events(result)))
    return p


def plot_timeline(
    result: SimResult,
    path: str | Path | None = None,
    *,
    title: str | None = None,
    max_ranks: int = 64,
) -> Figure:
    """A picture of the run: per-rank rows, bars for ops (a receive drawn light while it waits
    for its message), arrows for messages from departure to arrival; the critical path in black
    outline. Returns the matplotlib Figure (the backend is left alone: a notebook shows it);
    with `path` it is also written there (png, svg or pdf; '.png' is added to a path without a
    suffix, see collkit.plotting.save_figure)."""
    from matplotlib.patches import Patch

    a = _recorded(result)
    if max_ranks < result.P:
        raise InvalidArgumentError(
            f"a picture of P = {result.P} ranks is unreadable (max_ranks = {max_ranks})"
        )
    assert result.op_start is not None and result.op_end is not None
    ranks, kinds = a["rank"], a["kind"]
    crit = set(int(k) for k in (result.critical_path if result.critical_path is not None else []))
    unit, scale = ("us", 1e3) if result.makespan >= 2e3 else ("ns", 1.0)
    fig_h = max(2.0, 0.45 * result.P + 1.2)
    fig = new_figure(figsize=(11, fig_h))
    ax = fig.subplots()
    h = 0.34
    for k in range(len(kinds)):
        kind = KIND_NAMES[int(kinds[k])]
        s, e = float(result.op_start[k]), float(result.op_end[k])
        if not np.isfinite(s) or not np.isfinite(e):
            continue
        r = int(ranks[k])
        # Sends above the rank's line, receives below, local work on it.
        y = r - h / 2 if kind == "send" else (r + h / 2 if kind == "recv" else r)
        width = max(e - s, result.makespan * 0.002) / scale
        alpha = 0.35 if kind == "recv" else 0.9
        ax.broken_barh(
            [(s / scale, width)],
            (y - h / 2, h),
            facecolors=KIND_COLORS[kind],
            alpha=alpha,
            edgecolor="black" if k in crit else "none",
            linewidth=1.2,
        )
    assert result.msg_send is not None and result.msg_recv is not None
    assert result.msg_depart is not None and result.msg_arrive is not None
    for m in range(len(result.msg_send)):
        s, rcv = int(result.msg_send[m]), int(result.msg_recv[m])
        if rcv >= len(kinds) or not np.isfinite(result.msg_arrive[m]):
            continue
        x0, x1 = float(result.msg_depart[m]) / scale, float(result.msg_arrive[m]) / scale
        y0, y1 = int(ranks[s]) - h / 2, int(ranks[rcv]) + h / 2
        ax.annotate(
            "",
            xy=(x1, y1),
            xytext=(x0, y0),
            arrowprops={"arrowstyle": "->", "color": "#444444", "lw": 0.7, "alpha": 0.8},
        )
    ax.set_yticks(range(result.P))
    ax.set_yticklabels([f"rank {r}" for r in range(result.P)])
    ax.set_ylim(result.P - 0.4, -0.6)
    ax.set_xlim(0, result.makespan / scale * 1.02 + 1e-9)
    ax.set_xlabel(f"time ({unit})")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(
        title or f"{result.algorithm}, P = {result.P}, {result.model.describe()}", fontsize=9
    )
    handles = [
        Patch(facecolor=c, label=n)
        for n, c in KIND_COLORS.items()
        if n in {KIND_NAMES[int(x)] for x in np.unique(kinds)}
    ]
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.12 - 0.3 / fig_h),
        ncol=len(handles),
        fontsize=8,
        frameon=False,
    )
    fig.tight_layout()
    if path is not None:
        save_figure(fig, path)
    return fig
