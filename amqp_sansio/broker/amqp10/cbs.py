"""The broker's claims-based security node, ``$cbs``: the ``put-token`` request of the
OASIS AMQP Claims-Based Security Version 1.0 working draft ("CBS draft" below; not part of
the 1.0 standard), as Azure Service Bus and Event Hubs answer it, and the rights the tokens
put give the connection (``docs/cbs.rst``).

A client attaches a sender to ``$cbs`` and a receiver from it (or names another reply node,
:mod:`.requests`), and sends a request whose application-properties are ``operation``
(``put-token``), ``type`` (:data:`SAS_TOKEN_TYPE` or :data:`JWT_TOKEN_TYPE`), ``name`` (the
audience: the URI of what the token is for, ``sb://host/queue``) and ``expiration``
(optional, ignored: the token says when it expires); its body, an amqp-value, is the token
(a string; binary, UTF-8, is taken too).
The response's application-properties are ``status-code`` (202 the token is taken, 400 a
request that is not a put-token, 401 a token refused, 501 another operation) and
``status-description``; it has no body.

A SAS token (:mod:`amqp_sansio.security.sas`; one that begins ``SharedAccessSignature``
even when its ``type`` says ``jwt``: Azure's ``_pyamqp`` puts SAS tokens so, and Service
Bus takes them) is checked against the users file's
``sas-keys`` (:class:`~amqp_sansio.broker.SasKey`): a known key name, a signature that
verifies, not expired at the broker's ``wall`` clock, a resource that covers the audience
and lies within the key's entity. Once taken, it gives the connection the key's rights on
the audience's address and those below it (:meth:`Cbs.authorize`), until it expires
(:meth:`Cbs.expire`: the links it allowed are detached, ``amqp:unauthorized-access``,
unless another token of the connection allows them); a token put again for the same
audience renews it. A JWT (HS256, :mod:`amqp_sansio.security.jwt`) is checked against the
users file's ``jwt`` key: its ``aud`` covers the audience, its ``roles`` claim lists its
rights (without a key, JWTs are refused, 401). An open broker (no users)
takes any token (202), and logs once per connection that it checked none. The description
of a refusal never holds the token, its signature or a key.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import weakref
from typing import TYPE_CHECKING, Any

import attrs

from ...definitions.amqp10.message import Message
from ...definitions.amqp10.messaging import AmqpValue
from ...engine.amqp10.link import Link
from ...engine.amqp10.states import LinkState
from ...security.jwt import JwtError, verify_jwt
from ...security.sas import SAS_PREFIX, SasTokenError, covers, parse_sas_token
from .._nodes import error
from .._record import printable
from .._users import SAS_RIGHTS, Users
from .requests import RequestNode, Status, response
from .servicebus import entity_path

if TYPE_CHECKING:
    from .interface import Broker10, Connection10

__all__ = [
    "CBS_ADDRESS",
    "JWT_TOKEN_TYPE",
    "MAX_AUDIENCE_LENGTH",
    "MAX_TOKENS_PER_CONNECTION",
    "SAS_TOKEN_TYPE",
    "Cbs",
    "check_put_token",
]

#: The address of the claims-based security node (the CBS draft's well-known address).
CBS_ADDRESS = "$cbs"
#: The token types of a put-token: a SAS token (Azure's name for it), a JSON web token.
SAS_TOKEN_TYPE = "servicebus.windows.net:sastoken"
JWT_TOKEN_TYPE = "jwt"
#: The longest audience (``name``) a put-token may give (longer: 400).
MAX_AUDIENCE_LENGTH = 1024
#: The most audiences a connection holds tokens for at once (another: 400).
MAX_TOKENS_PER_CONNECTION = 256
#: The expiry heap is compacted past this size when most of it is stale.
_COMPACT_MIN = 1024
_KEYS = ("status-code", "status-description")
_ATTACHED = LinkState.ATTACHED
log = logging.getLogger("amqp_sansio.broker")


@attrs.frozen
class Claim:
    """What a token taken by :func:`check_put_token` gives: the ``rights`` (of
    :data:`~amqp_sansio.broker.SAS_RIGHTS`) on the address ``path`` and those below it,
    until ``expires`` (wall clock, seconds since the epoch; None: never, an open broker's)."""

    path: str
    rights: frozenset[str]
    expires: float | None


def _unauthorized(description: str) -> Status:
    return Status(401, description)


def _within(address: str, path: str) -> bool:
    """Whether ``address`` is ``path`` or below it (every address is below ``""``)."""
    return not path or address == path or address.startswith(path + "/")


def check_put_token(broker: Broker10, request: Message) -> Claim:
    """The claim of a ``put-token`` ``request`` (CBS draft), checked as the module's
    docstring says at the broker's ``wall`` clock; :class:`.requests.Status` (400, 401,
    501) if it is refused. Never raises anything else for what the request holds."""
    audience, kind, token = _put_token(request)
    users = broker.config.users
    if users is None:  # an open broker: taken, unchecked
        return Claim(entity_path(audience), frozenset(), None)
    if kind == JWT_TOKEN_TYPE and not token.startswith(SAS_PREFIX):
        return _check_jwt(users, audience, token, broker.wall)
    if kind not in (SAS_TOKEN_TYPE, JWT_TOKEN_TYPE):
        shown = printable(kind[:64])
        raise Status(400, f"no token type {shown!r} (known: {SAS_TOKEN_TYPE}, {JWT_TOKEN_TYPE})")
    return _check_sas(users, audience, token, broker.wall)


def _check_sas(users: Users, audience: str, token: str, wall: float) -> Claim:
    try:
        sas = parse_sas_token(token)
    except SasTokenError as exc:
        raise _unauthorized(f"not a SAS token: {exc.description}") from None
    key = users.sas_keys.get(sas.key_name)
    if key is None or not sas.signed_by(key.key):
        raise _unauthorized("the SAS token's key is unknown, or its signature does not verify")
    if sas.expired(wall):
        raise _unauthorized("the SAS token has expired")
    if not covers(sas.resource, audience):
        shown = printable(audience[:256])
        raise _unauthorized(f"the SAS token's resource does not cover the audience {shown!r}")
    path = entity_path(audience)
    if key.entity is not None and not _within(path, key.entity):
        raise _unauthorized("the SAS token's key is for another entity")
    return Claim(path, key.rights, sas.expiry)


def _check_jwt(users: Users, audience: str, token: str, wall: float) -> Claim:
    """A JWT (HS256, the users file's ``jwt`` key): its ``aud`` (a string or a list of
    them) covers the audience, its ``roles`` claim lists its rights."""
    if users.jwt_key is None:
        raise _unauthorized("JWTs are not accepted by this broker (no 'jwt' key checks them)")
    try:
        claims = verify_jwt(token, users.jwt_key, now=wall)
    except JwtError as exc:
        raise _unauthorized(exc.description) from None
    aud = claims.get("aud")
    scopes = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if not any(isinstance(scope, str) and covers(scope, audience) for scope in scopes):
        shown = printable(audience[:256])
        raise _unauthorized(f"the JWT's 'aud' does not cover the audience {shown!r}")
    roles = claims.get("roles")
    rights = frozenset(r for r in roles if r in SAS_RIGHTS) if isinstance(roles, list) else ()
    if not rights:
        raise _unauthorized(f"the JWT's 'roles' give none of {', '.join(SAS_RIGHTS)}")
    return Claim(entity_path(audience), frozenset(rights), float(claims["exp"]))


def _put_token(request: Message) -> tuple[str, str, str]:
    """The audience, token type and token of a put-token request (400 or 501 if it is
    not one)."""
    props = request.application_properties
    if not isinstance(props, dict):
        raise Status(400, "a put-token request has application-properties (operation, ...)")
    operation = props.get("operation")
    if operation != "put-token":
        if not isinstance(operation, str):
            raise Status(400, "no 'operation' string in the request's application-properties")
        raise Status(501, f"operation {printable(operation[:64])!r} is not implemented")
    audience, kind = props.get("name"), props.get("type")
    if not isinstance(audience, str) or not audience:
        raise Status(400, "a put-token names its audience ('name', a string)")
    if len(audience) > MAX_AUDIENCE_LENGTH:
        raise Status(400, f"an audience ('name') of at most {MAX_AUDIENCE_LENGTH} characters")
    if not isinstance(kind, str):
        raise Status(400, "a put-token gives its token's 'type', a string")
    body = request.body
    token = body.value if isinstance(body, AmqpValue) else None
    if isinstance(token, bytes):  # (uamqp-era SDKs put the token as binary)
        try:
            token = token.decode("utf-8")
        except UnicodeDecodeError:
            token = None
    if not isinstance(token, str):
        raise Status(400, "a put-token's body is the token, an amqp-value holding a string")
    return audience, kind, token


@attrs.define(eq=False)
class _Grant:
    """A token a connection put: its claim, and the links it allowed (each with its
    address and the right it took)."""

    claim: Claim
    links: dict[Link, tuple[str, str]] = attrs.field(factory=dict)


def _right(address: str, send: bool) -> str:
    if address.startswith("$management") or address.endswith("/$management"):
        return "Manage"
    return "Send" if send else "Listen"


class Cbs(RequestNode):
    """The ``$cbs`` node: its links and the routing of its responses are
    :class:`.requests.RequestNode`'s; its answer is :func:`check_put_token`'s, and each
    token taken is kept for its connection (:meth:`authorize`) until it expires
    (:meth:`next_expiry`, :meth:`expire`, on the broker's wall clock)."""

    address = CBS_ADDRESS
    open_to_all = True  # (a token is how a client gets rights)

    def __init__(self, broker: Broker10) -> None:
        super().__init__(broker)
        #: The tokens each connection put, by their audience's address.
        self.grants: dict[Connection10, dict[str, _Grant]] = {}
        self._expiries: list[tuple[float, int, Connection10, str]] = []
        self._ties = itertools.count()
        #: The connections of an open broker told (in the log) that their token went
        #: unchecked.
        self._told: weakref.WeakSet[Any] = weakref.WeakSet()

    def answer(self, conn: Connection10, request: Message, reply_to: str) -> Message:
        try:
            claim = check_put_token(self.broker, request)
        except Status as status:
            return response(request, reply_to, (status.code, status.description), _KEYS)
        if claim.expires is None:
            if conn not in self._told:
                self._told.add(conn)
                log.warning(
                    "put-token from %s taken UNCHECKED: this broker is OPEN (no --users), "
                    "it checks no token (said once per connection)",
                    conn.address or "a client",
                )
        elif not self._keep(conn, claim):
            why = f"at most {MAX_TOKENS_PER_CONNECTION} audiences' tokens per connection"
            return response(request, reply_to, (400, why), _KEYS)
        return response(request, reply_to, (202, "Accepted"), _KEYS)

    def _keep(self, conn: Connection10, claim: Claim) -> bool:
        """Keep ``claim`` for ``conn`` (False: it has :data:`MAX_TOKENS_PER_CONNECTION`
        others already)."""
        for gone in [c for c in self.grants if c.lost]:
            del self.grants[gone]
        grants = self.grants.setdefault(conn, {})
        grant = grants.get(claim.path)
        if grant is None:
            if len(grants) >= MAX_TOKENS_PER_CONNECTION:
                return False
            grants[claim.path] = grant = _Grant(claim)
        elif grant.claim.expires == claim.expires:
            return True  # (the same time: its entry in the heap stands)
        grant.claim = claim  # renewed: the links it allowed stay
        assert claim.expires is not None
        heap = self._expiries
        heapq.heappush(heap, (claim.expires, next(self._ties), conn, claim.path))
        if len(heap) > _COMPACT_MIN and len(heap) > 4 * sum(map(len, self.grants.values())):
            self._expiries = [entry for entry in heap if self._current(entry)]
            heapq.heapify(self._expiries)  # (renewals leave stale entries behind)
        return True

    def _covering(self, conn: Connection10, address: str, right: str) -> _Grant | None:
        wall = self.broker.wall
        for grant in self.grants.get(conn, {}).values():
            claim = grant.claim
            if (
                right in claim.rights
                and (claim.expires is None or claim.expires > wall)
                and _within(address, claim.path)
            ):
                return grant
        return None

    def authorize(self, conn: Connection10, link: Link, address: str, *, send: bool) -> bool:
        """Whether a token ``conn`` put allows ``link`` to send to (``send``) or receive
        from ``address`` (a URI's path, if it is one): ``Send``, ``Listen`` (``Manage``
        for ``$management``) on an audience covering it. If so, the link is kept with the
        token, to be detached when it expires."""
        if "://" in address:  # (Azure's SDKs attach to amqps://host/queue: its path counts)
            address = entity_path(address)
        right = _right(address, send)
        grant = self._covering(conn, address, right)
        if grant is None:
            return False
        links = grant.links
        if len(links) >= 64:  # (forget those gone, now and then)
            for gone in [k for k in links if k.state is not _ATTACHED]:
                del links[gone]
        links[link] = (address, right)
        return True

    def next_expiry(self) -> float | None:
        """When (wall clock) the next token a connection put expires, or None."""
        heap = self._expiries
        while heap and not self._current(heap[0]):
            heapq.heappop(heap)  # renewed, or its connection gone
        return heap[0][0] if heap else None

    def _current(self, entry: tuple[float, int, Connection10, str]) -> bool:
        when, _, conn, path = entry
        grant = self.grants.get(conn, {}).get(path)
        return grant is not None and grant.claim.expires == when and not conn.lost

    def expire(self, wall: float) -> None:
        """The tokens expired at ``wall`` go; each link one allowed is detached with
        ``amqp:unauthorized-access`` unless another token of its connection allows it."""
        heap = self._expiries
        while heap and heap[0][0] <= wall:
            entry = heapq.heappop(heap)
            if not self._current(entry):
                continue
            _, _, conn, path = entry
            grant = self.grants[conn].pop(path)
            for link, (address, right) in grant.links.items():
                if link.state is not _ATTACHED:
                    continue
                other = self._covering(conn, address, right)
                if other is not None:
                    other.links[link] = (address, right)
                else:
                    shown = printable(address[:256])
                    why = f"the token that allowed {right} on {shown!r} expired"
                    conn.revoke(link, error("amqp:unauthorized-access", why))
