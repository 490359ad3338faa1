"""The command's progress bar (:class:`~amqp_sansio.adapters.cli.progress.Bar`) on an
injected clock: what a terminal and a log see."""

from __future__ import annotations

import io

from amqp_sansio.adapters.cli.progress import Bar, duration


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_terminal_bar_has_count_rate_and_time_left() -> None:
    out, clock = io.StringIO(), Clock()
    bar = Bar("sending", 1000, stream=out, tty=True, clock=clock)
    for second in range(1, 4):
        clock.now += 1.0
        bar.update(100 * second)
    last = out.getvalue().split("\r\033[K")[-1]
    assert last == "sending    [######..............]    300 / 1,000  100 msg/s  7s left"
    bar.close()
    assert out.getvalue().endswith("\r\033[K")
    bar.close()  # a second close writes nothing
    assert out.getvalue().count("\r\033[K") == 4  # three draws, one close


def test_terminal_redraws_at_most_ten_times_a_second_but_always_the_last() -> None:
    out, clock = io.StringIO(), Clock()
    bar = Bar("sending", 500, stream=out, tty=True, clock=clock)
    for n in range(1, 501):
        clock.now += 0.001
        bar.update(n)
    draws = out.getvalue().split("\r\033[K")[1:]
    assert 5 <= len(draws) <= 8  # 0.5 s of work: one draw per 0.1 s, and the total
    assert draws[-1].split()[1:5] == ["[####################]", "500", "/", "500"]
    assert "left" not in draws[-1]


def test_plain_stream_gets_a_line_every_period() -> None:
    out, clock = io.StringIO(), Clock()
    bar = Bar("receiving", None, stream=out, tty=False, clock=clock, every=10.0)
    for second in range(1, 26):
        clock.now += 1.0
        bar.update(50 * second)
    lines = out.getvalue().splitlines()
    assert lines == ["receiving  500  50 msg/s", "receiving  1,000  50 msg/s"]
    bar.close()
    assert "\r" not in out.getvalue()


def test_rate_follows_the_last_seconds_and_a_new_stage_starts_over() -> None:
    out, clock = io.StringIO(), Clock()
    bar = Bar("publishing", 10_000, stream=out, tty=True, clock=clock)
    for _ in range(10):
        clock.now += 1.0
        bar.update(bar.done + 1000)
    for _ in range(10):  # slower now: the rate shown is the recent one
        clock.now += 1.0
        bar.update(bar.done + 10)
    assert bar.rate() == 10.0
    bar.update(0, label="processing")
    assert bar.rate() is None
    assert bar.line().startswith("processing  [....................]       0 / 10,000")


def test_duration() -> None:
    assert [duration(s) for s in (0, 41.6, 185, 7620)] == ["0s", "42s", "3m05s", "2h07m"]
