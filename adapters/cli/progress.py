"""Progress on stderr for the command's long work: :class:`Bar` (a count of messages with
its rate and time left, for ``send``, ``receive`` and each stage of the Spark commands) and
:class:`Progress` (a bar per benchmark run); :class:`StageBars` shows the Spark commands'
:class:`Stages`, a Bar per stage."""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable
from typing import ClassVar, Protocol, TextIO

__all__ = ["Bar", "Progress", "StageBars", "Stages", "duration"]


def duration(seconds: float) -> str:
    """Seconds as a person reads them: ``42s``, ``3m05s``, ``2h07m``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Bar:
    """How far long work has come, on ``stream`` (stderr by default).

    On a terminal, one line redrawn in place at most ten times a second::

        sending   [##########..........]  512,000 / 1,000,000  85,311 msg/s  6s left

    (without ``total``: the count and the rate only). Anywhere else (a pipe, a file, CI's
    log), a plain line every ``every`` seconds, so a log shows the work is alive without
    filling up. The rate is that of the last five seconds or so; the time left is what
    remains at that rate. :meth:`close` takes the bar off the terminal (the command's
    summary then prints in its place) and is safe to call twice. ``clock`` is injected for
    tests.
    """

    #: Seconds of history the rate is measured over.
    WINDOW = 5.0

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        stream: TextIO | None = None,
        tty: bool | None = None,
        unit: str = "msg",
        every: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.total = total
        self.stream = sys.stderr if stream is None else stream
        self.tty = self.stream.isatty() if tty is None else tty
        self.unit = unit
        self.every = every
        self._clock = clock
        start = clock()
        self._history: deque[tuple[float, int]] = deque([(start, 0)])
        self._drawn = start - 1.0  # (the first update draws at once)
        self._printed = start
        self._shown = False
        self.done = 0

    def rate(self) -> float | None:
        """Units per second over the last :attr:`WINDOW` seconds (``None`` before any time
        has passed)."""
        (t0, n0), (t1, n1) = self._history[0], self._history[-1]
        return (n1 - n0) / (t1 - t0) if t1 > t0 else None

    def line(self) -> str:
        """The text of the bar as it stands."""
        rate = self.rate()
        parts = [f"{self.label:<9}"]
        if self.total:
            width = 20
            filled = min(width, width * self.done // self.total)
            parts.append(f"[{'#' * filled}{'.' * (width - filled)}]")
            parts.append(f"{self.done:>{len(f'{self.total:,}')},} / {self.total:,}")
        else:
            parts.append(f"{self.done:,}")
        if rate is not None:
            parts.append(f"{rate:,.0f} {self.unit}/s")
            if self.total and rate > 0 and self.done < self.total:
                parts.append(f"{duration((self.total - self.done) / rate)} left")
        return "  ".join(parts)

    def update(self, done: int, label: str | None = None) -> None:
        """``done`` units so far (and, optionally, a new label: the next stage)."""
        now = self._clock()
        self.done = done
        if label is not None and label != self.label:
            self.label = label
            self._history = deque([(now, done)])
        self._history.append((now, done))
        while len(self._history) > 2 and now - self._history[1][0] >= self.WINDOW:
            self._history.popleft()
        if self.tty:
            if now - self._drawn >= 0.1 or (self.total is not None and done >= self.total):
                self._drawn = now
                self._shown = True
                self.stream.write(f"\r\033[K{self.line()}")
                self.stream.flush()
        elif now - self._printed >= self.every:
            self._printed = now
            self.stream.write(self.line() + "\n")
            self.stream.flush()

    def lift(self) -> None:
        """Take the bar off the terminal for a moment, for a line of output that must not
        share its line (the next :meth:`update` draws it again, under that line)."""
        self.close()

    def close(self) -> None:
        """Take the bar off the terminal (a plain stream keeps its lines)."""
        if self._shown:
            self._shown = False
            self.stream.write("\r\033[K")
            self.stream.flush()


class Stages(Protocol):
    """What the commands report as they go (:class:`StageBars` shows it): a stage begins
    (the previous one has ended), with its total when it has one and a note of what it does;
    then how much of it is done."""

    def stage(self, name: str, total: int | None = None, note: str = "") -> None: ...

    def done(self, count: int) -> None: ...


class StageBars:
    """:class:`Stages` shown on ``stream`` (standard error): a line when a stage begins and
    when it ends, and between them a :class:`~amqp_sansio.adapters.cli.progress.Bar` of its
    count, with its rate and time left (on a terminal, redrawn in place; elsewhere, a plain
    line every ten seconds)::

        publishing: 100,000 / 100,000 in 2s, 48,211 msg/s
        starting Spark: done in 9s
        processing  [########............]   40,000 / 100,000  6,851 msg/s  9s left

    On a terminal the line a stage begins with (``publishing: 100,000 orders to ...``) gives
    way to its bar, and the bar to the line it ends with, which stays. Without a stream
    nothing is shown; the counts are kept either way, for the line of an interrupted
    command (:meth:`interrupted`). ``tty`` and ``clock`` are injected for tests."""

    #: How a stage's count is said once done.
    PAST: ClassVar[dict[str, str]] = {
        "publishing": "published",
        "receiving": "received",
        "processing": "processed",
    }

    def __init__(
        self,
        stream: TextIO | None,
        *,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.tty = (stream is not None and stream.isatty()) if tty is None else tty
        self._clock = clock
        self.name: str | None = None
        self.total: int | None = None
        self.count = 0
        self.counts: dict[str, tuple[int, int]] = {}  # a stage's count and total, by name
        self._started = 0.0
        self._bar: Bar | None = None

    def stage(self, name: str, total: int | None = None, note: str = "") -> None:
        self.close()
        self.name, self.total, self.count = name, total, 0
        self._started = self._clock()
        if total is not None:
            self.counts[name] = (0, total)
        if self.stream is None:
            return
        line = f"{name}: {note}" if note else name
        self._write(f"\r\033[K{line}" if self.tty else f"{line}\n")
        if total:
            self._bar = Bar(name, total, stream=self.stream, tty=self.tty, clock=self._clock)

    def done(self, count: int) -> None:
        self.count = count
        if self.name is not None and self.total is not None:
            self.counts[self.name] = (count, self.total)
        if self._bar is not None:
            self._bar.update(count)

    def close(self) -> None:
        """End the stage: the line that says what it did (safe to call twice)."""
        if self.name is None:
            return
        name, self.name = self.name, None
        if self.stream is None:
            return
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        seconds = self._clock() - self._started
        if self.total is None:
            line = f"{name}: done in {duration(seconds)}"
        else:
            rate = f", {self.count / seconds:,.0f} msg/s" if seconds > 0 else ""
            line = f"{name}: {self.count:,} / {self.total:,} in {duration(seconds)}{rate}"
        self._write(f"\r\033[K{line}\n" if self.tty else f"{line}\n")

    def abandon(self) -> None:
        """Take the stage off the terminal without its last line (the command's error or
        interruption says what happened instead)."""
        if self.name is None:
            return
        self.name = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self.stream is not None and self.tty:
            self._write("\r\033[K")

    def interrupted(self, stage: str | None) -> str:
        """``while processing (published 100,000 of 100,000, processed 40,000 of
        100,000)``: the stage an interruption stopped, and the counts so far."""
        counts = ", ".join(
            f"{self.PAST.get(name, name)} {count:,} of {total:,}"
            for name, (count, total) in self.counts.items()
        )
        where = f"while {stage}" if stage else "at the end"
        return f"{where} ({counts})" if counts else where

    def _write(self, text: str) -> None:
        assert self.stream is not None
        self.stream.write(text)
        self.stream.flush()


class Progress:
    """Progress of a long benchmark on stderr: a bar redrawn in place (carriage return)
    when stderr is a terminal; otherwise one plain line per finished run."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.stream = sys.stderr if stream is None else stream
        self.tty = self.stream.isatty()
        self._last = 0.0

    def __call__(self, label: str, done: int, rate: float | None = None) -> None:
        if not self.tty:
            if rate is not None:
                print(f"{label}: {done:,} messages, {rate:,.0f} msg/s", file=self.stream)
                self.stream.flush()
            return
        now = time.monotonic()
        if rate is None and now - self._last < 0.1:
            return
        self._last = now
        width = 30
        filled = width * done // self.total
        bar = "#" * filled + "." * (width - filled)
        line = f"\r{label:<17} [{bar}] {done:>9,} / {self.total:,}"
        self.stream.write(line)
        self.stream.flush()

    def clear(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()
