"""qpid.messaging, the API Qpid users write their programs with, as a client of our broker
started as a user starts it (``amqp-sansio broker``): the example programs of qpid-python
(``examples/api``: hello, spout, drain, server) run as programs, with the peer's folder on
their ``PYTHONPATH``, and their output read. Queues made by address options
(``{create: always}``), an exchange address with a subject, ``x-bindings``, message
properties and a map body given by spout's options, and a request answered by the example
server through ``reply-to``."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from support.broker_process import BrokerProcess
from support.qpid_peer import QPID_DIR, qpid_module

#: Each program's bound (seconds): a program that hangs fails the test.
WAIT = 20.0

EXAMPLES = QPID_DIR / "examples" / "api"


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    qpid_module("qpid.messaging")  # (skips, saying why, without the peer)
    with BrokerProcess() as process:
        yield process


#: What qpid-python sometimes writes as a program exits, its work done: its selector's
#: ``atexit`` hook wakes a thread whose pipe is already closed (qpid/selector.py,
#: ``Selector.stop``). Nothing of the broker's: taken out of stderr before it is read.
EXIT_NOISE = re.compile(
    r"Exception ignored in atexit callback: <bound method Selector\.stop .*?"
    r"OSError: \[Errno 9\] Bad file descriptor\n",
    re.DOTALL,
)


def _stderr(text: str) -> str:
    return EXIT_NOISE.sub("", text)


def _command(program: str, *args: str) -> list[str]:
    return [sys.executable, str(EXAMPLES / program), *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(QPID_DIR), "PYTHONWARNINGS": "ignore"}


def run(broker: BrokerProcess, program: str, *args: str) -> list[str]:
    """Run an example program against ``broker`` (``-b host:port``, but hello, which takes
    the broker as its first argument): its output lines. It must exit with status 0 and
    write nothing on stderr."""
    where = f"127.0.0.1:{broker.port}"
    argv = [where, *args] if program == "hello" else ["-b", where, *args]
    done = subprocess.run(
        _command(program, *argv), capture_output=True, text=True, timeout=WAIT, env=_env()
    )
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr, broker.log)
    assert _stderr(done.stderr) == "", (done.stderr, broker.log)
    return done.stdout.splitlines()


def test_hello_through_amq_topic(broker: BrokerProcess) -> None:
    """hello with its defaults: a sender and a receiver on ``amq.topic`` (the receiver's
    queue bound to the exchange), the message fetched and acknowledged."""
    assert run(broker, "hello") == ["Hello world!"]


def test_hello_through_a_queue_it_creates(broker: BrokerProcess) -> None:
    assert run(broker, "hello", "hello.q; {create: always}") == ["Hello world!"]
    # acknowledged: nothing left on the queue
    assert run(broker, "drain", "-t", "0.3", "hello.q") == []


def test_spout_then_drain_a_created_queue(broker: BrokerProcess) -> None:
    sent = run(broker, "spout", "-c", "3", "sd.q; {create: always}", "hello", "there")
    assert len(sent) == 3 and all(line.startswith("Message(") for line in sent)
    got = run(broker, "drain", "-c", "3", "-t", "5", "-p", "%(C)s", "sd.q")
    assert got == ["hello there"] * 3
    assert run(broker, "drain", "-t", "0.3", "sd.q") == []


def test_drain_takes_each_message_once(broker: BrokerProcess) -> None:
    run(broker, "spout", "-c", "4", "once.q; {create: always}")
    first = run(broker, "drain", "-c", "2", "-t", "5", "-p", "%(P['spout-id'])s", "once.q")
    rest = run(broker, "drain", "-c", "2", "-t", "5", "-p", "%(P['spout-id'])s", "once.q")
    ids = first + rest
    assert len(ids) == 4 and [i.split(":")[1] for i in ids] == ["0", "1", "2", "3"]
    assert len({i.split(":")[0] for i in ids}) == 1  # one spout


def test_spout_options_become_message_fields(broker: BrokerProcess) -> None:
    run(broker, "drain", "-t", "0", "props.q; {create: always}")  # (the queue, made)
    run(broker, "drain", "-t", "0", "answers; {create: always}")
    run(
        broker,
        "spout",
        "-d",
        "-I",
        "fixed-id",
        "-S",
        "the-subject",
        "-R",
        "answers",
        "-P",
        "colour=red",
        "-P",
        "size=9",
        "props.q",
        "some",
        "text",
    )
    fmt = "|".join(
        [
            "%(M.subject)r",
            "%(M.reply_to)r",
            "%(M.durable)r",
            "%(M.content_type)r",
            "%(P['colour'])r",
            "%(P['size'])r",
            "%(P['spout-id'])r",
            "%(C)r",
        ]
    )
    (line,) = run(broker, "drain", "-c", "1", "-t", "5", "-p", fmt, "props.q")
    assert line.split("|") == [
        "'the-subject'",
        "'answers'",
        "True",
        "'text/plain'",
        "'red'",
        "'9'",
        "'fixed-id:0'",
        "'some text'",
    ]


def test_a_map_body(broker: BrokerProcess) -> None:
    """spout's ``-M`` entries make a map message (``amqp/map``), read back as a dict."""
    run(broker, "spout", "-M", "a=1", "-M", "b=two", "map.q; {create: always}", "txt")
    fmt = "%(M.content_type)s %(C)r"
    (line,) = run(broker, "drain", "-c", "1", "-t", "5", "-p", fmt, "map.q")
    content_type, content = line.split(" ", 1)
    assert content_type == "amqp/map"
    assert eval(content) == {"a": "1", "b": "two", "text": "txt"}


def test_an_exchange_address_routes_by_subject(broker: BrokerProcess) -> None:
    """A queue bound to ``amq.topic`` by its address's ``x-bindings``; spout sends to
    ``amq.topic/<subject>``: only the matching subjects reach the queue."""
    bound = (
        "news.q; {create: always, node: {x-bindings: "
        "[{exchange: 'amq.topic', queue: 'news.q', key: 'news.#'}]}}"
    )
    assert run(broker, "drain", "-t", "0", bound) == []
    run(broker, "spout", "amq.topic/news.sport", "goal")
    run(broker, "spout", "amq.topic/weather.today", "rain")
    run(broker, "spout", "amq.topic/news", "election")
    got = run(broker, "drain", "-c", "2", "-t", "5", "-p", "%(M.subject)s %(C)s", "news.q")
    assert got == ["news.sport goal", "news election"]


def test_an_exchange_it_creates_and_a_live_subscriber(broker: BrokerProcess) -> None:
    """drain subscribed to a fanout exchange spout's address creates; spout sends until
    drain, which takes only what comes after it subscribed, has its message."""
    address = "fan.x; {create: always, node: {type: topic, x-declare: {type: fanout}}}"
    run(broker, "spout", "-c", "1", address, "before")  # (the exchange, made)
    drain = subprocess.Popen(
        _command("drain", "-b", f"127.0.0.1:{broker.port}", "-c", "1", "-t", "15", "fan.x"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        deadline = time.monotonic() + WAIT
        while drain.poll() is None and time.monotonic() < deadline:
            run(broker, "spout", "fan.x", "live")
            time.sleep(0.2)
        out, err = drain.communicate(timeout=WAIT)
    finally:
        if drain.poll() is None:
            drain.kill()
            drain.communicate()
    assert drain.returncode == 0 and _stderr(err) == "", (out, err, broker.log)
    (line,) = out.splitlines()
    assert line.startswith("Message(properties={'spout-id': ") and line.endswith("content='live')")


def test_server_answers_a_request_through_reply_to(broker: BrokerProcess) -> None:
    """The example server takes requests from its address and sends each answer to the
    request's ``reply-to``; a client (spout with ``-R``, then drain on the reply queue)
    asks it to evaluate an expression (one whose value is text: qpid.messaging's Message
    takes no int content under Python 3)."""
    run(broker, "drain", "-t", "0", "requests; {create: always}")
    run(broker, "drain", "-t", "0", "my.replies; {create: always}")
    server = subprocess.Popen(
        _command("server", "-b", f"127.0.0.1:{broker.port}", "requests"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        request = "'6*7=%d' % (6*7)"
        run(broker, "spout", "-R", "my.replies", "-P", "type=eval", "requests", request)
        run(broker, "spout", "-R", "my.replies", "-P", "type=other", "requests", "x")
        got = run(broker, "drain", "-c", "2", "-t", "10", "-p", "%(C)r", "my.replies")
        assert got == ["'6*7=42'", "'unrecognized message type: other'"]
        assert run(broker, "drain", "-t", "0.3", "requests") == []  # each acknowledged
    finally:
        server.send_signal(signal.SIGINT)  # KeyboardInterrupt: it closes its connection
        out, err = server.communicate(timeout=WAIT)
    assert server.returncode == 0, (out, err, broker.log)
    assert out == "" and _stderr(err) == "", (out, err)


def test_drain_in_browse_mode_leaves_the_messages(broker: BrokerProcess) -> None:
    """An address with ``{mode: browse}``: drain sees the messages (a subscription that
    does not acquire them), and they are still there for the next drain."""
    run(broker, "spout", "-c", "2", "browse.q; {create: always}", "b")
    seen = run(broker, "drain", "-c", "2", "-t", "5", "-p", "%(C)s", "browse.q; {mode: browse}")
    assert seen == ["b", "b"]
    assert run(broker, "drain", "-c", "2", "-t", "5", "-p", "%(C)s", "browse.q") == ["b", "b"]


def test_an_address_of_nothing_is_not_found(broker: BrokerProcess) -> None:
    """Without ``{create: always}``, an address the broker has neither as a queue nor as an
    exchange (qpid.messaging asks with ``queue.query`` and ``exchange.query``): the
    program stops with qpid.messaging's NotFound (the examples do not catch it)."""
    where = f"127.0.0.1:{broker.port}"
    for program, args in (("drain", ["-t", "1", "nowhere.q"]), ("spout", ["nowhere.x/k", "x"])):
        done = subprocess.run(
            _command(program, "-b", where, *args),
            capture_output=True,
            text=True,
            timeout=WAIT,
            env=_env(),
        )
        assert done.returncode == 1 and done.stdout == "", (done.stdout, done.stderr)
        name = args[-1 if program == "drain" else -2].split("/")[0]
        last = _stderr(done.stderr).strip().splitlines()[-1]
        assert last == f"qpid.messaging.exceptions.NotFound: no such queue: {name}", last
