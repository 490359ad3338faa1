"""Benchmarks that put our figure next to Qpid Proton's, measured in the same run.

Machines are noisy: the two implementations are measured in alternating short rounds and
each side keeps its median, so a burst of load hits both. Compare the ratios, not absolute
figures across runs. Every result has the shape
``{name: {"ours": float, "proton": float | None, "ratio": float | None, "unit": str}}``.

``codec_benchmark`` times the message codec; ``pipe_benchmark`` and ``large_benchmark`` time
two protocol engines wired in memory; ``memory_benchmark`` reports what our engines hold
(ours only: ``proton`` and ``ratio`` are None).
"""

from __future__ import annotations

import gc
import socket
import statistics
import threading
import time
import tracemalloc
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any

import amqp_sansio as amqp

from .sockets import SocketDriver

Result = dict[str, dict[str, Any]]

#: Units of figures that only we report (tracemalloc sees no C allocations).
_MEMORY_UNITS = frozenset({"bytes", "bytes/delivery"})

_BODY = bytes(range(256))
_MESSAGE_ID = "order-000042"
_TO = "queue://orders"
_SUBJECT = "order.created"
_CONTENT_TYPE = "application/octet-stream"
_CORRELATION_ID = str(uuid.UUID(int=0x1234_5678_9ABC_DEF0_0FED_CBA9_8765_4321))
_APP_PROPS: dict[str, Any] = {
    "customer": "ACME Corp",
    "amount": 1234,
    "rate": 0.25,
    "express": True,
    "created": amqp.Timestamp(1_700_000_000_000),
}


def typical_message() -> amqp.Message:
    """The benchmark message: durable header with priority 4; message-id, to, subject,
    content-type and correlation-id; five application properties of mixed types; a 256-byte
    data body."""
    return amqp.Message(
        header=amqp.Header(durable=True, priority=4),
        properties=amqp.Properties(
            message_id=_MESSAGE_ID,
            to=_TO,
            subject=_SUBJECT,
            content_type=amqp.Symbol(_CONTENT_TYPE),
            correlation_id=_CORRELATION_ID,
        ),
        application_properties=dict(_APP_PROPS),
        body=_BODY,
    )


def _proton_message() -> Any:
    import proton

    props = dict(_APP_PROPS)
    props["created"] = proton.timestamp(int(_APP_PROPS["created"]))
    return proton.Message(
        durable=True,
        priority=4,
        id=_MESSAGE_ID,
        address=_TO,
        subject=_SUBJECT,
        content_type=_CONTENT_TYPE,
        correlation_id=_CORRELATION_ID,
        properties=props,
        body=_BODY,
        inferred=True,
    )


def _rate(fn: Callable[[], object], seconds: float) -> float:
    """Operations per second of ``fn`` over about ``seconds``."""
    n = 64
    while True:  # size a batch to about 20 ms
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed > 0.02:
            break
        n *= 2
    batch = n
    done = 0
    start = time.perf_counter()
    deadline = start + seconds
    now = start
    while now < deadline:
        for _ in range(batch):
            fn()
        done += batch
        now = time.perf_counter()
    return done / (now - start)


def _compare(
    ours: Callable[[], object], theirs: Callable[[], object] | None, seconds: float, rounds: int = 5
) -> dict[str, Any]:
    per_round = seconds / rounds
    our_rates: list[float] = []
    their_rates: list[float] = []
    for _ in range(rounds):
        our_rates.append(_rate(ours, per_round))
        if theirs is not None:
            their_rates.append(_rate(theirs, per_round))
    ours_median = statistics.median(our_rates)
    theirs_median = statistics.median(their_rates) if their_rates else None
    return {
        "ours": round(ours_median, 1),
        "proton": None if theirs_median is None else round(theirs_median, 1),
        "ratio": None if theirs_median is None else round(ours_median / theirs_median, 3),
        "unit": "ops/s",
    }


def codec_benchmark(seconds: float = 1.0) -> Result:
    """Encode and decode :func:`typical_message`, ours and (if installed) Proton's."""
    message = typical_message()
    encoded = message.encode()
    if amqp.Message.decode(encoded) != message:
        raise AssertionError("the benchmark message does not round-trip")
    proton_encode: Callable[[], object] | None = None
    proton_decode: Callable[[], object] | None = None
    try:
        import proton
    except ImportError:
        proton = None  # type: ignore[assignment]
    if proton is not None:
        pmsg = _proton_message()
        pencoded = bytes(pmsg.encode())
        # Same work: each side must read the other's bytes as the same message.
        check = proton.Message()
        check.decode(encoded)
        if check.id != _MESSAGE_ID or bytes(memoryview(check.body)) != _BODY:  # type: ignore[arg-type]
            raise AssertionError("proton does not read our benchmark message back")
        theirs = amqp.Message.decode(pencoded)
        if theirs.properties != message.properties or theirs.body != message.body:
            raise AssertionError("we do not read proton's benchmark message back")
        target: Any = proton.Message()
        proton_encode = pmsg.encode
        proton_decode = lambda: target.decode(pencoded)  # noqa: E731
    results: Result = {
        "encode": _compare(message.encode, proton_encode, seconds),
        "decode": _compare(lambda: amqp.Message.decode(encoded), proton_decode, seconds),
    }
    return results


def format_table(title: str, results: Result) -> str:
    width = max(10, *(len(name) + 2 for name in results))
    lines = [title, f"{'':{width}}{'ours':>14}{'proton':>14}{'ratio':>10}  unit"]
    for name, r in results.items():
        proton = "n/a" if r["proton"] is None else f"{r['proton']:,.0f}"
        ratio = "n/a" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        lines.append(f"{name:{width}}{r['ours']:>14,.0f}{proton:>14}{ratio:>10}  {r['unit']}")
    if any(r["proton"] is None and r["unit"] not in _MEMORY_UNITS for r in results.values()):
        lines.append(
            "python-qpid-proton is not installed: no comparison "
            "(pip install 'amqp-sansio[test]' or python-qpid-proton)"
        )
    if any(r["unit"] in _MEMORY_UNITS for r in results.values()):
        lines.append("memory: ours only, as tracemalloc sees Python's allocations, not Proton's")
    return "\n".join(lines)


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


class _Stalled(AssertionError):
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
        self._until(amqp.ConnectionOpened)
        self.server.open()
        session = self.client.begin()
        self._until(amqp.SessionBegun).session.begin()
        mode = amqp.SenderSettleMode.SETTLED if settled else amqp.SenderSettleMode.UNSETTLED
        self.sender = session.attach_sender("bench", target="bench", snd_settle_mode=mode)
        receiver = self._until(amqp.LinkAttached).link
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
        raise _Stalled(f"the in-memory engines never reported {kind.__name__}")


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
    delivery_received = amqp.DeliveryReceived
    delivery_updated = amqp.DeliveryUpdated
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
            for event in client.receive_data(to_client, 0.0):
                if type(event) is delivery_updated and event.settled:
                    if not event.delivery.settled:  # unless the engine settled it already
                        sender.settle(event.delivery)
                    done += 1
        elif not to_server:
            raise _Stalled(f"our pipe stalled after {received} of {count} messages")
        if progress is not None:
            progress(received)
    elapsed = _cpu_clock() - start
    if sender.unsettled or receiver.unsettled:
        raise AssertionError("our pipe left deliveries unsettled")
    return elapsed


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
            raise _Stalled("proton's server never saw the session")
        remote_session.open()
        self.pump()
        receiver = self.server_conn.link_head(proton.Endpoint.LOCAL_UNINIT)
        if receiver is None:
            raise _Stalled("proton's server never saw the link")
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
                raise _Stalled("proton's transport takes no more input")
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
            raise _Stalled(f"proton's pipe stalled after {received} of {count} messages")
    return _cpu_clock() - start


def proton_large(body: bytes) -> float:
    """Seconds Proton takes on the work of :func:`ours_large`."""
    return proton_pipe(1, body=body, max_frame_size=LARGE_FRAME_SIZE)


def _proton_installed() -> bool:
    try:
        import proton  # noqa: F401
    except ImportError:
        return False
    return True


def _alternate(
    ours: Callable[[], float],
    theirs: Callable[[], float] | None,
    work: float,
    unit: str,
    rounds: int,
    seconds: float,
) -> dict[str, Any]:
    """Run ``ours`` and ``theirs`` (each returns the seconds it took for ``work`` units) in
    alternating rounds: at least ``rounds`` each, and more until each has run ``seconds``;
    keep each side's median rate."""
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
        "proton": None if theirs_median is None else round(theirs_median, 1),
        "ratio": None if theirs_median is None else round(ours_median / theirs_median, 3),
        "unit": unit,
    }


def pipe_benchmark(
    messages: int = 50_000, *, settled: bool = False, rounds: int = 3, seconds: float = 0.0
) -> Result:
    """Messages per second through two engines wired in memory, ours and Proton's."""
    theirs: Callable[[], float] | None = None
    if _proton_installed():
        theirs = lambda: proton_pipe(messages, settled=settled)  # noqa: E731
    return {
        "pipe": _alternate(
            lambda: ours_pipe(messages, settled=settled),
            theirs,
            messages,
            "msg/s",
            rounds,
            seconds,
        )
    }


def large_benchmark(size: int, *, rounds: int = 3, seconds: float = 0.0) -> Result:
    """MiB per second for one message of ``size`` bytes, ours and Proton's."""
    body = large_body(size)  # one body, its pages written, for both sides and every round
    theirs: Callable[[], float] | None = None
    if _proton_installed():
        theirs = lambda: proton_large(body)  # noqa: E731
    return {
        "large": _alternate(lambda: ours_large(body), theirs, size / MiB, "MiB/s", rounds, seconds)
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
    return {"ours": round(value, 1), "proton": None, "ratio": None, "unit": unit}


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
                    if type(event) is amqp.DeliveryReceived:
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


# -- over loopback sockets ------------------------------------------------------------------
#
# A sender and a receiver in one process, over a TCP connection on 127.0.0.1: our client
# sender (driven by SocketDriver) connects to our server, which accepts the connection on a
# listening socket and receives on a thread of its own; Proton does the same with one
# Container, listening and connecting to itself. Each message is built and encoded by the
# sender, decoded and accepted by the receiver, settled at the sender; credit is granted in
# windows of CREDIT_WINDOW. Timed on the wall clock (there is real I/O, and two threads on
# our side), from the sender's first credit to its last settlement.

#: How long a loopback run may go without any progress before it is declared stalled.
LOOPBACK_STALL = 30.0
#: The adapters ``bench loopback`` measures (each has a runner in :data:`LOOPBACK_RUNNERS`).
LOOPBACK_ADAPTERS = ("sockets", "asyncio", "trio")

Progress = Callable[[int], None]


class _LoopbackServer(threading.Thread):
    """Our receiving end: accepts one connection on ``listener``, accepts the session and
    the link, grants credit in windows, decodes and accepts every message."""

    def __init__(self, listener: socket.socket, count: int, size: int) -> None:
        super().__init__(name="bench-loopback-server", daemon=True)
        self.listener = listener
        self.count = count
        self.size = size
        self.received = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._serve()
        except Exception as exc:  # reported by the measuring thread
            self.error = exc

    def _serve(self) -> None:
        conn = amqp.Connection(client=False, container_id="bench-server")
        driver = SocketDriver.accept(conn, self.listener, timeout=LOOPBACK_STALL)
        decode = amqp.Message.decode
        delivery_received = amqp.DeliveryReceived
        data_section = amqp.Data
        accepted = amqp.Accepted()
        window = max(1, min(CREDIT_WINDOW, self.count))
        size = self.size
        receiver: amqp.Receiver | None = None
        clock = time.monotonic
        last = clock()
        with driver:
            while not driver.ended and not driver.closed:
                events = driver.step(LOOPBACK_STALL)
                if events:
                    last = clock()
                elif clock() - last > LOOPBACK_STALL:
                    raise _Stalled(f"our loopback receiver stalled after {self.received}")
                driver.events.clear()
                for event in events:
                    if type(event) is delivery_received:
                        assert receiver is not None
                        got = decode(event.data).body
                        if type(got) is not data_section or len(got.value) != size:
                            raise AssertionError("our loopback mangled a message")
                        self.received += 1
                        receiver.settle(event.delivery, accepted)
                    elif isinstance(event, amqp.ConnectionOpened):
                        conn.open()
                    elif isinstance(event, amqp.SessionBegun):
                        event.session.begin()
                    elif isinstance(event, amqp.LinkAttached):
                        link = event.link
                        assert isinstance(link, amqp.Receiver)
                        link.attach()
                        receiver = link
                        link.flow(window)
                if (
                    receiver is not None
                    and receiver.state is amqp.LinkState.ATTACHED
                    and conn.state is amqp.ConnectionState.OPENED
                    and receiver.link_credit * 2 <= window
                    and self.received + receiver.link_credit < self.count
                ):
                    receiver.flow(window)
                if driver.eof:
                    break


def ours_loopback(
    count: int, *, body: bytes = bytes(PIPE_BODY_SIZE), progress: Progress | None = None
) -> float:
    """Seconds our sockets adapter takes to carry ``count`` messages of ``body`` from a
    client sender to a server receiver over 127.0.0.1, each accepted; ``progress`` is
    called with the count settled so far, now and then."""
    listener = socket.create_server(("127.0.0.1", 0))
    server = _LoopbackServer(listener, count, len(body))
    server.start()
    try:
        conn = amqp.Connection(container_id="bench-client")
        with SocketDriver.connect(conn, listener.getsockname()[:2]) as driver:
            conn.open(now=driver.now())
            session = conn.begin()
            sender = session.attach_sender(
                "bench", target="bench", snd_settle_mode=amqp.SenderSettleMode.UNSETTLED
            )
            driver.run_until(lambda: sender.link_credit > 0, timeout=LOOPBACK_STALL)
            message_cls = amqp.Message
            delivery_updated = amqp.DeliveryUpdated
            sent = done = 0
            step = max(1, count // 100)
            next_report = step
            start = last = time.perf_counter()
            while done < count:
                while sent < count and sender.link_credit > 0:
                    sender.send(message_cls(body=body).encode())
                    sent += 1
                events = driver.step(LOOPBACK_STALL)
                if events:
                    last = time.perf_counter()
                elif time.perf_counter() - last > LOOPBACK_STALL:
                    raise _Stalled(f"our loopback sender stalled after {done} of {count}")
                driver.events.clear()
                for event in events:
                    if type(event) is delivery_updated and event.settled:
                        done += 1
                if driver.eof:
                    raise _Stalled(f"our loopback connection closed after {done} of {count}")
                if progress is not None and next_report <= done < count:
                    progress(done)
                    next_report = done + step
            elapsed = time.perf_counter() - start
            if sender.unsettled:
                raise AssertionError("our loopback left deliveries unsettled")
            conn.close()
            driver.run_until(lambda: conn.state is amqp.ConnectionState.END, LOOPBACK_STALL)
    except _Stalled:
        server.join(LOOPBACK_STALL)
        if server.error is not None:  # what stalled the sender
            raise server.error from None
        raise
    finally:
        server.join(LOOPBACK_STALL)
        listener.close()
    if server.error is not None:
        raise server.error
    if server.received != count:
        raise AssertionError(f"our loopback receiver got {server.received} of {count}")
    return elapsed


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def proton_loopback(
    count: int, *, body: bytes = bytes(PIPE_BODY_SIZE), progress: Progress | None = None
) -> float:
    """Seconds Proton's Container takes on the work of :func:`ours_loopback`: one Container
    listening on 127.0.0.1 and connecting to itself, a sender on the client connection, a
    receiver (credit window :data:`CREDIT_WINDOW`) accepting each message on the server's."""
    import proton
    from proton.handlers import MessagingHandler
    from proton.reactor import Container

    size = len(body)
    port = _free_port()
    step = max(1, count // 100)

    class Loopback(MessagingHandler):
        def __init__(self) -> None:
            super().__init__(prefetch=min(CREDIT_WINDOW, count), auto_accept=True)
            self.sent = self.received = self.accepted = 0
            self.start = self.end = 0.0
            self.acceptor: Any = None
            self.error: str | None = None

        def on_start(self, event: Any) -> None:
            self.acceptor = event.container.listen(f"127.0.0.1:{port}")
            conn = event.container.connect(f"amqp://127.0.0.1:{port}", sasl_enabled=False)
            event.container.create_sender(conn, target="bench")

        def on_sendable(self, event: Any) -> None:
            sender = event.sender
            if not self.start:
                self.start = time.perf_counter()
            while sender.credit > 0 and self.sent < count:
                sender.send(proton.Message(body=body, inferred=True))
                self.sent += 1

        def on_message(self, event: Any) -> None:
            if len(event.message.body) != size:
                raise AssertionError("proton's loopback mangled a message")
            self.received += 1

        def on_accepted(self, event: Any) -> None:
            self.accepted += 1
            if progress is not None and self.accepted % step == 0 and self.accepted < count:
                progress(self.accepted)
            if self.accepted == count:
                self.end = time.perf_counter()
                event.connection.close()
                self.acceptor.close()

        def on_transport_error(self, event: Any) -> None:
            self.error = str(event.transport.condition)
            event.container.stop()

    handler = Loopback()
    container = Container(handler)
    container.timeout = LOOPBACK_STALL
    container.run()
    if handler.error is not None:
        raise _Stalled(f"proton's loopback failed: {handler.error}")
    if handler.accepted != count or handler.received != count:
        raise AssertionError(
            f"proton's loopback carried {handler.received} and settled {handler.accepted} "
            f"of {count}"
        )
    return handler.end - handler.start


# -- over loopback, asyncio ---------------------------------------------------------------
#
# The same work through the asyncio high-level API, on one event loop in one thread (as
# Proton's one Container): an aio.listen server whose incoming link keeps CREDIT_WINDOW
# granted, decodes each message and accepts it; an aio.connect client whose sender sends
# with ``wait=False``, so that sends follow each other under credit, and collects each
# outcome from its tracker.


async def _async_loopback(
    adapter: Any, count: int, body: bytes, progress: Progress | None
) -> float:
    """The loopback work through an async adapter (``aio`` or ``trio_adapter``: the same
    API)."""
    size = len(body)
    window = max(1, min(CREDIT_WINDOW, count))
    decode = amqp.Message.decode
    data_section = amqp.Data
    received = 0

    def on_delivery(delivery: Any) -> None:
        nonlocal received
        got = decode(delivery.data).body
        if type(got) is not data_section or len(got.value) != size:
            raise AssertionError("our async loopback mangled a message")
        received += 1  # accepted by the link (auto_accept) once this returns

    def on_link(link: Any) -> None:
        if isinstance(link, adapter.IncomingLink):
            link.credit = window
            link.on_delivery = on_delivery
        else:
            link.refuse()

    accepted = amqp.Accepted()
    message_cls = amqp.Message
    step = max(1, count // 100)
    next_report = step
    listening = adapter.listen("127.0.0.1", 0, on_link, container_id="bench-server")
    if not hasattr(listening, "__aenter__"):  # asyncio's: await it for the server
        listening = await listening
    async with listening as server:
        url = f"amqp://127.0.0.1:{server.port}/bench"
        async with adapter.connect(
            url, timeout=LOOPBACK_STALL, container_id="bench-client"
        ) as conn:
            sender = await conn.sender()
            outstanding: deque[Any] = deque()
            done = 0
            start = time.perf_counter()
            for _ in range(count):
                outstanding.append(await sender.send(message_cls(body=body), wait=False))
                while outstanding and outstanding[0].done():
                    if await outstanding.popleft().outcome() != accepted:
                        raise AssertionError("our async loopback: a message not accepted")
                    done += 1
                if progress is not None and next_report <= done < count:
                    progress(done)
                    next_report = done + step
            while outstanding:
                if await outstanding.popleft().outcome() != accepted:
                    raise AssertionError("our async loopback: a message not accepted")
            elapsed = time.perf_counter() - start
    if received != count:
        raise AssertionError(f"our async loopback receiver got {received} of {count}")
    return elapsed


def ours_loopback_asyncio(
    count: int, *, body: bytes = bytes(PIPE_BODY_SIZE), progress: Progress | None = None
) -> float:
    """Seconds our asyncio adapter takes on the work of :func:`ours_loopback`: an
    :func:`~amqp_sansio.adapters.aio.listen` server and an
    :func:`~amqp_sansio.adapters.aio.connect` client on one event loop (a new one, in this
    thread), the sender pipelining with ``send(..., wait=False)``."""
    import asyncio

    from . import aio

    return asyncio.run(_async_loopback(aio, count, body, progress))


def ours_loopback_trio(
    count: int, *, body: bytes = bytes(PIPE_BODY_SIZE), progress: Progress | None = None
) -> float:
    """Seconds our trio adapter takes on the work of :func:`ours_loopback`: the same as
    :func:`ours_loopback_asyncio`, on a new trio run in this thread."""
    import trio

    from . import trio_adapter

    return float(trio.run(_async_loopback, trio_adapter, count, body, progress))


#: Our side of ``bench loopback`` for each adapter that exists: a function taking the count
#: (and ``progress=``) and returning the seconds. Adding an adapter is adding its entry.
LOOPBACK_RUNNERS: dict[str, Callable[..., float]] = {
    "sockets": ours_loopback,
    "asyncio": ours_loopback_asyncio,
    "trio": ours_loopback_trio,
}


def loopback_benchmark(
    messages: int = 50_000,
    *,
    adapter: str = "sockets",
    rounds: int = 3,
    seconds: float = 0.0,
    progress: Callable[[str, int, float | None], None] | None = None,
) -> Result:
    """Messages per second between a sender and a receiver in one process over 127.0.0.1,
    ours (with ``adapter``) and Proton's Container. ``progress(label, settled, rate)`` is
    called now and then during each run (``rate`` None) and once at its end (with the
    run's messages per second), ``label`` naming the side and the round."""
    ours = LOOPBACK_RUNNERS.get(adapter)
    if ours is None:
        raise ValueError(f"no adapter named {adapter!r} (one of {', '.join(LOOPBACK_RUNNERS)})")
    runs = {"ours": 0, "proton": 0}

    def run(side: str, fn: Callable[..., float]) -> float:
        runs[side] += 1
        label = f"{side}, round {runs[side]}"
        report = None if progress is None else (lambda n: progress(label, n, None))
        elapsed = fn(messages, progress=report)
        if progress is not None:
            progress(label, messages, messages / elapsed)
        return elapsed

    theirs: Callable[[], float] | None = None
    if _proton_installed():
        theirs = lambda: run("proton", proton_loopback)  # noqa: E731
    return {
        f"loopback-{adapter}": _alternate(
            lambda: run("ours", ours), theirs, messages, "msg/s", rounds, seconds
        )
    }
