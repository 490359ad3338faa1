"""A server that refuses a connection, said as what it is (issue 27): our broker with its
connection cap reached, or any server that closes the transport right after our protocol
header, used to be reported as "authentication failed ... during the SASL exchange". Each
adapter's ``connect(url)`` now raises
:class:`~amqp_sansio.client.amqp10.ConnectionClosedError` (not
:class:`~amqp_sansio.client.amqp10.AuthenticationError`) saying that the server closed the
connection after the protocol header and that it may refuse connections; the command line
says the same. And the errors name the options a user has (the ``connect()`` keyword, the
command-line flag), never the engine's (``allow_cleartext_secrets``, ``tls_client_cert``)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from support.adapters import ADAPTERS, Adapter, aw
from support.broker_process import BrokerProcess, amqp_sansio_command

from amqp_sansio.client.ops import AuthenticationError, ConnectionClosedError

WAIT = 20.0
#: Engine option names that a user of connect() or the command line never sets.
ENGINE_NAMES = ("allow_cleartext_secrets", "tls_client_cert", "allow_plain_without_tls", "allowed")


@contextlib.contextmanager
def closes_after_the_header() -> Iterator[int]:
    """A raw TCP server that reads the client's 8-octet protocol header, then closes the
    connection without a word: yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)  # (to see ``stop``: closing it does not wake accept())
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(WAIT)
                got = b""
                with contextlib.suppress(OSError):
                    while len(got) < 8:
                        piece = conn.recv(8 - len(got))
                        if not piece:
                            break
                        got += piece

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()
        thread.join(WAIT)


def connect_error(adapter: Adapter, url: str, **options: Any) -> BaseException:
    """What ``connect(url)`` raises with ``adapter``."""

    async def scenario() -> BaseException:
        try:
            conn = await aw(adapter.module.connect(url, timeout=WAIT, **options))
        except Exception as exc:
            return exc
        await aw(conn.close())
        raise AssertionError("connected")

    if adapter.name == "trio":  # its connect is a context manager, or awaited in a nursery
        import trio

        async def trio_scenario() -> BaseException:
            try:
                async with adapter.module.connect(url, timeout=WAIT, **options):
                    pass
            except Exception as exc:
                return exc
            raise AssertionError("connected")

        result: BaseException = trio.run(trio_scenario)
        return result
    result = adapter.run(scenario)
    assert isinstance(result, BaseException)
    return result


def assert_refused(error: BaseException) -> None:
    assert isinstance(error, ConnectionClosedError), repr(error)
    assert not isinstance(error, AuthenticationError), repr(error)
    text = str(error)
    assert "closed the connection after the protocol header" in text, text
    assert "the transport failed" not in text, text
    assert "refuse connections (a connection limit" in text, text
    assert "authentication failed" not in text and "SASL exchange" not in text, text


@pytest.mark.parametrize("name", list(ADAPTERS))
def test_a_server_that_closes_after_the_header_is_a_refusal(name: str) -> None:
    with closes_after_the_header() as port:
        assert_refused(connect_error(ADAPTERS[name], f"amqp://127.0.0.1:{port}"))


@pytest.fixture(scope="module")
def capped_broker() -> Iterator[str]:
    """``amqp-sansio broker --max-connections 1``, its one connection taken."""
    with (
        BrokerProcess("--max-connections", "1") as broker,
        ADAPTERS["sockets"].module.connect(broker.url, timeout=WAIT),
    ):
        yield broker.url


@pytest.mark.parametrize("name", list(ADAPTERS))
def test_the_broker_s_connection_cap_is_a_refusal(name: str, capped_broker: str) -> None:
    assert_refused(connect_error(ADAPTERS[name], capped_broker))


def test_the_command_says_the_broker_refused(capped_broker: str) -> None:
    result = subprocess.run(
        [*amqp_sansio_command(), "send", f"{capped_broker}/q", "--body", "x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3, result.stderr
    assert "closed the connection after the protocol header" in result.stderr, result.stderr
    assert "connection limit" in result.stderr and "authentication failed" not in result.stderr
    assert "Traceback" not in result.stderr


def test_no_usable_mechanism_names_the_user_s_options() -> None:
    """A mechanism the server does not offer: the message says what the server offers and
    which keyword and flag change the choice, in the user's terms."""
    with BrokerProcess() as broker:
        error = connect_error(ADAPTERS["sockets"], broker.url, sasl_mechanisms=["EXTERNAL"])
    assert isinstance(error, AuthenticationError), repr(error)
    text = str(error)
    assert "no usable SASL mechanism: the server offers" in text, text
    assert "sasl_mechanisms=" in text and "--sasl-mechanism" in text, text
    assert "allow_insecure_auth=True" in text and "--allow-insecure-auth" in text, text
    for name in ENGINE_NAMES:
        assert name not in text.replace("sasl_mechanisms=", ""), (name, text)


@pytest.mark.parametrize("wrapped", [False, True], ids=["reset", "wrapped-reset"])
def test_a_reset_before_the_open_is_a_refusal_in_the_core(wrapped: bool) -> None:
    """I/O-free: the transport reset before the server's open (the server closed without
    reading our header), as a socket reports it or as trio wraps it (BrokenResourceError
    from the reset)."""
    from amqp_sansio.client import amqp10 as client

    core = client.client_core("amqp://127.0.0.1:5672")
    core.open(0.0)
    core.data_to_send()
    error: BaseException = ConnectionResetError(104, "Connection reset by peer")
    if wrapped:
        import trio

        try:
            raise trio.BrokenResourceError("broken") from error
        except trio.BrokenResourceError as exc:
            error = exc
    core.transport_failed(error, 0.1)
    assert core.error is not None
    assert_refused(core.error)
