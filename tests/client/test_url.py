"""AMQP URLs for the adapters and the command line (amqp_sansio/client/url.py)."""

from __future__ import annotations

import pytest

from amqp_sansio.client.url import AMQPURL, InsecureCredentialsError, URLError, parse_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("amqp://h/q", AMQPURL(scheme="amqp", host="h", port=5672, address="q")),
        ("amqp://h//queue/q", AMQPURL(scheme="amqp", host="h", port=5672, address="/queue/q")),
        ("amqp://h", AMQPURL(scheme="amqp", host="h", port=5672)),
        ("amqp://h/", AMQPURL(scheme="amqp", host="h", port=5672)),
        ("amqps://h:1234/a%20b", AMQPURL(scheme="amqps", host="h", port=1234, address="a b")),
        ("AMQPS://broker.example", AMQPURL(scheme="amqps", host="broker.example", port=5671)),
        (
            "amqp://gu%40est:p%3Ass@[::1]:5673/x",
            AMQPURL(
                scheme="amqp",
                host="::1",
                port=5673,
                username="gu@est",
                password="p:ss",
                address="x",
            ),
        ),
        (
            "amqp://user@h/q",
            AMQPURL(scheme="amqp", host="h", port=5672, username="user", address="q"),
        ),
    ],
)
def test_parse(url: str, expected: AMQPURL) -> None:
    assert parse_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "http://h/q",
        "h/q",
        "amqp:///q",
        "amqp://h:99999/q",
        "amqp://h:x/q",
        "amqp://h/q?x=1",
        "amqp://h/q#f",
    ],
)
def test_not_an_amqp_url(url: str) -> None:
    with pytest.raises(URLError):
        parse_url(url)


def test_the_password_never_shows() -> None:
    url = parse_url("amqp://alice:s3cret@127.0.0.1//queue/q")
    assert "s3cret" not in repr(url) + str(url) + url.redacted()
    assert url.redacted() == "amqp://alice:***@127.0.0.1:5672//queue/q"
    assert parse_url("amqps://[::1]").redacted() == "amqps://[::1]:5671"
    assert repr(parse_url("amqp://h")).count("password=None") == 1


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("amqp://u:p@127.0.0.1/q", True),
        ("amqp://u:p@127.5.6.7/q", True),
        ("amqp://u:p@localhost/q", True),
        ("amqp://u:p@[::1]/q", True),
        ("amqps://u:p@broker.example/q", True),
        ("amqp://broker.example/q", True),  # no credentials: nothing to protect
        ("amqp://u:p@broker.example/q", False),
        ("amqp://u@10.0.0.1/q", False),
    ],
)
def test_credentials_go_unencrypted_only_to_loopback(url: str, ok: bool) -> None:
    parsed = parse_url(url)
    parsed.check_credentials(allow_insecure_auth=True)
    if ok:
        parsed.check_credentials()
    else:
        with pytest.raises(InsecureCredentialsError, match="--allow-insecure-auth"):
            parsed.check_credentials()
    assert parsed.tls is url.startswith("amqps")


@pytest.mark.parametrize(
    "url",
    [
        "amqp://h:5672/q",
        "amqps://us%40er:p%40ss%3Aw@[::1]:5671//queue/a%20b",
        "amqp://user@h:1",
        "amqp://:secret@h:5672/x",
    ],
)
def test_unredacted_round_trips(url: str) -> None:
    parsed = parse_url(url)
    assert parse_url(parsed.unredacted()) == parsed
    assert parsed.password is None or parsed.password not in parsed.redacted()
