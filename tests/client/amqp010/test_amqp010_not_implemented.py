"""What the 0-10 client core does with what it does not implement (docs/amqp010.rst, "Not
implemented"), against our server-role engine in memory through real bytes: a command of a
class it has no calls for (``dtx``, ``file``, ``stream``...) is completed and dropped, and
a ``connection.redirect`` is not followed."""

from __future__ import annotations

from typing import Any

import pytest
from support.amqp010.broker import Server

from amqp_sansio.client import amqp010 as client
from amqp_sansio.client.ops import ConnectionClosedError
from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.engine import amqp010 as engine

URL = "amqp://127.0.0.1:5672/vh"


def pump(core: client.Core, server: Server) -> None:
    for _ in range(100):
        out, back = core.data_to_send(), server.conn.data_to_send()
        if not out and not back:
            return
        if out:
            server.handle(server.conn.receive_data(out, 0.0))
        if back:
            core.receive_data(back, 0.0)
    raise AssertionError("the wire never went quiet")


@pytest.mark.parametrize(
    "command",
    [
        spec.FileDeliver(consumer_tag="c", delivery_tag=1),
        spec.StreamDeliver(consumer_tag="c", delivery_tag=1, queue="q"),
        spec.FileQos(prefetch_size=1),
        spec.DtxSelect(),
        spec.MessageStop(destination="d"),
    ],
    ids=lambda c: c.NAME,
)
def test_a_command_the_client_has_no_call_for_is_completed_and_dropped(command: Any) -> None:
    core = client.client_core(URL)
    server = Server()
    core.open(0.0)
    pump(core, server)
    session = core.session("s")
    pump(core, server)
    assert session.attached_ready()
    sent = server.conn.send_command(b"s", command, body=b"content", sync=True)
    server.events.clear()
    pump(core, server)
    completed = [e for e in server.events if isinstance(e, engine.CommandsCompleted)]
    assert [e.command_ids for e in completed] == [(sent,)]
    assert not [e for e in server.events if isinstance(e, engine.ExecutionExceptionReceived)]
    assert session.attached_ready()  # not refused: the session goes on
    assert not session.delivery_ready(getattr(command, "destination", None) or "")()


class Redirecting(Server):
    """A server that answers every open with ``connection.redirect``."""

    def handle(self, events: list[engine.Event]) -> None:
        for event in events:
            self.events.append(event)
            if isinstance(event, engine.OpenRequested):
                assert not event.insist  # the client never insists
                self.conn.redirect("elsewhere.example:5672", ["other.example:5672"])


@pytest.mark.parametrize("reconnect", [False, True])
def test_a_redirect_is_not_followed(reconnect: bool) -> None:
    """The client engine reports Redirected and ends; the core fails the connection with
    an error not retried, even with ``reconnect``."""
    core = client.client_core(URL, reconnect=reconnect)
    server = Redirecting()
    if reconnect:
        at, _ = core.next_attempt(0.0)
        core.restart(at)
    else:
        core.open(0.0)
    pump(core, server)
    redirected = [e for e in server.events if isinstance(e, engine.OpenRequested)]
    assert len(redirected) == 1
    assert server.conn.closed
    assert core.ended.done() and not core.lost
    error = core.error
    assert isinstance(error, ConnectionClosedError)
    assert "200 redirected to elsewhere.example:5672" in str(error)
    assert not error.retryable
