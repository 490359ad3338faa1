"""Claims-based security, the client's side: the tokens a connection puts to ``$cbs``
before its links attach, and puts again before they expire (the ``put-token`` request of
the OASIS AMQP Claims-Based Security 1.0 working draft, "CBS draft" below, as Azure Service
Bus answers it; the broker's side is :mod:`amqp_sansio.broker.amqp10.cbs`; see
:doc:`cbs`, "The client side").

A :class:`TokenProvider` makes a :class:`Token` for an audience at a wall-clock time
(:class:`SasTokenProvider` signs SAS tokens with a key, :class:`CallableTokenProvider` asks
a function). :class:`Tokens` is what a :class:`~.core.Core` given one
(``connect(url, token_provider=...)``) keeps: the ``$cbs`` sender and receiver (made once
per connection), the request of each audience, and when each token is to be put again.

I/O-free and clock-free: the core's ``now`` (the adapter's clock) comes in, with the
offset from it to the wall clock measured once by the connect recipe; the renewals are
deadlines of the core (:meth:`Tokens.next_deadline`, :meth:`Tokens.handle_timer`), so the
adapters' timer loops drive them like heartbeats.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections import deque
from collections.abc import Callable
from typing import Protocol

import attrs

import amqp_sansio as a
from amqp_sansio.codec.amqp10 import Timestamp
from amqp_sansio.security.sas import make_sas_token

from ..ops import ClientError, LinkRefusedError, Op
from ..url import AMQPURL, PORTS_10
from .links import ReceiverCore, SenderCore

__all__ = [
    "CBS_ADDRESS",
    "JWT_TOKEN_TYPE",
    "RENEW_FRACTION",
    "RENEW_MARGIN",
    "SAS_TOKEN_TYPE",
    "CallableTokenProvider",
    "SasTokenProvider",
    "Token",
    "TokenOwner",
    "TokenProvider",
    "TokenRefusedError",
    "Tokens",
    "default_audience_base",
    "renewal_time",
]

#: The claims-based security node's address (CBS draft).
CBS_ADDRESS = "$cbs"
#: The token types a put-token names: a SAS token (Azure's name for it), a JSON web token.
SAS_TOKEN_TYPE = "servicebus.windows.net:sastoken"
JWT_TOKEN_TYPE = "jwt"
#: A token is put again at this fraction of its life ...
RENEW_FRACTION = 0.8
#: ... and at the latest this many seconds before it expires (but never before half its
#: life: a token of a few seconds is put again at half of it).
RENEW_MARGIN = 30.0
#: The address of the connection's receiver from ``$cbs`` (its target): the requests'
#: ``reply-to``.
REPLY_ADDRESS = "cbs-replies"
_TAKEN = (200, 202)

log = logging.getLogger("amqp_sansio.client.tokens")


def _text(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"a token's {attribute.name} is a non-empty string")


def _finite(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not math.isfinite(value):
        raise ValueError("a token's expiry is a finite time (seconds since the epoch)")


@attrs.frozen(kw_only=True)
class Token:
    """A token to put: its ``text`` (never in the repr), its ``type``
    (:data:`SAS_TOKEN_TYPE` or :data:`JWT_TOKEN_TYPE`) and when it ``expires`` (wall clock,
    seconds since the epoch)."""

    text: str = attrs.field(repr=False, validator=_text)
    type: str = attrs.field(validator=_text)
    expires: float = attrs.field(converter=float, validator=_finite)


class TokenProvider(Protocol):
    """What ``connect(url, token_provider=...)`` takes: :meth:`get_token` makes a token for
    an audience (the URI of the address a link attaches to), valid at ``now`` (wall clock,
    seconds since the epoch). ``audience_base`` is what the address is appended to
    (``sb://myns.servicebus.windows.net``, as Azure wants); None: the connection URL's
    ``<scheme>://<host>[:port]`` (:func:`default_audience_base`)."""

    audience_base: str | None

    def get_token(self, audience: str, now: float) -> Token: ...


class SasTokenProvider:
    """Signs a SAS token (:func:`amqp_sansio.security.sas.make_sas_token`) for each
    audience with the key ``key`` named ``key_name``, valid for ``lifetime`` seconds from
    ``now``. The key is never in the repr."""

    def __init__(
        self,
        key_name: str,
        key: str,
        lifetime: float = 3600.0,
        *,
        audience_base: str | None = None,
    ) -> None:
        if not key_name or not key:
            raise ValueError("a SAS key has a name and a key")
        if not lifetime >= 1:
            raise ValueError("a SAS token's lifetime is at least 1 s (SAS expiries are seconds)")
        self.key_name = key_name
        self._key = key
        self.lifetime = float(lifetime)
        self.audience_base = audience_base

    def __repr__(self) -> str:
        return f"SasTokenProvider({self.key_name!r}, lifetime={self.lifetime!r})"

    def get_token(self, audience: str, now: float) -> Token:
        expiry = int(now + self.lifetime)
        text = make_sas_token(audience, self.key_name, self._key, expiry)
        return Token(text=text, type=SAS_TOKEN_TYPE, expires=expiry)


class CallableTokenProvider:
    """A provider that asks ``get_token(audience, now)`` for each token (a JWT from an
    identity service, a SAS token made elsewhere)."""

    def __init__(
        self, get_token: Callable[[str, float], Token], *, audience_base: str | None = None
    ) -> None:
        self._get_token = get_token
        self.audience_base = audience_base

    def __repr__(self) -> str:
        return f"CallableTokenProvider({self._get_token!r})"

    def get_token(self, audience: str, now: float) -> Token:
        token = self._get_token(audience, now)
        if not isinstance(token, Token):
            raise TypeError(f"a token provider returns a Token, not {type(token).__name__}")
        return token


class TokenRefusedError(LinkRefusedError):
    """``$cbs`` refused the token of ``audience``: a put-token answered with a
    ``status_code`` other than 200 or 202 (``status_description`` says why). Its ``error``
    is ``amqp:unauthorized-access`` with the status; raised where the link would attach."""

    def __init__(self, audience: str, status_code: int, status_description: str) -> None:
        self.audience = audience
        self.status_code = status_code
        self.status_description = status_description
        error = a.Error(
            condition="amqp:unauthorized-access",
            description=f"{status_code} {status_description}",
        )
        super().__init__(f"the token for {audience!r} was refused", error)


def default_audience_base(url: AMQPURL) -> str:
    """``<scheme>://<host>[:port]`` of ``url`` (the port unless it is the scheme's default):
    the audience of address ``X`` is then ``<scheme>://<host>[:port]/X``."""
    host = f"[{url.host}]" if ":" in url.host else url.host
    if url.port != PORTS_10.get(url.scheme):
        host = f"{host}:{url.port}"
    return f"{url.scheme}://{host}"


def renewal_time(issued: float, expires: float) -> float:
    """When a token good from ``issued`` to ``expires`` is put again: at
    :data:`RENEW_FRACTION` of its life, or :data:`RENEW_MARGIN` seconds before it expires
    if that is sooner, but never before half of its life."""
    life = max(0.0, expires - issued)
    return max(issued + life / 2, min(issued + life * RENEW_FRACTION, expires - RENEW_MARGIN))


class TokenOwner(Protocol):
    """What :class:`Tokens` needs of its core (a :class:`~.core.Core` is one)."""

    @property
    def lost(self) -> bool: ...

    def check(self) -> None: ...

    def changed(self) -> None: ...

    def sender(
        self, address: str | None, *, name: str | None = None, settled: bool = False
    ) -> SenderCore: ...

    def receiver(
        self,
        address: str | None,
        *,
        name: str | None = None,
        auto_accept: bool = False,
        target: str | None = None,
    ) -> ReceiverCore: ...


@attrs.define(eq=False)
class _Grant:
    """One audience's token: ``put`` is done once the first put was answered; ``expires``
    (wall) and ``renew_at`` (the core's clock) once one was taken."""

    put: Op[None] = attrs.field(factory=Op)
    expires: float | None = None
    renew_at: float | None = None
    waiting: bool = False


class Tokens:
    """A connection's tokens (see the module's docstring). ``wall_offset`` is the wall
    clock less the core's clock (the adapter's), so that ``now + wall_offset`` is the time
    a token is made for."""

    def __init__(self, owner: TokenOwner, provider: TokenProvider, base: str, wall_offset: float):
        self.owner = owner
        self.provider = provider
        self.base = (provider.audience_base or base).rstrip("/")
        self.wall_offset = wall_offset
        self._grants: dict[str, _Grant] = {}
        #: Each request sent, by its message-id: the audience, the token's expiry and
        #: when (wall) it was made.
        self._requests: dict[str, tuple[str, float, float]] = {}
        self._queue: deque[tuple[str, Token, float]] = deque()
        self._ids = itertools.count(1)
        self._sender: SenderCore | None = None
        self._receiver: ReceiverCore | None = None
        #: The last renewal that failed: refused (a :class:`TokenRefusedError`), or the
        #: provider raised (a :class:`~amqp_sansio.client.ops.ClientError` whose cause it
        #: is). The links the broker then detaches fail with its error.
        self.failure: ClientError | None = None
        #: How many put-token requests were sent.
        self.puts = 0

    @property
    def audiences(self) -> set[str]:
        """The audiences whose token ``$cbs`` took."""
        return {audience for audience, grant in self._grants.items() if grant.expires}

    def audience(self, address: str) -> str:
        """The audience of a link to ``address``: ``<base>/<address>``."""
        return f"{self.base}/{address.lstrip('/')}"

    @staticmethod
    def wanted(address: str | None) -> bool:
        """Whether a link to ``address`` needs a token (not ``$cbs`` itself)."""
        return bool(address) and address != CBS_ADDRESS

    def put(self, address: str, wall: float) -> Op[None]:
        """The put of ``address``'s token: done (or failed with
        :class:`TokenRefusedError`) once ``$cbs`` answered; a token already taken and not
        expired at ``wall`` (the wall clock) is not put again."""
        audience = self.audience(address)
        grant = self._grants.get(audience)
        if grant is not None:
            failed = grant.put.done() and grant.expires is None
            if not failed and (grant.expires is None or grant.expires > wall):
                return grant.put
        grant = self._grants[audience] = _Grant()
        self._request(audience, wall)
        return grant.put

    def _request(self, audience: str, wall: float) -> None:
        self._grants[audience].waiting = True
        self._queue.append((audience, self.provider.get_token(audience, wall), wall))
        self._ensure_links()
        self.flush()

    def _ensure_links(self) -> None:
        if self._sender is None:
            self._receiver = self.owner.receiver(
                CBS_ADDRESS, name="cbs-receiver", auto_accept=True, target=REPLY_ADDRESS
            )
            self._sender = self.owner.sender(CBS_ADDRESS, name="cbs-sender", settled=True)

    def flush(self) -> None:
        """Send the requests waiting, as the ``$cbs`` sender's credit allows, and read the
        responses that came (called after each of the core's batches of events)."""
        if self._sender is None or self._receiver is None or self.owner.lost:
            return
        try:
            self._take_responses()
            while self._queue and self._sender.send_ready():
                self._send(*self._queue.popleft())
        except ClientError as exc:  # the $cbs links (or the connection) went
            self._fail_all(exc)

    def _send(self, audience: str, token: Token, issued: float) -> None:
        assert self._sender is not None
        message_id = f"put-token-{next(self._ids)}"
        self._requests[message_id] = (audience, token.expires, issued)
        message = a.Message(
            properties=a.Properties(message_id=message_id, reply_to=REPLY_ADDRESS),
            application_properties={
                "operation": "put-token",
                "type": token.type,
                "name": audience,
                "expiration": Timestamp(int(token.expires * 1000)),
            },
            body=a.AmqpValue(token.text),
        )
        self._sender.send(message, settled=True)
        self.puts += 1

    def _take_responses(self) -> None:
        receiver = self._receiver
        assert receiver is not None
        if not receiver.queue:
            receiver.check()
            return
        for delivery in receiver.take_many(len(receiver.queue)):
            message = delivery.message
            props = message.application_properties
            correlation = None if message.properties is None else message.properties.correlation_id
            request = self._requests.pop(str(correlation), None)
            if request is None:
                continue  # (not ours, or from before a loss)
            if not isinstance(props, dict):
                props = {}
            code, why = props.get("status-code"), props.get("status-description")
            self._answered(*request, code, str(why or "no status-description"))

    def _answered(
        self, audience: str, expires: float, issued: float, code: object, why: str
    ) -> None:
        grant = self._grants.get(audience)
        if grant is None:
            return
        grant.waiting = False
        if isinstance(code, int) and code in _TAKEN:
            grant.expires = expires
            grant.renew_at = renewal_time(issued, expires) - self.wall_offset
            grant.put.set(None)
            return
        status = code if isinstance(code, int) else 0
        error = TokenRefusedError(audience, status, why)
        if grant.put.done():  # a renewal
            self.failure = error
            log.warning("the renewal of the token for %r failed: %s", audience, error)
        else:
            grant.put.fail(error)
            del self._grants[audience]

    def _fail_all(self, error: ClientError) -> None:
        for audience, grant in list(self._grants.items()):
            grant.waiting = False
            if not grant.put.done():
                grant.put.fail(error)
                del self._grants[audience]
        self._queue.clear()

    def next_deadline(self) -> float | None:
        """When (the core's clock) the next token is to be put again, or None."""
        times = [g.renew_at for g in self._grants.values() if g.renew_at is not None]
        return min(times) if times else None

    def handle_timer(self, now: float) -> None:
        """Put again each token whose renewal time has come."""
        for audience, grant in self._grants.items():
            if grant.renew_at is not None and grant.renew_at <= now and not grant.waiting:
                grant.renew_at = None
                try:
                    self._request(audience, now + self.wall_offset)
                except Exception as exc:  # (the provider's: the driver's loop goes on)
                    grant.waiting = False
                    error = ClientError(f"the token provider failed for {audience!r}: {exc}")
                    error.__cause__ = exc
                    self.failure = error
                    log.warning("the renewal of the token for %r failed: %s", audience, error)

    def connection_lost(self) -> None:
        """The connection was lost: every token is to be put afresh on the next one
        (:meth:`restarted`); the puts under way wait for it."""
        self._requests.clear()
        self._queue.clear()
        for grant in self._grants.values():
            grant.waiting, grant.renew_at = False, None

    def restarted(self, wall: float) -> None:
        """A new connection (a reconnection): the token of every audience is put again,
        fresh (``wall``: the wall clock); :meth:`pending` until ``$cbs`` answered."""
        for audience in list(self._grants):
            self._request(audience, wall)

    def pending(self) -> bool:
        """Some put waits for its answer."""
        return any(grant.waiting for grant in self._grants.values())

    def owns(self, link: object) -> bool:
        """``link`` (a link's core) is one of the ``$cbs`` links."""
        return link is self._sender or link is self._receiver
