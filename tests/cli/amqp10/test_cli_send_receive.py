"""``amqp-sansio send`` and ``amqp-sansio receive`` against our small broker
(:class:`support.cli_broker.TestBroker`, ``tests/support/cli_broker.py``, in a thread of the
test), over TLS with ``trustme`` certificates, and against RabbitMQ when
``AMQP_SANSIO_RABBITMQ_URL`` names one. Exit statuses: 0 done, 1 not every message accepted,
2 usage, 3 connection, TLS, authentication or link refused, 4 timed out."""

from __future__ import annotations

import ssl
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest
from amqp_sansio.adapters import cli
from amqp_sansio.adapters.cli.amqp10 import receive
from amqp_sansio.adapters.cli.connect import (
    ClientOptions,
    CommandError,
    connect_options,
    open_connection,
)
from support.broker_process import free_port
from support.cli_broker import TestBroker
from support.rabbitmq import rabbitmq_url

import amqp_sansio as amqp
from amqp_sansio.client.engines import client_engine
from amqp_sansio.client.url import parse_url

USERS = {"alice": "s3cret"}


@pytest.fixture
def broker() -> Iterator[TestBroker]:
    with TestBroker(users=USERS, refuse=["missing"], reject=["refusing"]) as b:
        yield b


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = cli.main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def _decoded(broker: TestBroker, address: str) -> list[amqp.Message]:
    return [amqp.Message.decode(data) for data in broker.queues[address]]


# -- sending and receiving ----------------------------------------------------------------


def test_send_then_receive(broker: TestBroker, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "send", broker.url("q"), "--count", "250")
    assert status == 0, err
    assert out.startswith(f"sent 250 messages to {broker.url('q')}: 250 accepted in ")
    assert out.rstrip().endswith("msg/s)") and err == ""
    bodies = [m.body for m in _decoded(broker, "q")]
    assert bodies == [amqp.AmqpValue(f"message {i}") for i in range(1, 251)]

    status, out, err = run(
        capsys, "receive", broker.url("q"), "--count", "250", "--credit", "7", "--count-only"
    )
    assert status == 0, err
    assert out.startswith(f"received 250 messages from {broker.url('q')}: 250 accepted in ")
    assert not broker.queues["q"]


def test_receive_prints_bodies_and_sends_the_summary_to_stderr(
    broker: TestBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "send", broker.url("q"), "--count", "3", "--body", "héllo")[0] == 0
    status, out, err = run(capsys, "receive", broker.url("q"), "--count", "3", "--print")
    assert status == 0
    assert out == "héllo\n" * 3
    assert err.startswith("received 3 messages") and "3 accepted" in err


def test_send_size_durable_and_the_rabbitmq_style_address(
    broker: TestBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run(
        capsys, "send", broker.url("/queue/q"), "--count", "2", "--size", "1KiB", "--durable"
    )
    assert status == 0, err
    assert broker.url("/queue/q").endswith("//queue/q")
    messages = _decoded(broker, "/queue/q")
    assert len(messages) == 2
    for m in messages:
        assert m.header is not None and m.header.durable
        assert m.body == amqp.Data(b"x" * 1024)


def test_pre_settled(broker: TestBroker, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "send", broker.url("q"), "--count", "3000", "--settled")
    assert status == 0
    assert ": 3,000 pre-settled in " in out
    assert len(broker.queues["q"]) == 3000  # the broker's close came after all of them


def test_credentials_from_the_url(broker: TestBroker, capsys: pytest.CaptureFixture[str]) -> None:
    url = broker.url("q", user="alice", password="s3cret")
    status, out, _ = run(capsys, "send", url)
    assert status == 0
    assert "s3cret" not in out and "alice:***@" in out
    assert broker.identities == ["alice"]
    status, _, _ = run(capsys, "receive", url, "--sasl-mechanism", "plain")
    assert status == 0
    assert broker.identities == ["alice", "alice"]


def test_anonymous_without_credentials(
    broker: TestBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "send", broker.url("q"))[0] == 0
    assert broker.identities == ["anonymous"]


# -- exit statuses ----------------------------------------------------------------------------


def test_not_accepted_is_status_1(broker: TestBroker, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "send", broker.url("refusing"), "--count", "4")
    assert status == 1
    assert ": 4 rejected in " in out


def test_refused_authentication_is_status_3(
    broker: TestBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "send", broker.url("q", user="alice", password="wrong"))
    assert status == 3 and out == ""
    assert err.startswith("amqp-sansio send: error: authentication failed at 127.0.0.1:")
    assert "wrong" not in err and err.count("\n") == 1
    assert not broker.queues["q"]


def test_refused_link_is_status_3(broker: TestBroker, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "send", broker.url("missing"))
    assert status == 3
    assert "the broker refused the link to missing: amqp:not-found" in err
    status, _, err = run(capsys, "receive", broker.url("missing"))
    assert status == 3
    assert "the broker refused the link from missing: amqp:not-found" in err


def test_timeout_is_status_4(broker: TestBroker, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(
        capsys, "receive", broker.url("empty"), "--count", "2", "--timeout", "0.3"
    )
    assert status == 4 and out == ""
    assert err == "amqp-sansio receive: error: timed out after 0.3 s waiting for message 1 of 2\n"


def test_connection_refused_is_status_3_without_a_traceback() -> None:
    # The installed command, as a user runs it.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "amqp_sansio.adapters.cli",
            "send",
            f"amqp://127.0.0.1:{free_port()}/q",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3
    assert result.stderr.startswith("amqp-sansio send: error: cannot connect to 127.0.0.1:")
    assert "connection refused" in result.stderr and "Traceback" not in result.stderr


def test_sasl_mismatch_says_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    """By default a broker without SASL is reached after one fallback (see
    tests/security/test_sasl_defaults.py); a mechanism asked for is not given up on."""
    with TestBroker(sasl=False) as plain:
        status, _, err = run(capsys, "send", plain.url("q"), "--sasl-mechanism", "ANONYMOUS")
        assert status == 3 and "try --sasl-mechanism none" in err
        assert run(capsys, "send", plain.url("q"), "--sasl-mechanism", "none")[0] == 0
        assert run(capsys, "send", plain.url("q"))[0] == 0
    with TestBroker(users=USERS, allow_anonymous=False) as with_sasl:
        status, _, err = run(capsys, "send", with_sasl.url("q"), "--sasl-mechanism", "none")
        assert status == 3 and "leave out --sasl-mechanism none" in err
        status, _, err = run(capsys, "send", with_sasl.url("q"))
        assert status == 3 and "put user:password in the URL" in err


# -- usage errors: status 2 ------------------------------------------------------------------


def test_credentials_in_the_clear_to_another_host_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, err = run(capsys, "send", "amqp://alice:s3cret@broker.example/q")
    assert status == 2 and out == ""
    assert err == (
        "amqp-sansio send: error: refusing to send credentials unencrypted to broker.example: "
        "use amqps://, or allow it explicitly (allow_insecure_auth=True, --allow-insecure-auth)\n"
    )


def test_allow_insecure_auth_lets_plain_through() -> None:
    url = parse_url("amqp://alice:s3cret@broker.example/q")
    with pytest.raises(CommandError) as info:
        open_connection(url, ClientOptions(), role="send")
    assert info.value.status == 2
    options = connect_options(url, ClientOptions(allow_insecure_auth=True), role="send")
    _, conn, _ = client_engine(url, **options)
    assert conn.hostname == "broker.example"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["send", "amqp://127.0.0.1"], "the URL names no address"),
        (["send", "http://127.0.0.1/q"], "the scheme must be amqp://, amqps://, ws:// or wss://"),
        (["receive", "amqp://127.0.0.1/q", "--cafile", "ca.pem"], "are for amqps:// URLs"),
        (
            ["send", "amqp://u:p@127.0.0.1/q", "--sasl-mechanism", "none"],
            "remove them from the URL",
        ),
    ],
)
def test_usage_errors(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, *args)
    assert status == 2 and message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "args",
    [
        ["send", "amqp://h/q", "--size", "1", "--body", "x"],
        ["send", "amqp://h/q", "--count", "0"],
        ["receive", "amqp://h/q", "--timeout", "0"],
        ["receive"],
    ],
)
def test_bad_arguments(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(args)
    assert info.value.code == 2


# -- TLS (amqps) -----------------------------------------------------------------------------

trustme = pytest.importorskip("trustme")


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[trustme.CA, str, ssl.SSLContext]:
    """A CA (and its PEM file), and a server context with its certificate for localhost and
    127.0.0.1."""
    ca = trustme.CA()
    folder = tmp_path_factory.mktemp("tls")
    cafile = str(folder / "ca.pem")
    ca.cert_pem.write_to_path(cafile)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
    return ca, cafile, context


def test_amqps(
    tls: tuple[trustme.CA, str, ssl.SSLContext], capsys: pytest.CaptureFixture[str]
) -> None:
    _, cafile, context = tls
    with TestBroker(tls=context, users=USERS, allow_anonymous=False) as b:
        url = b.url("q", user="alice", password="s3cret")
        assert url.startswith("amqps://")
        status, out, err = run(capsys, "send", url, "--count", "5", "--cafile", cafile)
        assert status == 0, err
        assert b.identities == ["alice"]
        # Unknown CA: refused, unless verification is explicitly turned off.
        status, _, err = run(capsys, "receive", url, "--count", "5")
        assert status == 3
        assert err.startswith("amqp-sansio receive: error: TLS with 127.0.0.1:")
        assert "the broker's certificate was refused" in err and "--cafile" in err
        status, out, err = run(
            capsys, "receive", url, "--count", "5", "--insecure-skip-verify", "--print"
        )
        assert status == 0, err
        assert out.splitlines() == [f"message {i}" for i in range(1, 6)]


def test_amqps_checks_the_host_name(
    tls: tuple[trustme.CA, str, ssl.SSLContext], capsys: pytest.CaptureFixture[str]
) -> None:
    ca, cafile, context = tls
    with TestBroker(tls=context) as b:
        url = b.url("q").replace("127.0.0.1", "localhost")
        assert run(capsys, "send", url, "--cafile", cafile)[0] == 0
    elsewhere = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("elsewhere.example").configure_cert(elsewhere)
    with TestBroker(tls=elsewhere) as b:
        status, _, err = run(capsys, "send", b.url("q"), "--cafile", cafile)
        assert status == 3
        assert "TLS with 127.0.0.1" in err and "127.0.0.1" in err.split("failed: ")[1]


# -- printing bodies -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "line"),
    [
        ("text", "text"),
        (b"bytes \xff", "bytes \\xff"),
        (amqp.AmqpValue(42), "42"),
        (amqp.AmqpValue(b"ab"), "ab"),
        ([amqp.Data(b"a"), amqp.Data(b"b")], "ab"),
        (None, ""),
        (amqp.AmqpSequence([1, 2]), "AmqpSequence(value=[1, 2])"),
    ],
)
def test_format_body(body: object, line: str) -> None:
    assert receive.format_body(amqp.Message(body=body)) == line


# -- RabbitMQ -------------------------------------------------------------------------------------


@pytest.fixture
def rabbitmq() -> str:
    return rabbitmq_url()


def test_rabbitmq_send_then_receive(rabbitmq: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"{rabbitmq}//queue/cli-{uuid.uuid4().hex[:10]}"
    status, out, err = run(capsys, "send", url, "--count", "500")
    assert status == 0, err
    assert ": 500 accepted in " in out
    status, out, err = run(
        capsys, "receive", url, "--count", "500", "--credit", "50", "--count-only"
    )
    assert status == 0, err
    assert ": 500 accepted in " in out
    status, _, err = run(capsys, "receive", url, "--timeout", "0.5")
    assert status == 4, err  # the queue is empty now


def test_rabbitmq_refuses_a_wrong_password(
    rabbitmq: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parsed = parse_url(rabbitmq)
    url = f"amqp://{parsed.username or 'guest'}:wrong@{parsed.host}:{parsed.port}//queue/x"
    status, _, err = run(capsys, "send", url)
    assert status == 3 and "authentication failed" in err


def test_rabbitmq_refuses_an_unknown_address(
    rabbitmq: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run(capsys, "send", f"{rabbitmq}//nowhere/x")
    assert status == 3 and "the broker ended the session" in err
