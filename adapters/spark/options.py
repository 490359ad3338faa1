"""The Spark adapter's options (``docs/spark.rst`` lists them): read and written as Spark
passes them (strings, any case), checked when the reader or writer is made
(:class:`OptionError`, naming the option). Nothing here needs Spark."""

from __future__ import annotations

import json
import ssl
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

import attrs

import amqp_sansio as amqp
from amqp_sansio.client.url import parse_url

from . import protocols

__all__ = ["OptionError", "ReadOptions", "WriteOptions", "offsets_option"]


class OptionError(ValueError):
    """An unknown, malformed or contradictory option: raised when the reader or writer is
    made, naming the option."""


# -- options ---------------------------------------------------------------------------------

_SECRET = ("password",)
#: The options as users write them (Spark hands them over in any case): both directions'.
_COMMON_OPTIONS = (
    "url",
    "host",
    "port",
    "username",
    "password",
    "address",
    "allowInsecureAuth",
    "sslCaFile",
    "sslVerify",
    "timeout",
    "idleTimeout",
    "containerId",
    "saslMechanisms",
    "protocol",
    "virtualHost",
)
_READ_OPTIONS = (
    "mode",
    "stagingLocation",
    "maxMessagesPerTrigger",
    "maxBytesPerTrigger",
    "credit",
    "partitions",
    "undecodable",
    "pollInterval",
    "maxReceiveSeconds",
    "maxMessages",
    "consume",
    "startingOffsets",
    "endingOffsets",
    "failOnDataLoss",
    "checkpointLocation",
)
_WRITE_OPTIONS = ("durable", "window", "checkpointLocation")
_PROPER = {n.lower(): n for n in (*_COMMON_OPTIONS, *_READ_OPTIONS, *_WRITE_OPTIONS)}


def _names(*names: str) -> frozenset[str]:
    return frozenset(n.lower() for n in names)


def _bool(name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise OptionError(f"option {name!r} must be true or false, not {value!r}")


def _int(name: str, value: str, *, minimum: int = 1) -> int:
    try:
        number = int(value)
    except ValueError:
        raise OptionError(f"option {name!r} must be an integer, not {value!r}") from None
    if number < minimum:
        raise OptionError(f"option {name!r} must be at least {minimum}, not {number}")
    return number


def _float(name: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise OptionError(f"option {name!r} must be a number, not {value!r}") from None
    if not number > 0:
        raise OptionError(f"option {name!r} must be above 0, not {value!r}")
    return number


T = TypeVar("T")


class _Options:
    """What both directions share: where to connect and how."""

    #: The option names (lower case: Spark's options are case-insensitive).
    KNOWN: ClassVar[frozenset[str]] = _names(*_COMMON_OPTIONS)

    def __init__(self, options: Mapping[str, str]) -> None:
        given = {str(k).lower(): str(v) for k, v in options.items() if k.lower() != "path"}
        if "path" in {k.lower() for k in options} and "address" not in given:
            given["address"] = str(next(v for k, v in options.items() if k.lower() == "path"))
        unknown = sorted(set(given) - set(self.KNOWN))
        if unknown:
            names = ", ".join(repr(n) for n in unknown)
            known = ", ".join(sorted(_PROPER[n] for n in self.KNOWN))
            raise OptionError(
                f"unknown option{'s' if len(unknown) > 1 else ''} {names} for format('amqp') "
                f"(known: {known})"
            )
        self._given = given
        url = given.get("url")
        host = given.get("host")
        if url and (host or "port" in given):
            raise OptionError("give either option 'url' or options 'host'/'port', not both")
        if not url and not host:
            raise OptionError("option 'url' (amqp://host:port/address) or 'host' is required")
        port = self._given_as("port", _int)
        self.url = url or f"amqp://{host}:{port or 5672}"
        try:
            self._parsed = parsed = parse_url(self.url)
        except ValueError as exc:
            raise OptionError(f"option 'url': {exc}") from None
        self.username = given.get("username")
        self.password = given.get("password")
        if (self.username is None) != (self.password is None) and self.password is not None:
            raise OptionError("option 'password' needs option 'username'")
        addresses = given.get("address") or parsed.address
        if not addresses:
            raise OptionError("option 'address' (or an address in the URL's path) is required")
        self.addresses = [a.strip() for a in addresses.split(",") if a.strip()]
        if not self.addresses:
            raise OptionError(f"option 'address' names no address: {addresses!r}")
        self.allow_insecure_auth = _bool("allowInsecureAuth", given.get("allowinsecureauth", "0"))
        self.ssl_cafile = given.get("sslcafile")
        self.ssl_verify = _bool("sslVerify", given.get("sslverify", "true"))
        if self.ssl_cafile is not None and not parsed.tls:
            raise OptionError("option 'sslCaFile' needs an amqps:// URL")
        self.timeout = _float("timeout", given.get("timeout", "60"))
        self.idle_timeout = self._given_as("idleTimeout", _float)
        self.container_id = given.get("containerid")
        mechanisms = given.get("saslmechanisms")
        self.sasl_mechanisms = (
            [m.strip().upper() for m in mechanisms.split(",") if m.strip()] if mechanisms else None
        )
        self.protocol = given.get("protocol", protocols.DEFAULT)
        try:
            row = protocols.check(self.protocol)
        except ValueError as exc:
            raise OptionError(str(exc)) from None
        for name in sorted(protocols.SPECIFIC & set(given) - row.options):
            have = " and ".join(f"{title}'s" for title in protocols.owners(name))
            raise OptionError(
                f"option {_PROPER[name]!r} is {have}, not {row.title}'s (option 'protocol')"
            )
        #: The read modes the protocol serves.
        self.modes = row.modes
        self.virtual_host = given.get("virtualhost", "/")

    def _given_as(self, name: str, convert: Callable[[str, str], T]) -> T | None:
        """Option ``name`` (as users write it) converted, or None when not given."""
        value = self._given.get(name.lower())
        return None if value is None else convert(name, value)

    def __repr__(self) -> str:
        shown = {k: ("***" if k in _SECRET else v) for k, v in sorted(self._given.items())}
        return f"<{type(self).__name__} {shown}>"

    def connect_options(self) -> dict[str, Any]:
        """Keyword arguments for an adapter's ``connect``."""
        options: dict[str, Any] = {
            "timeout": self.timeout,
            "allow_insecure_auth": self.allow_insecure_auth,
            "idle_timeout": self.idle_timeout,
        }
        if self.container_id is not None:
            options["container_id"] = self.container_id
        if self.sasl_mechanisms is not None:
            options["sasl_mechanisms"] = self.sasl_mechanisms
        if self._parsed.tls:
            context = amqp.security.tls.client_context(cafile=self.ssl_cafile)
            if not self.ssl_verify:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            options["ssl_context"] = context
        return options

    def connect(self, address: str) -> Any:
        """A blocking connection (:func:`amqp_sansio.adapters.sockets.connect`) for
        ``address``, with these options: what a Spark task reads or writes through."""
        from .. import sockets

        return sockets.connect(self.url_for(address), **self.connect_options())

    def vhost_url(self) -> str:
        """The URL of the protocols that name a virtual host in it (0-9-1, 0-10): this
        one's host, port and credentials, option ``virtualHost`` as its path (they name
        the queue in their commands, not in the URL)."""
        parsed = attrs.evolve(self._parsed, address=None)
        if self.username is not None:
            parsed = attrs.evolve(parsed, username=self.username)
        if self.password is not None:
            parsed = attrs.evolve(parsed, password=self.password)
        vhost = self.virtual_host
        path = "" if vhost == "/" else "/" + urllib.parse.quote(vhost, safe="")
        return parsed.unredacted() + path

    def vhost_connect_options(self) -> dict[str, Any]:
        """Keyword arguments for an adapter's ``connect`` with the protocols of
        :meth:`vhost_url`: :meth:`connect_options` without AMQP 1.0's own."""
        options = self.connect_options()
        for name in ("idle_timeout", "container_id", "sasl_mechanisms"):
            options.pop(name, None)
        return options

    #: The names these had when 0-9-1 alone used them.
    url091 = vhost_url
    connect_options091 = vhost_connect_options

    def url_for(self, address: str) -> str:
        """The URL with the credentials (if given as options) and ``address``."""
        parsed = attrs.evolve(self._parsed, address=address)
        if self.username is not None:
            parsed = attrs.evolve(parsed, username=self.username)
        if self.password is not None:
            parsed = attrs.evolve(parsed, password=self.password)
        return parsed.unredacted()


class ReadOptions(_Options):
    """The reader's options (``spark.read``/``spark.readStream``)."""

    KNOWN = _names(*_COMMON_OPTIONS, *_READ_OPTIONS)

    def __init__(self, options: Mapping[str, str], *, streaming: bool) -> None:
        super().__init__(options)
        given = self._given
        self.mode = given.get("mode", "queue").lower()
        if self.mode not in ("queue", "stream"):
            raise OptionError(f"option 'mode' must be 'queue' or 'stream', not {self.mode!r}")
        if self.mode not in self.modes:
            raise OptionError(
                f"option 'mode' {self.mode!r} is not available with protocol "
                f"{self.protocol!r} (it reads {', '.join(repr(m) for m in self.modes)})"
            )
        if self.mode == "stream":
            self._stream_mode(given, streaming=streaming)
        for name in ("startingoffsets", "endingoffsets", "failondataloss"):
            if name in given and self.mode == "queue":
                raise OptionError(
                    f"option {_PROPER[name]!r} applies to mode 'stream' (nodes with offsets); a "
                    "queue has none: messages are taken once and accepted when Spark commits"
                )
        self.max_messages_per_trigger = self._given_as("maxMessagesPerTrigger", _int)
        self.max_bytes_per_trigger = self._given_as("maxBytesPerTrigger", _int)
        self.credit = self._given_as("credit", _int) or self.max_messages_per_trigger or 1000
        self.partitions = _int("partitions", given.get("partitions", "1"))
        self.undecodable = given.get("undecodable", "reject").lower()
        if self.undecodable not in ("reject", "modify"):
            raise OptionError(
                f"option 'undecodable' must be 'reject' or 'modify', not {self.undecodable!r}"
            )
        self.poll_interval = _float("pollInterval", given.get("pollinterval", "0.1"))
        #: None: 5 s for a micro-batch with no read limit, no bound for one with a limit.
        self.max_receive_seconds = self._given_as("maxReceiveSeconds", _float)
        self.staging_location = given.get("staginglocation")
        if streaming and self.mode == "queue":
            if not self.staging_location:
                raise OptionError(
                    "option 'stagingLocation' is required for a streaming read: each "
                    "micro-batch is staged there before Spark plans it"
                )
            for name in ("maxmessages", "consume"):
                if name in given:
                    raise OptionError(f"option {_PROPER[name]!r} applies to a batch read only")
        elif not streaming:
            for name in ("maxmessagespertrigger", "maxbytespertrigger", "maxreceiveseconds"):
                if name in given:
                    raise OptionError(
                        f"option {_PROPER[name]!r} applies to a streaming read; a batch read "
                        "takes 'maxMessages'"
                    )
        self.max_messages = self._given_as("maxMessages", _int)
        self.consume = _bool("consume", given.get("consume", "false"))

    def _stream_mode(self, given: dict[str, str], *, streaming: bool) -> None:
        """Mode ``stream`` (offsets, read on executors): its options, and the queue mode's
        that do not apply (nothing is taken, staged, or settled)."""
        for name in (
            "staginglocation",
            "undecodable",
            "consume",
            "maxmessages",
            "maxbytespertrigger",
            "maxreceiveseconds",
        ):
            if name in given:
                raise OptionError(
                    f"option {_PROPER[name]!r} does not apply to mode 'stream' (offset ranges "
                    "are read from the node again on executors; nothing is staged or taken)"
                )
        default = "latest" if streaming else "earliest"
        self.starting_offsets = offsets_option(
            "startingOffsets", given.get("startingoffsets", default), self.addresses
        )
        if not streaming and self.starting_offsets == "latest":
            raise OptionError(
                "option 'startingOffsets' cannot be 'latest' for a batch read (it would read "
                "nothing); give 'earliest' or offsets as JSON"
            )
        if streaming and "endingoffsets" in given:
            raise OptionError(
                "option 'endingOffsets' applies to a batch read; a streaming read goes on"
            )
        self.ending_offsets = offsets_option(
            "endingOffsets", given.get("endingoffsets", "latest"), self.addresses
        )
        if self.ending_offsets == "earliest" or (
            isinstance(self.ending_offsets, dict) and EARLIEST in self.ending_offsets.values()
        ):
            raise OptionError("option 'endingOffsets' cannot be 'earliest' (-2)")
        self.fail_on_data_loss = _bool("failOnDataLoss", given.get("failondataloss", "true"))


#: In offsets given as JSON, Kafka's conventions: -2 for the earliest offset, -1 the latest.
EARLIEST, LATEST = -2, -1


def offsets_option(name: str, value: str, addresses: list[str]) -> str | dict[str, int]:
    """Option ``startingOffsets`` or ``endingOffsets``: ``earliest``, ``latest``, or JSON
    giving every address its offset (``{"orders": 42}``; -2 earliest, -1 latest)."""
    word = value.strip().lower()
    if word in ("earliest", "latest"):
        return word
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or not all(
        type(v) is int and v >= EARLIEST for v in parsed.values()
    ):
        raise OptionError(
            f"option {name!r} must be 'earliest', 'latest' or a JSON object of offsets by "
            f'address (e.g. {{"{addresses[0]}": 0}}; -2 earliest, -1 latest), not {value!r}'
        )
    unknown = sorted(set(parsed) - set(addresses))
    missing = [a for a in addresses if a not in parsed]
    if unknown or missing:
        raise OptionError(
            f"option {name!r} must give an offset for each address of option 'address' and "
            f"no other (missing: {missing or 'none'}; not read: {unknown or 'none'})"
        )
    return {str(k): int(v) for k, v in parsed.items()}


class WriteOptions(_Options):
    """The writer's options (``df.write``/``df.writeStream``)."""

    KNOWN = _names(*_COMMON_OPTIONS, *_WRITE_OPTIONS)

    def __init__(self, options: Mapping[str, str]) -> None:
        super().__init__(options)
        if len(self.addresses) != 1:
            raise OptionError("the writer sends to one address; option 'address' names several")
        self.address = self.addresses[0]
        self.durable = _bool("durable", self._given.get("durable", "true"))
        self.window = _int("window", self._given.get("window", "1000"))
