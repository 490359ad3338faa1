"""qpid.messaging, the API Qpid users write their programs with, as a client of our broker
started as a user starts it (``amqp-sansio broker``): qpid-python's example programs
(``examples/api``) hello, spout and drain run as programs and their output read
(tests/support/amqp010/qpid_programs.py). Queues made by address options
(``{create: always}``), message properties and a map body given by spout's options,
browsing, an address of nothing. Exchanges and the example server:
test_broker010_qpid_exchanges.py."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from support.amqp010.qpid_programs import WAIT, command, env, run, stderr_of
from support.broker_process import BrokerProcess
from support.qpid_peer import qpid_module


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    qpid_module("qpid.messaging")  # (skips, saying why, without the peer)
    with BrokerProcess() as process:
        yield process


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
            command(program, "-b", where, *args),
            capture_output=True,
            text=True,
            timeout=WAIT,
            env=env(),
        )
        assert done.returncode == 1 and done.stdout == "", (done.stdout, done.stderr)
        name = args[-1 if program == "drain" else -2].split("/")[0]
        last = stderr_of(done.stderr).strip().splitlines()[-1]
        assert last == f"qpid.messaging.exceptions.NotFound: no such queue: {name}", last
