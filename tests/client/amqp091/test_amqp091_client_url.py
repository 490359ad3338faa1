"""AMQP 0-9-1 URLs as RabbitMQ's URI specification writes them (amqp_sansio/client/amqp091/url.py):
the virtual host in the path, RabbitMQ's query parameters, the password never shown."""

from __future__ import annotations

import attrs
import pytest

from amqp_sansio.client.amqp091 import URL, parse_url
from amqp_sansio.client.url import InsecureCredentialsError, URLError


def url(**fields: object) -> URL:
    """An ``amqp://h`` URL with ``fields`` changed."""
    return attrs.evolve(URL(scheme="amqp", host="h", port=5672), **fields)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # RabbitMQ's URI spec, its examples: no path is the default vhost, "/" the empty one.
        ("amqp://h", url()),
        ("amqp://h/", url(virtual_host="")),
        ("amqp://h/%2f", url(virtual_host="/")),
        ("amqp://h/%2Fprod", url(virtual_host="/prod")),
        ("amqp://h/vhost", url(virtual_host="vhost")),
        (
            "amqp://user:pass@host:10000/vhost",
            url(host="host", port=10000, username="user", password="pass", virtual_host="vhost"),
        ),
        (
            "amqp://user%61:%61pass@ho%61st:10000/v%2fhost",
            url(
                host="hoast", port=10000, username="usera", password="apass", virtual_host="v/host"
            ),
        ),
        ("amqp://:@/", None),  # no host: refused (we need one to connect to)
        ("amqps://h", url(scheme="amqps", port=5671)),
        (
            "amqp://[::1]:5673/x?heartbeat=10&frame_max=8192&channel_max=16",
            url(
                host="::1",
                port=5673,
                virtual_host="x",
                heartbeat=10,
                frame_max=8192,
                channel_max=16,
            ),
        ),
        ("amqp://h?heartbeat=0", url(heartbeat=0)),
    ],
)
def test_parse(text: str, expected: URL | None) -> None:
    if expected is None:
        with pytest.raises(URLError):
            parse_url(text)
    else:
        assert parse_url(text) == expected


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://h", "scheme"),
        ("amqp://h/a/b", "one path segment"),
        ("amqp://h?heartbeat=x", "whole number"),
        ("amqp://h?heartbeat=-1", "whole number"),
        ("amqp://h?heartbeat=%C2%B2", "whole number"),  # a superscript digit is no digit
        ("amqp://h?channel_max=65536", "whole number"),
        ("amqp://h?heartbeat=1&heartbeat=2", "twice"),
        ("amqp://h?verify=verify_none", "unknown query parameter 'verify'"),
        ("amqp://h#frag", "fragment"),
        ("amqp://h:99999", "valid URL"),
    ],
)
def test_refused(url: str, why: str) -> None:
    with pytest.raises(URLError, match=why):
        parse_url(url)


def test_round_trip_and_redaction() -> None:
    url = parse_url("amqps://us%40er:s3cr%2Ft@broker:5671/%2f?heartbeat=5")
    assert url.password == "s3cr/t"
    for shown in (repr(url), str(url), url.redacted()):
        assert "s3cr" not in shown
    assert url.redacted() == "amqps://us%40er:***@broker:5671?heartbeat=5"
    assert parse_url(url.unredacted()) == url
    named = parse_url("amqp://h/prod%2Feu?frame_max=4096")
    assert str(named) == "amqp://h:5672/prod%2Feu?frame_max=4096"
    assert parse_url(str(named)) == named
    assert parse_url(str(parse_url("amqp://h/"))).virtual_host == ""


def test_credentials_rule_is_the_1_0_one() -> None:
    """The same one decision as the AMQP 1.0 client: credentials in the clear only to a
    loopback host, over TLS, or when opted in."""
    parse_url("amqp://u:p@127.0.0.1/v").check_credentials()
    parse_url("amqps://u:p@broker/v").check_credentials()
    parse_url("amqp://u:p@broker/v").check_credentials(allow_insecure_auth=True)
    with pytest.raises(InsecureCredentialsError, match="unencrypted to broker"):
        parse_url("amqp://u:p@broker/v").check_credentials()
