"""What the driver's log says of a broker connection (:attr:`BrokerConnection.record`): its
TLS, whether it was admitted, why it ended, its messages in and out. Never a credential; a
peer's text (an error's description) only with its control characters escaped (a line break
could forge a log line) and cut short. The driver writes the lines (the asyncio server:
one when a connection opens, one when it ends)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..definitions.amqp10.performatives import Error
from ..events import (
    ConnectionClosed,
    ConnectionOpened,
    Event,
    IdleTimedOut,
    ProtocolError,
    UnsupportedProtocol,
)
from ..security.layers import LayerFailed
from ..security.tls import TLSEstablished

if TYPE_CHECKING:
    from ._admission import Admission

__all__ = ["ConnectionRecord"]

#: The longest piece of a peer's text put in a log line.
TEXT_MAX = 200


class ConnectionRecord:
    """What happened to one connection, for the log."""

    __slots__ = ("ending", "messages_in", "messages_out", "opened", "tls")

    def __init__(self) -> None:
        #: The TLS version (e.g. ``"TLSv1.3"``) once a TLS handshake completed; None without.
        self.tls: str | None = None
        #: The client's open was answered with the broker's (it was admitted).
        self.opened = False
        #: Why the connection ended, or is ending, in words: the first of the client's close
        #: (with its error), the broker's (a protocol error, an idle time-out, the broker
        #: stopping: with its error), a TLS failure, a protocol header the broker does not
        #: speak; None while none of these happened (a transport that just went).
        self.ending: str | None = None
        #: Messages taken from the client, and sent to it.
        self.messages_in = 0
        self.messages_out = 0

    def __repr__(self) -> str:
        return (
            f"<ConnectionRecord opened={self.opened} tls={self.tls} ending={self.ending!r} "
            f"in={self.messages_in} out={self.messages_out}>"
        )

    def ending_because(self, what: str, error: Error | None = None) -> None:
        """Say why the connection ends (with ``error``, if given), unless something already
        did: the first cause is the one said."""
        if self.ending is None:
            self.ending = what if error is None else f"{what} with {describe(error)}"

    def saw(self, conn: Admission, event: Event) -> None:
        """Take note of an event of the connection, after the connection handled it."""
        handler = _EVENTS.get(type(event))
        if handler is None and isinstance(event, LayerFailed):  # (each layer's failure)
            handler = _layer_failed
        if handler is not None:
            handler(self, conn, event)


def printable(text: str) -> str:
    """A peer's text for one log line: control characters escaped, at most
    :data:`TEXT_MAX` characters."""
    if not text.isprintable():
        text = text.encode("unicode_escape").decode("ascii")
    return text if len(text) <= TEXT_MAX else text[: TEXT_MAX - 3] + "..."


def describe(error: Error) -> str:
    """An AMQP error for the log: its condition, and its description if it has one."""
    description = error.description
    return str(error.condition) + (f": {printable(description)}" if description else "")


def _opened(record: ConnectionRecord, conn: Admission, event: Event) -> None:
    record.opened = conn.refused is None  # (a refused open was answered with a close)


def _layer_failed(record: ConnectionRecord, conn: Admission, event: Any) -> None:
    """A byte layer failed (TLS, core spec 5.2; the WebSocket binding): its alert or close
    is the last thing sent, then the transport goes (the connection is ``cut``)."""
    record.ending_because(f"{event.layer} failed: {printable(event.error)}")
    conn.stop_handshake_timer()
    conn.cut = True


def _protocol_error(record: ConnectionRecord, conn: Admission, event: Any) -> None:
    if event.scope == "connection":
        record.ending_because("closed by the broker for a protocol error", event.error)


_EVENTS: dict[type, Any] = {
    ConnectionOpened: _opened,
    ConnectionClosed: lambda r, c, e: r.ending_because("closed by the client", e.error),
    IdleTimedOut: lambda r, c, e: r.ending_because(
        "idle time-out: no frame from the client within the broker's idle time-out"
    ),
    ProtocolError: _protocol_error,
    UnsupportedProtocol: lambda r, c, e: r.ending_because(  # (not PeerWithoutSASL: refused)
        f"it sent the protocol header of {e.version_name}"
    ),
    TLSEstablished: lambda r, c, e: setattr(r, "tls", e.version),
}
