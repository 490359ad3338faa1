"""Choosing mechanisms, for both protocols and both roles: the server's offer and factory
(:class:`ServerAuthenticator`), the AMQP 1.0 client's pick from the server's list
(:func:`select_client_mechanism`), and the AMQP 0-9-1 client's (:func:`client_mechanisms`,
:func:`first_offered`: its own names in its own order, the first the server offers)."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Collection, Iterable, Sequence

from .amqplain import AMQPlainClient, AMQPlainServer
from .anonymous import AnonymousClient, AnonymousServer
from .base import SASLClientMechanism, SASLServerMechanism
from .credentials import (
    _DEFAULT_MAX_ITERATIONS,
    _DEFAULT_MIN_ITERATIONS,
    SCRAM_MECHANISMS,
    Authorizer,
    ClientCredentials,
    PasswordStore,
    ScramStore,
    TokenStore,
    _check_iterations,
)
from .errors import SASLConfigurationError, SASLMechanismNotSupportedError, SASLNoMechanismError
from .external import ExternalClient, ExternalServer
from .plain import PlainClient, PlainServer
from .scram import ScramClient, ScramServer
from .xoauth2 import XOAuth2Client, XOAuth2Server

#: The mechanisms this package implements, strongest first. :func:`select_client_mechanism`
#: prefers them in this order, and :meth:`ServerAuthenticator.offered_mechanisms` lists
#: them in this order (AMQP 1.0 part 5.3.3.1: "in decreasing level of preference").
MECHANISM_PREFERENCE: tuple[str, ...] = (
    "SCRAM-SHA-512",
    "SCRAM-SHA-256",
    "EXTERNAL",
    "PLAIN",
    "XOAUTH2",
    "ANONYMOUS",
)
#: The mechanisms a :class:`ServerAuthenticator` offers only when its ``mechanisms`` name
#: them, after :data:`MECHANISM_PREFERENCE`'s: AMQPLAIN, which only AMQP 0-9-1 carries.
NAMED_ONLY: tuple[str, ...] = ("AMQPLAIN",)


# --------------------------------------------------------------------------------------
# Choosing mechanisms
# --------------------------------------------------------------------------------------


class ServerAuthenticator:
    """The server application's SASL configuration: which mechanisms to offer, and a fresh
    mechanism object for each exchange.

    ``store`` is any object implementing some of :class:`PasswordStore` (PLAIN),
    :class:`ScramStore` (SCRAM-SHA-512 and SCRAM-SHA-256), :class:`TokenStore` (XOAUTH2)
    and :class:`Authorizer` (authzid for PLAIN and EXTERNAL); a mechanism is offered only if
    the store implements its method. EXTERNAL is offered when the engine passes a
    ``peer_identity``; ANONYMOUS only if ``allow_anonymous``. A server that offers ANONYMOUS
    (:attr:`allows_anonymous`) also takes a client that sends the bare AMQP protocol header
    instead of SASL's (core spec 2.2, 5.1: the SASL layer is then optional), as the
    ``anonymous_identity``; one that does not refuses such a client. PLAIN and XOAUTH2 are offered
    only on an ``encrypted`` connection, unless ``allow_cleartext_secrets``. ``mechanisms``,
    if given, restricts the offer to those names.

    ``nonce_factory`` and ``fake_key`` are passed to :class:`ScramServer` (injectable for
    tests); ``fake_key`` is random by default, and stays the same for this object's life,
    so an unknown user gets the same fake salt every time.
    """

    def __init__(
        self,
        store: object = None,
        *,
        allow_anonymous: bool = False,
        allow_cleartext_secrets: bool = False,
        mechanisms: Collection[str] | None = None,
        anonymous_identity: str = "anonymous",
        xoauth2_scope: str | None = None,
        nonce_factory: Callable[[], str] | None = None,
        fake_key: bytes | None = None,
        fake_iterations: int = _DEFAULT_MIN_ITERATIONS,
    ) -> None:
        self._store = store
        self._allow_anonymous = allow_anonymous
        self._allow_cleartext = allow_cleartext_secrets
        self._restrict = None if mechanisms is None else frozenset(mechanisms)
        self._anonymous_identity = anonymous_identity
        self._xoauth2_scope = xoauth2_scope
        self._nonce_factory = nonce_factory
        self._fake_key = secrets.token_bytes(32) if fake_key is None else fake_key
        self._fake_iterations = _check_iterations(fake_iterations)

    def __repr__(self) -> str:
        return (
            f"<ServerAuthenticator store={type(self._store).__name__} "
            f"anonymous={self._allow_anonymous} cleartext={self._allow_cleartext}>"
        )

    @property
    def allows_anonymous(self) -> bool:
        """ANONYMOUS is offered, so a client without a SASL layer (the bare AMQP header) is
        taken too, as :attr:`anonymous_identity` (core spec 5.1)."""
        return self._allow_anonymous and (self._restrict is None or "ANONYMOUS" in self._restrict)

    @property
    def anonymous_identity(self) -> str:
        """The identity of anonymous clients: through ANONYMOUS, or without SASL."""
        return self._anonymous_identity

    def offered_mechanisms(
        self, *, peer_identity: str | None = None, encrypted: bool = False
    ) -> list[str]:
        """The sasl-server-mechanisms to send (AMQP 1.0 part 5.3.3.1), strongest first.

        Raises:
            SASLConfigurationError: nothing can be offered (the spec forbids an empty list).
        """
        store = self._store
        cleartext = encrypted or self._allow_cleartext
        available = {
            "SCRAM-SHA-512": isinstance(store, ScramStore),
            "SCRAM-SHA-256": isinstance(store, ScramStore),
            "EXTERNAL": bool(peer_identity),
            "PLAIN": cleartext and isinstance(store, PasswordStore),
            "XOAUTH2": cleartext and isinstance(store, TokenStore),
            "ANONYMOUS": self._allow_anonymous,
        }
        available["AMQPLAIN"] = available["PLAIN"]
        offered = [
            name
            for name in MECHANISM_PREFERENCE
            if available[name] and (self._restrict is None or name in self._restrict)
        ]
        offered += [n for n in NAMED_ONLY if available[n] and n in (self._restrict or ())]
        if not offered:
            raise SASLConfigurationError("no SASL mechanism can be offered with this setup")
        return offered

    def create_mechanism(
        self, name: str, *, peer_identity: str | None = None, encrypted: bool = False
    ) -> SASLServerMechanism:
        """A new server mechanism for the client's choice in sasl-init (AMQP 1.0 part
        5.3.3.2), with the same ``peer_identity`` and ``encrypted`` as the offer.

        Raises:
            SASLMechanismNotSupportedError: ``name`` is not among
                :meth:`offered_mechanisms`; the engine fails the authentication.
        """
        if name not in self.offered_mechanisms(peer_identity=peer_identity, encrypted=encrypted):
            raise SASLMechanismNotSupportedError(f"mechanism {name!r:.40} is not offered")
        store = self._store
        authorizer = store if isinstance(store, Authorizer) else None
        if name in SCRAM_MECHANISMS:
            assert isinstance(store, ScramStore)
            return ScramServer(
                store,
                mechanism=name,
                nonce=None if self._nonce_factory is None else self._nonce_factory(),
                fake_key=self._fake_key,
                fake_iterations=self._fake_iterations,
            )
        if name == "PLAIN":
            assert isinstance(store, PasswordStore)
            return PlainServer(store, authorizer=authorizer)
        if name == "AMQPLAIN":
            assert isinstance(store, PasswordStore)
            return AMQPlainServer(store, authorizer=authorizer)
        if name == "XOAUTH2":
            assert isinstance(store, TokenStore)
            return XOAuth2Server(store, scope=self._xoauth2_scope)
        if name == "EXTERNAL":
            return ExternalServer(peer_identity, authorizer=authorizer)
        return AnonymousServer(identity=self._anonymous_identity)


def select_client_mechanism(
    offered: Iterable[str],
    credentials: ClientCredentials,
    *,
    tls_client_cert: bool = False,
    encrypted: bool = False,
    allow_cleartext_secrets: bool = False,
    allow_anonymous: bool | None = None,
    allowed: Collection[str] | None = None,
    min_iterations: int = _DEFAULT_MIN_ITERATIONS,
    max_iterations: int = _DEFAULT_MAX_ITERATIONS,
    anonymous_trace: str = "",
) -> SASLClientMechanism:
    """Choose the strongest mechanism that the server offers (its sasl-mechanisms list,
    AMQP 1.0 part 5.3.3.1) and the credentials allow, and return a new client mechanism.

    The order is :data:`MECHANISM_PREFERENCE`, whatever the server's order (part 5.3.3.2:
    "authenticate using the highest-level security profile it can handle"):

    * SCRAM-SHA-512, SCRAM-SHA-256: a username and password;
    * EXTERNAL: ``tls_client_cert`` (a client certificate is in use), with the optional
      ``credentials.authzid``;
    * PLAIN: a username and password, on an ``encrypted`` connection or with
      ``allow_cleartext_secrets``;
    * XOAUTH2: a username and token, under the same condition;
    * ANONYMOUS: if ``allow_anonymous``; by default (None) only when the credentials hold no
      username, password or token, so that configured credentials are never silently
      dropped.

    ``allowed`` restricts the choice to those names (one name forces that mechanism).

    Raises:
        SASLNoMechanismError: nothing fits. The message lists the server's offer.
    """
    offer = [str(name) for name in offered]
    if allow_anonymous is None:
        allow_anonymous = (
            credentials.username is None
            and credentials.password is None
            and credentials.token is None
        )
    cleartext = encrypted or allow_cleartext_secrets
    has_password = credentials.username is not None and credentials.password is not None
    usable = {
        "SCRAM-SHA-512": has_password,
        "SCRAM-SHA-256": has_password,
        "EXTERNAL": tls_client_cert,
        "PLAIN": has_password and cleartext,
        "XOAUTH2": cleartext and credentials.username is not None and credentials.token is not None,
        "ANONYMOUS": allow_anonymous,
    }
    for name in MECHANISM_PREFERENCE:
        if name not in offer or not usable[name] or (allowed is not None and name not in allowed):
            continue
        if name in SCRAM_MECHANISMS:
            assert credentials.username is not None and credentials.password is not None
            return ScramClient(
                credentials.username,
                credentials.password,
                mechanism=name,
                min_iterations=min_iterations,
                max_iterations=max_iterations,
            )
        if name == "EXTERNAL":
            return ExternalClient(credentials.authzid)
        if name == "PLAIN":
            assert credentials.username is not None and credentials.password is not None
            return PlainClient(
                credentials.username, credentials.password, authzid=credentials.authzid
            )
        if name == "XOAUTH2":
            assert credentials.username is not None and credentials.token is not None
            return XOAuth2Client(credentials.username, credentials.token)
        return AnonymousClient(anonymous_trace)
    shown = ", ".join(repr(name[:40]) for name in offer[:20]) or "nothing"
    raise SASLNoMechanismError(
        f"no usable SASL mechanism: the server offers {shown}; check the credentials, "
        "tls_client_cert, encrypted/allow_cleartext_secrets and allowed",
        offered=tuple(offer),
    )


def client_mechanism(
    mechanism: str | SASLClientMechanism, username: str | None, password: str | None
) -> SASLClientMechanism:
    """An AMQP 0-9-1 or 0-10 client's mechanism object for ``mechanism``: an object is used
    as it is; a name (``"PLAIN"``, ``"AMQPLAIN"``, ``"EXTERNAL"``, ``"ANONYMOUS"``) is made
    with ``username`` and ``password`` (``guest``/``guest`` when both are None: RabbitMQ's
    and pika's default). Raises :class:`SASLConfigurationError` for an unknown name or
    unusable credentials."""
    if isinstance(mechanism, SASLClientMechanism):
        return mechanism
    name = mechanism.upper()
    if name == "EXTERNAL":
        return ExternalClient(username)
    if name == "ANONYMOUS":
        return AnonymousClient()
    if username is None and password is None:
        username, password = "guest", "guest"
    if name == "PLAIN":
        return PlainClient(username or "", password or "")
    if name == "AMQPLAIN":
        return AMQPlainClient(username or "", password or "")
    raise SASLConfigurationError(
        f"no client mechanism {mechanism!r}: PLAIN, AMQPLAIN, EXTERNAL, ANONYMOUS or an object"
    )


def client_mechanisms(
    mechanism: str | SASLClientMechanism | Sequence[str],
    username: str | None,
    password: str | None,
) -> tuple[SASLClientMechanism, ...]:
    """The mechanisms an AMQP 0-9-1 client may use, in its order of preference: one (a name
    or an object, :func:`client_mechanism`), or several names, of which the connection uses
    the first the server offers (:func:`first_offered`)."""
    if isinstance(mechanism, str | SASLClientMechanism):
        return (client_mechanism(mechanism, username, password),)
    names = list(mechanism)
    if not names or not all(isinstance(name, str) for name in names):
        raise SASLConfigurationError(f"mechanism names, at least one: not {mechanism!r}")
    return tuple(client_mechanism(name, username, password) for name in names)


def first_offered(
    choices: Sequence[SASLClientMechanism], offered: Sequence[str]
) -> SASLClientMechanism | None:
    """The first of an AMQP 0-9-1 client's ``choices`` that the server offers (its
    ``connection.start`` field ``mechanisms``), or None."""
    return next((mech for mech in choices if mech.name in offered), None)
