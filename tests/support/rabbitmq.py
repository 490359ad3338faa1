"""The RabbitMQ the tests may use: the one ``AMQP_SANSIO_RABBITMQ_URL`` names
(``amqp://user:password@host:port``; ``.ci/run`` starts one and sets it)."""

from __future__ import annotations

import os
import socket
import urllib.parse

import pytest

__all__ = ["ENV", "rabbitmq_url"]

ENV = "AMQP_SANSIO_RABBITMQ_URL"


def rabbitmq_url() -> str:
    """Its URL (without a trailing ``/``), once something answers at its host and port; the
    test skips, saying why, when the variable is not set or nothing answers."""
    url = os.environ.get(ENV)
    if not url:
        pytest.skip(f"{ENV} is not set: no RabbitMQ to test against (.ci/run starts one)")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "amqp" or not parts.hostname:
        raise ValueError(f"{ENV}={url!r} is not an amqp://user:password@host:port URL")
    host, port = parts.hostname, parts.port or 5672
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as exc:
        pytest.skip(f"no RabbitMQ reachable at {host}:{port} ({ENV}): {exc}")
    return url.rstrip("/")
