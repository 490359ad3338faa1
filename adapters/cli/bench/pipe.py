"""The engine benchmarks (``amqp-sansio bench pipe``): two protocol engines wired in
memory, ours next to Proton's (``pipe_benchmark``, ``large_benchmark``), and what our
engines hold (``memory_benchmark``: ours only, ``proton`` and ``ratio`` are None)."""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections import deque
from collections.abc import Callable
from typing import Any

import amqp_sansio as amqp

from .results import Result

# -- the engine pipe ------------------------------------------------------------------------
#
# Two engines wired in memory, a client sender and a server receiver: what one side hands
# over is given to the other, with no sockets. The sender builds and encodes each message;
# the receiver decodes it, grants credit in windows and accepts each delivery; the sender
# settles what the receiver settled. Proton does the same through its own engine: two
# transports bound to two connections, the bytes pumped between them.

PIPE_BODY_SIZE = 256
#: Credit the receiver grants at a time; it tops the link back up once half is used.
CREDIT_WINDOW = 1000
#: Max frame size on both sides for ``--large``.
LARGE_FRAME_SIZE = 64 * 1024
MiB = 1024 * 1024
#: The most bytes our pipe moves from one engine to the other at a time
#: (``buffers_to_send``'s ``max_bytes``), as a socket would take them: what is queued (a
#: large message whole) is handed over this much at a time, cut anywhere; each piece of it
#: (joined small frames and headers, or a view of a large message's bytes, as
#: ``socket.sendmsg`` takes them) goes to the other engine's ``receive_data`` in turn.
PIPE_CHUNK = MiB
#: The pipes run on one thread with no I/O, so they are timed in CPU time: other load on
#: the machine then slows neither side's figure (cache and frequency effects remain).
_cpu_clock = time.process_time


def parse_size(text: str) -> int:
    """Bytes in a size such as ``64MiB``, ``100KiB``, ``1.5GiB``, ``10MB`` or ``4096``."""
    units = {
        "": 1,
        "b": 1,
        "kib": 1024,
        "mib": MiB,
        "gib": 1024 * MiB,
        "kb": 1000,
        "mb": 1000**2,
        "gb": 1000**3,
    }
    number = text.strip().rstrip("bBiIkKmMgG")
    unit = text.strip()[len(number) :].lower()
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"not a size: {text!r} (try 64MiB, 100KiB or 4096)") from None
    if unit not in units:
        raise ValueError(f"unknown unit in {text!r}: use B, KiB, MiB, GiB, kB, MB or GB")
    size = int(value * units[unit])
    if size < 1:
        raise ValueError(f"a size of at least one byte, not {text!r}")
    return size


class Stalled(AssertionError):
    pass


class OursPipe:
    """Our client sender and server receiver, open, begun and attached, wired in memory."""

    def __init__(self, *, settled: bool = False, max_frame_size: int = LARGE_FRAME_SIZE) -> None:
        self.client = amqp.Connection(
            client=True, container_id="bench-client", max_frame_size=max_frame_size
        )
        self.server = amqp.Connection(
            client=False, container_id="bench-server", max_frame_size=max_frame_size
        )
        self.client.open(now=0.0)
        self._until(amqp.events.ConnectionOpened)
        self.server.open()
        session = self.client.begin()
        self._until(amqp.events.SessionBegun).session.begin()
        mode = amqp.SenderSettleMode.SETTLED if settled else amqp.SenderSettleMode.UNSETTLED
        self.sender = session.attach_sender("bench", target="bench", snd_settle_mode=mode)
        receiver = self._until(amqp.events.LinkAttached).link
        assert isinstance(receiver, amqp.Receiver)
        receiver.attach()
        self.receiver = receiver
        self.pump()

    def pump(self) -> tuple[list[amqp.Event], list[amqp.Event]]:
        """Move bytes both ways until quiet; return (client events, server events)."""
        got_c: list[amqp.Event] = []
        got_s: list[amqp.Event] = []
        while True:
            out_c = self.client.data_to_send()
            out_s = self.server.data_to_send()
            if not out_c and not out_s:
                return got_c, got_s
            if out_c:
                got_s += self.server.receive_data(out_c, 0.0)
            if out_s:
                got_c += self.client.receive_data(out_s, 0.0)

    def _until(self, kind: type) -> Any:
        got_c, got_s = self.pump()
        for event in got_s + got_c:
            if isinstance(event, kind):
                return event
        raise Stalled(f"the in-memory engines never reported {kind.__name__}")


def ours_pipe(
    count: int,
    *,
    settled: bool = False,
    body: bytes = bytes(PIPE_BODY_SIZE),
    max_frame_size: int = LARGE_FRAME_SIZE,
    progress: Callable[[int], None] | None = None,
) -> float:
    """Seconds our engines take to carry ``count`` messages of ``body``, from the first
    credit to the last settlement; the receiver decodes each message from the pieces it came
    in (``DeliveryReceived.message()``). ``progress`` is called with the count received so
    far, once per turn of the pump."""
    pipe = OursPipe(settled=settled, max_frame_size=max_frame_size)
    client, server, sender, receiver = pipe.client, pipe.server, pipe.sender, pipe.receiver
    message_cls = amqp.Message
    delivery_received = amqp.events.DeliveryReceived
    accepted = amqp.Accepted()
    data_section = amqp.Data
    window = max(1, min(CREDIT_WINDOW, count))
    size = len(body)
    sent = received = done = 0
    start = _cpu_clock()
    receiver.flow(window)
    while done < count:
        while sent < count and sender.link_credit > 0:
            sender.send(message_cls(body=body))  # encoded by send
            sent += 1
        to_server = client.buffers_to_send(PIPE_CHUNK)
        if to_server:
            for piece in to_server:
                for event in server.receive_data(piece, 0.0):
                    if type(event) is delivery_received:
                        got = event.message().body
                        if type(got) is not data_section or len(got.value) != size:
                            raise AssertionError("our pipe mangled a message")
                        received += 1
                        if not settled:
                            receiver.settle(event.delivery, accepted)
            if receiver.link_credit * 2 <= window and received < count:
                receiver.flow(window)
            if settled:
                done = received
        to_client = server.data_to_send(PIPE_CHUNK)
        if to_client:
            done += _ours_settled(client.receive_data(to_client, 0.0), sender)
        elif not to_server:
            raise Stalled(f"our pipe stalled after {received} of {count} messages")
        if progress is not None:
            progress(received)
    elapsed = _cpu_clock() - start
    if sender.unsettled or receiver.unsettled:
        raise AssertionError("our pipe left deliveries unsettled")
    return elapsed


_DELIVERY_UPDATED = amqp.events.DeliveryUpdated


def _ours_settled(events: list[amqp.Event], sender: amqp.Sender) -> int:
    """:func:`ours_pipe`'s sending end: the deliveries ``events`` report settled by the
    receiver, settled here too; how many there were."""
    done = 0
    for event in events:
        if type(event) is _DELIVERY_UPDATED and event.settled:
            if not event.delivery.settled:  # unless the engine settled it already
                sender.settle(event.delivery)
            done += 1
    return done


def large_body(size: int) -> bytes:
    """A body of ``size`` bytes for the large pipes, every page of it written (not the
    lazily mapped zero pages of ``bytes(size)``, whose first touch, inside the timed
    region, would be counted to whichever side reads the body first)."""
    return b"\xa5" * size


def ours_large(body: bytes) -> float:
    """Seconds our engines take to carry one message with ``body`` (see :func:`large_body`),
    in frames of :data:`LARGE_FRAME_SIZE`, until it is decoded, accepted and settled."""
    return ours_pipe(1, body=body, max_frame_size=LARGE_FRAME_SIZE)


class ProtonPipe:
    """Proton's client sender and server receiver, wired in memory (as :class:`OursPipe`)."""

    def __init__(self, *, settled: bool = False, max_frame_size: int = LARGE_FRAME_SIZE) -> None:
        import proton

        self.client_conn = proton.Connection()
        self.client = proton.Transport()
        self.server_conn = proton.Connection()
        self.server = proton.Transport(proton.Transport.SERVER)
        for transport, conn, name in (
            (self.client, self.client_conn, "bench-client"),
            (self.server, self.server_conn, "bench-server"),
        ):
            transport.max_frame_size = max_frame_size
            transport.bind(conn)
            conn.container = name
        self.client_conn.open()
        session = self.client_conn.session()
        session.open()
        sender = session.sender("bench")
        sender.target.address = "bench"
        sender.snd_settle_mode = proton.Link.SND_SETTLED if settled else proton.Link.SND_UNSETTLED
        sender.open()
        self.pump()
        self.server_conn.open()
        remote_session = self.server_conn.session_head(proton.Endpoint.LOCAL_UNINIT)
        if remote_session is None:
            raise Stalled("proton's server never saw the session")
        remote_session.open()
        self.pump()
        receiver = self.server_conn.link_head(proton.Endpoint.LOCAL_UNINIT)
        if receiver is None:
            raise Stalled("proton's server never saw the link")
        receiver.source.copy(receiver.remote_source)
        receiver.target.copy(receiver.remote_target)
        receiver.open()
        self.pump()
        self.sender = sender
        self.receiver = receiver

    @staticmethod
    def move(source: Any, sink: Any) -> bool:
        """Move what ``source`` (a transport) offers to send now (Proton offers up to its
        output buffer at a time) into ``sink``; say if anything moved."""
        n = source.pending()
        if n <= 0:
            return False
        data = memoryview(source.peek(n))
        source.pop(n)
        while data:
            room = sink.capacity()
            if room <= 0:
                raise Stalled("proton's transport takes no more input")
            sink.push(data[:room])
            data = data[room:]
        return True

    def pump(self) -> None:
        while self.move(self.client, self.server) | self.move(self.server, self.client):
            pass


def proton_pipe(
    count: int,
    *,
    settled: bool = False,
    body: bytes = bytes(PIPE_BODY_SIZE),
    max_frame_size: int = LARGE_FRAME_SIZE,
) -> float:
    """Seconds Proton's engines take on the work of :func:`ours_pipe`. Proton is driven
    through its leanest calls: the receiver reads its link's current delivery, and the
    sender checks its oldest unsettled delivery, where our side goes through events."""
    import proton

    pipe = ProtonPipe(settled=settled, max_frame_size=max_frame_size)
    sender: Any = pipe.sender
    receiver: Any = pipe.receiver
    client, server, move = pipe.client, pipe.server, pipe.move
    message_cls = proton.Message
    target: Any = proton.Message()
    accepted = proton.Delivery.ACCEPTED
    window = max(1, min(CREDIT_WINDOW, count))
    size = len(body)
    unsettled: deque[Any] = deque()
    chunks: list[bytes] = []
    sent = received = done = 0
    start = _cpu_clock()
    receiver.flow(window)
    while done < count:
        while sent < count and sender.credit > 0:
            sent += 1
            delivery = sender.delivery(str(sent))
            sender.stream(message_cls(body=body, inferred=True).encode())
            sender.advance()
            if settled:
                delivery.settle()
            else:
                unsettled.append(delivery)
        moved = move(client, server)
        current = receiver.current
        while current is not None and current.readable:
            pending = current.pending
            if pending:
                chunks.append(receiver.recv(pending))
            if current.partial:
                break  # a large message: read what is here, the rest follows
            receiver.advance()
            target.decode(chunks[0] if len(chunks) == 1 else b"".join(chunks))
            chunks.clear()
            if len(target.body) != size:
                raise AssertionError("proton's pipe mangled a message")
            received += 1
            if not settled:
                current.update(accepted)
            current.settle()
            current = receiver.current
        credit = receiver.credit
        if credit * 2 <= window and received < count:
            receiver.flow(window - credit)
        if settled:
            done = received
        if move(server, client):
            while unsettled and unsettled[0].settled:
                unsettled.popleft().settle()
                done += 1
        elif not moved:
            raise Stalled(f"proton's pipe stalled after {received} of {count} messages")
    return _cpu_clock() - start


def proton_large(body: bytes) -> float:
    """Seconds Proton takes on the work of :func:`ours_large`."""
    return proton_pipe(1, body=body, max_frame_size=LARGE_FRAME_SIZE)


def proton_engine_transfer(encoded: bytes) -> tuple[float, bytes]:
    """Proton's best path for one large message, its engine driven directly: seconds to
    carry ``encoded`` (a whole encoded message, built before the clock starts) in one
    ``Sender.send`` of one delivery, from the receiver's credit until the receiver has
    ``recv``-ed the whole payload, and the payload it got.

    Two ``proton.Transport`` objects bound to two ``proton.Connection`` objects, 64 KiB max
    frame size on both, are pumped in memory as :meth:`ProtonPipe.move` does: each turn
    takes all the bytes a transport has pending (``pending``/``peek``/``pop``) and
    ``push``-es them into the other. Proton's transport offers one frame at a time (its
    output buffer holds one 64 KiB frame), so the message takes about a thousand turns.
    The receiver ``recv``-s what has arrived on every turn and joins the pieces once at
    the end: faster here than letting Proton hold the whole payload and ``recv``-ing it in
    one call (the delivery's buffer then grows to 64 MiB, and is copied as it grows).
    Nothing is decoded: the clock stops when the payload's bytes are in hand."""
    import proton

    pipe = ProtonPipe(max_frame_size=LARGE_FRAME_SIZE)
    sender: Any = pipe.sender
    receiver: Any = pipe.receiver
    client, server, move = pipe.client, pipe.server, pipe.move
    pieces: list[bytes] = []
    start = _cpu_clock()
    receiver.flow(1)
    pipe.pump()
    sender.delivery("1")
    sender.send(encoded)  # bytes: the current delivery's payload (``Sender.stream``)
    sender.advance()
    while True:
        moved = move(client, server)
        current = receiver.current
        if current is not None:
            pending = current.pending
            if pending:
                pieces.append(receiver.recv(pending))
            if not current.partial:
                break
        if not (move(server, client) or moved):
            raise Stalled("proton's engine stalled in a large message")
    payload = pieces[0] if len(pieces) == 1 else b"".join(pieces)
    elapsed = _cpu_clock() - start
    current.update(proton.Delivery.ACCEPTED)
    current.settle()
    return elapsed, payload


def proton_encoded(body: bytes) -> bytes:
    """``body`` as Proton encodes a message of one data section (out of the clock)."""
    import proton

    return bytes(proton.Message(body=body, inferred=True).encode())


def proton_engine_large(encoded: bytes) -> float:
    """Seconds of :func:`proton_engine_transfer`, once the payload is checked whole."""
    elapsed, payload = proton_engine_transfer(encoded)
    if payload != encoded:
        raise AssertionError("proton's engine mangled the large message")
    return elapsed


def proton_installed() -> bool:
    try:
        import proton  # noqa: F401
    except ImportError:
        return False
    return True


def alternate(
    ours: Callable[[], float],
    theirs: Callable[[], float] | None,
    work: float,
    unit: str,
    rounds: int,
    seconds: float,
    peer: str = "proton",
) -> dict[str, Any]:
    """Run ``ours`` and ``theirs`` (each returns the seconds it took for ``work`` units) in
    alternating rounds: at least ``rounds`` each, and more until each has run ``seconds``;
    keep each side's median rate (``theirs`` under the key ``peer``)."""
    our_rates: list[float] = []
    their_rates: list[float] = []
    our_time = their_time = 0.0
    while len(our_rates) < rounds or our_time < seconds or (theirs and their_time < seconds):
        elapsed = ours()
        our_time += elapsed
        our_rates.append(work / elapsed)
        if theirs is not None:
            elapsed = theirs()
            their_time += elapsed
            their_rates.append(work / elapsed)
    ours_median = statistics.median(our_rates)
    theirs_median = statistics.median(their_rates) if their_rates else None
    return {
        "ours": round(ours_median, 1),
        peer: None if theirs_median is None else round(theirs_median, 1),
        "ratio": None if theirs_median is None else round(ours_median / theirs_median, 3),
        "unit": unit,
    }


def pipe_benchmark(
    messages: int = 50_000, *, settled: bool = False, rounds: int = 3, seconds: float = 0.0
) -> Result:
    """Messages per second through two engines wired in memory, ours and Proton's."""
    theirs: Callable[[], float] | None = None
    if proton_installed():
        theirs = lambda: proton_pipe(messages, settled=settled)  # noqa: E731
    return {
        "pipe": alternate(
            lambda: ours_pipe(messages, settled=settled),
            theirs,
            messages,
            "msg/s",
            rounds,
            seconds,
        )
    }


def large_benchmark(size: int, *, rounds: int = 3, seconds: float = 0.0) -> Result:
    """MiB per second for one message of ``size`` bytes, ours and Proton's, two ways:
    ``large``, Proton doing the work of :func:`ours_large` (:func:`proton_large`); and
    ``large-engine``, Proton's engine driven directly on the message encoded beforehand
    (:func:`proton_engine_large`; key ``proton-engine``), in rounds of their own."""
    body = large_body(size)  # one body, its pages written, for both sides and every round
    theirs: Callable[[], float] | None = None
    engine: Callable[[], float] | None = None
    if proton_installed():
        encoded = proton_encoded(body)  # encoded once, before any clock: not counted
        theirs = lambda: proton_large(body)  # noqa: E731
        engine = lambda: proton_engine_large(encoded)  # noqa: E731
    ours = lambda: ours_large(body)  # noqa: E731
    work = size / MiB
    return {
        "large": alternate(ours, theirs, work, "MiB/s", rounds, seconds),
        "large-engine": alternate(
            ours, engine, work, "MiB/s", rounds, seconds, peer="proton-engine"
        ),
    }


def large_copies(size: int) -> Result:
    """Copies of the body our engines make for one message of ``size`` bytes, on each side:
    :mod:`tracemalloc`'s peak over each side's part of the transfer, divided by ``size``
    (the body itself, made before, is not counted). ``copies-sending``: ``Sender.send`` of
    the message and every ``buffers_to_send`` piece taken; ``copies-receiving``: those
    pieces through ``receive_data`` and ``DeliveryReceived.message()``, until the body is
    decoded."""
    body = large_body(size)
    pipe = OursPipe(max_frame_size=LARGE_FRAME_SIZE)
    pipe.receiver.flow(1)
    pipe.pump()
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        pipe.sender.send(amqp.Message(body=body))
        pieces: list[Any] = []
        while chunk := pipe.client.buffers_to_send(PIPE_CHUNK):
            pieces += chunk
        sending = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        got = None
        for piece in pieces:
            for event in pipe.server.receive_data(piece, 0.0):
                if type(event) is amqp.events.DeliveryReceived:
                    got = event.message().body
        receiving = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    if type(got) is not amqp.Data or got.value != body:
        raise AssertionError("our pipe mangled the large message")
    return {
        "copies-sending": _ours_only(sending / size, "copies"),
        "copies-receiving": _ours_only(receiving / size, "copies"),
    }


def memory_benchmark(messages: int = 1_000_000, unsettled: int = 10_000) -> Result:
    """What our engines hold, seen by :mod:`tracemalloc` (Python allocations only, so there
    is no Proton figure).

    ``peak-memory``: the peak while ``messages`` messages go through the pipe;
    ``peak-memory-early``: the peak over the first tenth of them. Memory is flat when the two
    are about the same. ``per-unsettled``: what one delivery held unsettled costs, at both
    ends together, with ``unsettled`` of them held.
    """
    gc.collect()
    early: list[int] = []
    tenth = max(1, messages // 10)

    def progress(received: int) -> None:
        if not early and received >= tenth:
            early.append(tracemalloc.get_traced_memory()[1])

    tracemalloc.start()
    try:
        ours_pipe(messages, progress=progress)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    per_delivery = _bytes_per_unsettled(unsettled)
    return {
        "peak-memory": _ours_only(peak, "bytes"),
        "peak-memory-early": _ours_only(early[0] if early else peak, "bytes"),
        "per-unsettled": _ours_only(per_delivery, "bytes/delivery"),
    }


def _ours_only(value: float, unit: str) -> dict[str, Any]:
    return {"ours": round(value, 3), "proton": None, "ratio": None, "unit": unit}


def _bytes_per_unsettled(count: int) -> float:
    """Traced bytes per delivery, with ``count`` deliveries received and held unsettled at
    both ends."""
    pipe = OursPipe()
    sender, receiver = pipe.sender, pipe.receiver
    receiver.flow(count)
    pipe.pump()
    body = bytes(PIPE_BODY_SIZE)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        received = 0
        for sent in range(1, count + 1):
            sender.send(amqp.Message(body=body).encode())
            if sent % CREDIT_WINDOW == 0 or sent == count:
                for event in pipe.pump()[1]:
                    if type(event) is amqp.events.DeliveryReceived:
                        amqp.Message.decode(event.data)
                        received += 1
                del event
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    if received != count or len(sender.unsettled) != count or len(receiver.unsettled) != count:
        raise AssertionError("the deliveries were not all held unsettled at both ends")
    return held / count
