"""Shared access signature (SAS) tokens, as Azure Service Bus and Event Hubs use them in
claims-based security (the AMQP CBS working draft's ``put-token``; ``docs/cbs.rst``)::

    SharedAccessSignature sr=<url-encoded resource URI>&sig=<url-encoded base64 HMAC-SHA256>
        &se=<expiry, unix seconds>&skn=<key name>

(fields in any order). The signature is HMAC-SHA256, keyed with the key's text as UTF-8,
over ``"<url-encoded sr>\\n<se>"``. I/O-free and clock-free: the expiry is checked against
the ``now`` (seconds since the epoch) the caller passes in.

:func:`make_sas_token` makes one (for tests, and the client's token provider);
:func:`parse_sas_token` reads one, raising :class:`SasTokenError` for anything malformed
(never another exception: fuzz-friendly); :meth:`SasToken.signed_by` checks its signature
in constant time; :func:`covers` says whether a token's resource covers an audience.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import urllib.parse

import attrs

from ..errors import AMQPError

__all__ = [
    "MAX_TOKEN_LENGTH",
    "SAS_PREFIX",
    "SasToken",
    "SasTokenError",
    "covers",
    "make_sas_token",
    "parse_sas_token",
    "path_of",
]

#: What every SAS token begins with.
SAS_PREFIX = "SharedAccessSignature "
#: The longest token :func:`parse_sas_token` reads (longer: :class:`SasTokenError`).
MAX_TOKEN_LENGTH = 4096
_FIELDS = ("sr", "sig", "se", "skn")
#: The most digits of an expiry (unix seconds: 12 digits reach the year 33658).
_SE_DIGITS = 12


class SasTokenError(AMQPError):
    """A SAS token that is not one (a missing or repeated field, a non-numeric expiry, too
    long, ...). Its description never holds the token's signature."""

    condition = "amqp:unauthorized-access"


@attrs.frozen(kw_only=True)
class SasToken:
    """A parsed SAS token: ``resource`` (``sr``, decoded), the ``sr`` field as it stood in
    the token (what was signed), ``expiry`` (``se``), ``key_name`` (``skn``) and the
    ``signature`` (``sig``, decoded; never in the repr)."""

    resource: str
    signed_resource: str = attrs.field(repr=False)
    signature: str = attrs.field(repr=False)
    expiry: int
    key_name: str

    def signed_by(self, key: str) -> bool:
        """Whether the signature is the HMAC-SHA256 of this token's resource and expiry
        under ``key`` (compared in constant time)."""
        expected = _signature(self.signed_resource, self.expiry, key)
        return hmac.compare_digest(expected.encode("ascii"), self.signature.encode("utf-8"))

    def expired(self, now: float) -> bool:
        """Whether the token has expired at ``now`` (seconds since the epoch): at ``se``."""
        return self.expiry <= now


def _signature(encoded_resource: str, expiry: int, key: str) -> str:
    text = f"{encoded_resource}\n{expiry}".encode()
    digest = hmac.new(key.encode("utf-8"), text, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def make_sas_token(uri: str, key_name: str, key: str, expiry: int) -> str:
    """A SAS token for ``uri`` (e.g. ``sb://host/queue``), signed with the key named
    ``key_name``, valid until ``expiry`` (unix seconds), as the Azure SDKs make one."""
    sr = urllib.parse.quote_plus(uri)
    fields = {"sr": sr, "sig": _signature(sr, int(expiry), key), "se": str(int(expiry))}
    fields["sig"] = urllib.parse.quote_plus(fields["sig"])
    fields["skn"] = urllib.parse.quote_plus(key_name)
    return SAS_PREFIX + "&".join(f"{k}={v}" for k, v in fields.items())


def parse_sas_token(text: object) -> SasToken:
    """The SAS token ``text`` holds; :class:`SasTokenError` if it is not a string of at most
    :data:`MAX_TOKEN_LENGTH` characters with ``sr``, ``sig``, ``se`` (whole seconds) and
    ``skn``, each once."""
    if not isinstance(text, str):
        raise SasTokenError(f"a SAS token is a string, not {type(text).__name__}")
    if len(text) > MAX_TOKEN_LENGTH:
        raise SasTokenError(f"a SAS token of {len(text)} characters (at most {MAX_TOKEN_LENGTH})")
    if not text.startswith(SAS_PREFIX):
        raise SasTokenError(f"a SAS token begins with {SAS_PREFIX.strip()!r}")
    raw: dict[str, str] = {}
    for part in text[len(SAS_PREFIX) :].split("&"):
        name, equals, value = part.partition("=")
        if not equals or name not in _FIELDS:  # (its text is not shown: a signature?)
            raise SasTokenError("a SAS token's fields are sr=, sig=, se= and skn=, '&' apart")
        if name in raw:
            raise SasTokenError(f"the SAS token gives {name!r} twice")
        raw[name] = value
    missing = [name for name in _FIELDS if name not in raw]
    if missing:
        raise SasTokenError(f"the SAS token has no {', '.join(missing)}")
    se = raw["se"]
    if not (se.isascii() and se.isdigit()) or len(se) > _SE_DIGITS:
        raise SasTokenError("the SAS token's se is not a time in whole seconds")
    resource = urllib.parse.unquote_plus(raw["sr"])
    key_name = urllib.parse.unquote_plus(raw["skn"])
    if not resource or not key_name:
        raise SasTokenError("the SAS token's sr and skn are not empty")
    return SasToken(
        resource=resource,
        signed_resource=raw["sr"],
        signature=urllib.parse.unquote_plus(raw["sig"]),
        expiry=int(se),
        key_name=key_name,
    )


def _plain(uri: str) -> str:
    """A resource URI or audience without its scheme (``sb``, ``amqp``, ``amqps``,
    ``https``, ...), the host lower-cased, without a trailing ``/``."""
    _, sep, rest = uri.partition("://")
    if not sep:
        rest = uri
    host, slash, path = rest.partition("/")
    return (host.lower() + slash + path).rstrip("/")


def covers(resource: str, audience: str) -> bool:
    """Whether a token for ``resource`` (a URI) is good for ``audience``: the same host
    and path, or a path below the resource's (the scheme does not count: ``sb://h/q``
    covers ``amqp://h/q/x``)."""
    scope, wanted = _plain(resource), _plain(audience)
    return bool(scope) and (wanted == scope or wanted.startswith(scope + "/"))


def path_of(uri: str) -> str:
    """The path of a resource URI or audience, without its host and slashes at either end
    (``sb://host/orders/`` -> ``orders``): the broker's address it names."""
    return _plain(uri).partition("/")[2]
