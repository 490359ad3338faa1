"""AMQP 0-9-1 URLs, as RabbitMQ's URI specification writes them:
``amqp://[user[:password]@]host[:port][/vhost][?query]`` and ``amqps://`` for TLS.

The path is the virtual host, percent-decoded: ``amqp://h/%2f`` is ``/``, ``amqp://h/prod``
is ``prod``; ``amqp://h`` (no path) is the default, ``/``; ``amqp://h/`` is the empty name
``""`` (as RabbitMQ's specification says; few servers have one). A path of more than one
segment (an unencoded ``/`` in the name) is refused: write it ``%2f``. The query takes
RabbitMQ's parameters ``heartbeat`` (seconds, 0: none), ``frame_max`` (octets) and
``channel_max``; anything else is refused (TLS is configured with ``ssl_context=``, not in
the URL). Scheme, host, port (5672, 5671 for amqps), user and password are read as for
AMQP 1.0 (:func:`amqp_sansio.client.url.split_url`), and the password never shows in a
repr, :meth:`~amqp_sansio.client.amqp10.AMQPURL.redacted` or ``str()``.
"""

from __future__ import annotations

import urllib.parse

import attrs

from amqp_sansio.client.url import AMQPURL, URLError, split_url

__all__ = ["QUERY_PARAMETERS", "URL", "parse_url"]

#: The query parameters an AMQP 0-9-1 URL may carry (RabbitMQ's names), and their bounds.
QUERY_PARAMETERS = {"heartbeat": 65535, "frame_max": 2**32 - 1, "channel_max": 65535}


@attrs.frozen(kw_only=True)
class URL(AMQPURL):
    """A parsed AMQP 0-9-1 URL (see the module's docstring). ``address`` is always None:
    0-9-1 names queues and exchanges in its methods, not in the URL. The query's
    parameters are None when absent (the connection's options, or the defaults, apply)."""

    virtual_host: str = "/"
    heartbeat: int | None = None
    frame_max: int | None = None
    channel_max: int | None = None

    def _format(self, password: str | None) -> str:
        base = AMQPURL._format(attrs.evolve(self, virtual_host="/"), password)
        path = "" if self.virtual_host == "/" else "/" + urllib.parse.quote(self.virtual_host, "")
        query = urllib.parse.urlencode(
            {name: value for name in QUERY_PARAMETERS if (value := getattr(self, name)) is not None}
        )
        return f"{base}{path}{'?' + query if query else ''}"


def parse_url(url: str) -> URL:
    """Parse an AMQP 0-9-1 URL (see the module's docstring).

    Raises:
        URLError: not ``amqp://`` or ``amqps://``, no host, a bad port, a virtual host of
            more than one path segment, a fragment, or a query parameter that is unknown,
            repeated, not a whole number, or out of its range.
    """
    parts, fields = split_url(url)
    fields["host"] = urllib.parse.unquote(fields["host"])  # (RabbitMQ's spec decodes it)
    if parts.fragment:
        raise URLError("an AMQP URL has no fragment")
    path = parts.path
    if not path:
        virtual_host = "/"
    elif "/" in path[1:]:
        raise URLError(
            f"the virtual host is one path segment: write a '/' in its name as %2f ({path!r})"
        )
    else:
        virtual_host = urllib.parse.unquote(path[1:])
    query: dict[str, int] = {}
    for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        if name not in QUERY_PARAMETERS:
            known = ", ".join(QUERY_PARAMETERS)
            raise URLError(f"unknown query parameter {name!r} (an AMQP 0-9-1 URL takes {known})")
        if name in query:
            raise URLError(f"the query parameter {name!r} is given twice")
        if not (value.isascii() and value.isdigit()) or int(value) > QUERY_PARAMETERS[name]:
            raise URLError(
                f"{name} is a whole number from 0 to {QUERY_PARAMETERS[name]}, not {value!r}"
            )
        query[name] = int(value)
    return URL(
        **fields,
        virtual_host=virtual_host,
        heartbeat=query.get("heartbeat"),
        frame_max=query.get("frame_max"),
        channel_max=query.get("channel_max"),
    )
