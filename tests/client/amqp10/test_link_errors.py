"""One error for one cause (issue 14): a link the peer refuses raises
:class:`~amqp_sansio.adapters.sockets.LinkRefusedError` at once, carrying the peer's
condition, in each adapter, and ``amqp-sansio send``/``receive`` exit 3 saying "refused";
a peer that detaches cleanly after every outcome has come leaves ``amqp-sansio send`` with
exit status 0 (core spec 2.6.6), one that detaches before then with 3.

The peers are ``amqp-sansio broker`` started as a user starts it (no options) and our own
``listen`` with an application that refuses, or detaches after a number of messages."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from amqp_sansio.adapters import aio, cli, sockets

import amqp_sansio as a

WAIT = 30.0
#: What "at once" allows: the refusal comes in the answer to the attach.
AT_ONCE = 3.0

trio = pytest.importorskip("trio", reason="trio is in the 'trio' and 'test' extras")
from amqp_sansio.adapters import trio_adapter  # noqa: E402
from support.adapters import ADAPTERS  # noqa: E402
from support.broker_process import BrokerProcess  # noqa: E402


@pytest.fixture(scope="module")
def broker_url() -> Iterator[str]:
    """``amqp-sansio broker --port 0``: the user's command, on a free port."""
    with BrokerProcess(wait=WAIT) as broker:
        yield broker.url


def listener(on_link: Any) -> Any:
    """Our ``sockets.listen`` with ``on_link``, serving in a thread: yields its port."""
    return ADAPTERS["sockets"].serve(on_link)


def refuse_everything(link: Any) -> None:
    link.refuse(a.Error(condition=a.Symbol("amqp:not-found"), description="nothing here"))


def open_link(adapter: str, url: str, kind: str, **options: Any) -> None:
    """Attach a ``kind`` link to ``url`` with ``adapter`` (and detach it)."""
    if adapter == "sockets":
        with sockets.connect(url, timeout=WAIT) as conn:
            getattr(conn, kind)(timeout=WAIT, **options)
    elif adapter == "aio":

        async def run() -> None:
            async with aio.connect(url) as conn:
                await asyncio.wait_for(getattr(conn, kind)(**options), WAIT)

        asyncio.run(run())
    else:

        async def run_trio() -> None:
            async with trio_adapter.connect(url) as conn:
                with trio.fail_after(WAIT):
                    await getattr(conn, kind)(**options)

        trio.run(run_trio)


ADAPTER_ERRORS = {
    "sockets": sockets.LinkRefusedError,
    "aio": aio.LinkRefusedError,
    "trio": trio_adapter.LinkRefusedError,
}


def test_the_adapters_share_one_error_class() -> None:
    assert len(set(ADAPTER_ERRORS.values())) == 1
    assert issubclass(sockets.LinkRefusedError, sockets.LinkDetachedError)


@pytest.mark.parametrize("adapter", sorted(ADAPTER_ERRORS))
@pytest.mark.parametrize("kind", ["sender", "receiver"])
def test_a_refusal_with_its_condition_at_once(adapter: str, kind: str) -> None:
    with listener(refuse_everything) as port:
        started = time.monotonic()
        with pytest.raises(ADAPTER_ERRORS[adapter]) as raised:
            open_link(adapter, f"amqp://127.0.0.1:{port}/orders", kind)
        elapsed = time.monotonic() - started
    assert elapsed < AT_ONCE, f"{elapsed:.1f} s"
    assert raised.value.error is not None
    assert raised.value.error.condition == "amqp:not-found"
    direction = "to" if kind == "sender" else "from"
    assert str(raised.value) == (
        f"the peer refused the link {direction} orders: amqp:not-found (nothing here)"
    )


@pytest.mark.parametrize("adapter", sorted(ADAPTER_ERRORS))
def test_the_default_broker_refuses_a_bad_selector(adapter: str, broker_url: str) -> None:
    started = time.monotonic()
    with pytest.raises(ADAPTER_ERRORS[adapter]) as raised:
        open_link(adapter, f"{broker_url}/orders", "receiver", selector="colour = ")
    assert time.monotonic() - started < AT_ONCE
    assert raised.value.error is not None
    assert raised.value.error.condition == "amqp:invalid-field"


@pytest.mark.parametrize("command", ["send", "receive"])
def test_the_commands_report_a_refusal(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with listener(refuse_everything) as port:
        started = time.monotonic()
        status = cli.main([command, f"amqp://127.0.0.1:{port}/orders"])
        elapsed = time.monotonic() - started
    _, err = capsys.readouterr()
    assert status == 3, err
    assert elapsed < AT_ONCE
    direction = "to" if command == "send" else "from"
    assert f"the broker refused the link {direction} orders: amqp:not-found" in err
    assert len(err.strip().splitlines()) == 1, err


def detach_after(count: int) -> Any:
    """An application that accepts ``count`` messages on each link, then detaches it
    cleanly (closed, no error)."""

    def on_link(link: Any) -> None:
        got = [0]

        def on_delivery(delivery: Any) -> None:
            got[0] += 1
            if got[0] <= count:
                delivery.accept()
            if got[0] == count:
                link.close()

        link.on_delivery = on_delivery
        link.credit = 100

    return on_link


def test_send_succeeds_when_the_peer_detaches_after_every_outcome(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with listener(detach_after(5)) as port:
        status = cli.main(["send", f"amqp://127.0.0.1:{port}/orders", "--count", "5"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "5 accepted" in out and err == ""


def test_send_fails_when_the_peer_detaches_before_every_outcome(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with listener(detach_after(3)) as port:
        status = cli.main(["send", f"amqp://127.0.0.1:{port}/orders", "--count", "5"])
    _, err = capsys.readouterr()
    assert status == 3, err
    assert "the broker detached the link to orders" in err


def send_then_detach(count: int) -> Any:
    """An application that sends ``count`` messages on each link a peer receives from,
    then detaches it cleanly (closed, no error) in the same bytes."""

    def on_link(link: Any) -> None:
        sent = [0]

        def on_credit(link: Any) -> None:
            while link.credit > 0 and sent[0] < count:
                link.send(f"message {sent[0] + 1}")
                sent[0] += 1
            if sent[0] == count:
                link.close()

        link.on_credit = on_credit

    return on_link


@pytest.mark.parametrize("sent", [2, 3])
def test_receive_reports_a_link_closed_with_the_messages(
    sent: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """The peer closes the link right after its transfers: they can no longer be settled
    (2.6.6), so they were not accepted: one line and exit status 3, no traceback."""
    with listener(send_then_detach(sent)) as port:
        status = cli.main(["receive", f"amqp://127.0.0.1:{port}/orders", "--count", "3"])
    _, err = capsys.readouterr()
    assert status == 3, err
    assert err.splitlines() == [
        "amqp-sansio receive: error: the broker detached the link from orders: no error given"
    ]
