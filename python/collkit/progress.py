"""Progress of a long campaign (bench, tune, simulated tune): rows done of rows planned, elapsed
time and an estimate of the time left (ETA).

On a terminal a rich progress bar on stderr; otherwise (a log file, a batch job, a pipe) a plain
line on stderr at most every `interval` seconds and one at the end, so a campaign of hours says
where it is without filling the log. Rows already in the results file (a resumed campaign) count
as done but not into the rate: the estimate is made from the rows this run measured.

Campaign functions take a `Ticker` (collkit.bench.run_campaign, collkit.tune.campaign): `grow(n)`
when n more rows are planned, `advance(n)` when n are done.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import IO, Any, Protocol


class Ticker(Protocol):
    def grow(self, n: int) -> None: ...

    def advance(self, n: int = 1, *, measured: bool = True) -> None: ...


def format_duration(seconds: float) -> str:
    """'45 s', '12 min 05 s', '3 h 20 min'."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class CampaignProgress:
    """Rows done of rows planned, with an ETA; a context manager (the bar lives inside it).

    `live`: a rich bar (default: when `stream` is a terminal). `interval`: seconds between plain
    lines. `clock`: for tests."""

    def __init__(
        self,
        what: str,
        total: int = 0,
        *,
        stream: IO[str] | None = None,
        live: bool | None = None,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what = what
        self.total = total
        self.done = 0
        self.measured = 0  # rows done by this run (not found in the results file)
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.interval = interval
        self.clock = clock
        self.t0 = clock()
        self._last_line = self.t0
        self._bar: Any = None
        self._task: Any = None

    # -- the numbers
    def elapsed(self) -> float:
        return self.clock() - self.t0

    def eta(self) -> float | None:
        """Seconds left at this run's rate, None before the first row this run measured."""
        if self.measured == 0:
            return None
        left = max(self.total - self.done, 0)
        return self.elapsed() / self.measured * left

    def line(self) -> str:
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        eta = self.eta()
        left = (
            "done"
            if self.total and self.done >= self.total
            else ("ETA unknown" if eta is None else f"ETA {format_duration(eta)}")
        )
        return (
            f"{self.what}: {self.done}/{self.total} rows{pct}, "
            f"{format_duration(self.elapsed())} elapsed, {left}"
        )

    # -- the Ticker
    def grow(self, n: int) -> None:
        self.total += n
        if self._bar is not None:
            self._bar.update(self._task, total=self.total)

    def advance(self, n: int = 1, *, measured: bool = True) -> None:
        self.done += n
        if measured:
            self.measured += n
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
        elif self.clock() - self._last_line >= self.interval:
            self._print(self.line())
            self._last_line = self.clock()

    def message(self, text: str) -> None:
        """A line above the bar (or a plain line)."""
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False)
        else:
            self._print(text)

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    # -- the bar
    def __enter__(self) -> CampaignProgress:
        if self.live:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("rows"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(file=self.stream, emoji=False),
                transient=False,
            )
            self._bar.start()
            self._task = self._bar.add_task(self.what, total=self.total, completed=self.done)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        else:
            self._print(self.line())


__all__ = ["CampaignProgress", "Ticker", "format_duration"]
