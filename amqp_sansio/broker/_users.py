"""Who may connect to the broker, and what each may do: SASL credentials (PLAIN, SCRAM,
ANONYMOUS; core spec 5.3) and a small per-user access rule naming the addresses a user may
send to and receive from.

The users file is JSON (the adapter reads it; this module only parses the text)::

    {
      "anonymous": {"send": ["public/*"], "receive": ["public/*"]},
      "users": {
        "alice": {"password": "secret", "send": ["*"], "receive": ["orders", "tmp.*"]},
        "bob": {
          "scram-sha-256": {"salt": "<base64>", "iterations": 4096,
                            "stored-key": "<base64>", "server-key": "<base64>"},
          "receive": ["orders"]
        }
      }
    }

``sas-keys`` (optional) holds the shared access keys that sign the SAS tokens clients put
to ``$cbs`` (claims-based security, ``docs/cbs.rst``)::

      "sas-keys": {
        "RootManageSharedAccessKey": {"key": "<secret>", "rights": ["Manage", "Send", "Listen"]},
        "orders-writer": {"key": "<secret>", "rights": ["Send"], "entity": "orders"}
      }

each key by its name (a token's ``skn``): its ``key`` (the text the HMAC is keyed with, as
Azure's keys are used), its ``rights`` (some of ``Send``, ``Listen``, ``Manage``) and, if
given, the ``entity`` (an address: a token signed with the key is good only for it and the
addresses below it, ``entity/...``). With keys and no ``anonymous`` entry, ANONYMOUS is
offered with no rules of its own: an anonymous client (as Azure's SDKs log in) reaches only
``$cbs``. ``jwt`` (optional), ``{"key": "<secret>"}``, is the key that signs the JSON web
tokens (HS256) clients may put instead; its tokens' ``roles`` claim lists their rights.

``anonymous`` (absent: ANONYMOUS is not offered, unless ``sas-keys`` are given) gives the
rules of clients that authenticate with ANONYMOUS (the identity ``anonymous``, a name no
user may take). A user has a ``password`` (PLAIN, and SCRAM derived from it when the file is
loaded) or stored SCRAM credentials (``scram-sha-256`` and/or ``scram-sha-512``, as
:func:`~amqp_sansio.sasl.derive_scram_credentials` makes them; PLAIN is then checked against
them). ``send`` and ``receive`` are address patterns (``*`` any run of characters, ``?``
one, as :func:`fnmatch.fnmatchcase`); absent, nothing is allowed."""

from __future__ import annotations

import base64
import fnmatch
import hmac
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from ..security.mechanisms import ScramCredentials, ServerAuthenticator, derive_scram_credentials

__all__ = [
    "ANONYMOUS",
    "AnyLogin",
    "SAS_RIGHTS",
    "SasKey",
    "User",
    "Users",
    "UsersFileError",
    "open_authenticator",
    "scram_entry",
]

#: The identity of clients that authenticated with ANONYMOUS.
ANONYMOUS = "anonymous"
_SCRAM = {"scram-sha-256": "SCRAM-SHA-256", "scram-sha-512": "SCRAM-SHA-512"}
_SECTIONS = ("users", "anonymous", "sas-keys", "jwt")
#: The rights a shared access key may give (Azure Service Bus's claims).
SAS_RIGHTS = ("Send", "Listen", "Manage")


class UsersFileError(ValueError):
    """The users file is not what :mod:`amqp_sansio.broker` expects; says where."""


@attrs.frozen(kw_only=True)
class User:
    """One user: a password and/or SCRAM credentials by mechanism, and address patterns."""

    name: str
    password: str | None = attrs.field(default=None, repr=False)
    scram: Mapping[str, ScramCredentials] = attrs.field(factory=dict, repr=False)
    send: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    receive: tuple[str, ...] = attrs.field(default=(), converter=tuple)


@attrs.frozen(kw_only=True)
class SasKey:
    """A shared access key (the users file's ``sas-keys``): its ``name`` (a token's
    ``skn``), the ``key`` itself (never in the repr), the ``rights`` a token it signs gives
    (of :data:`SAS_RIGHTS`), and the ``entity`` it is scoped to (None: every address)."""

    name: str
    key: str = attrs.field(repr=False)
    rights: frozenset[str] = attrs.field(converter=frozenset)
    entity: str | None = None


def _matches(patterns: Iterable[str], address: str) -> bool:
    return any(fnmatch.fnmatchcase(address, pattern) for pattern in patterns)


class Users:
    """The broker's users: a SASL store for :class:`~amqp_sansio.sasl.ServerAuthenticator`
    (``check_password`` for PLAIN, ``scram_credentials`` for SCRAM) and the access rules
    (:meth:`allows`). ``anonymous``: the rules for ANONYMOUS clients (None: not offered)."""

    def __init__(
        self,
        users: Iterable[User] = (),
        *,
        anonymous: User | None = None,
        sas_keys: Iterable[SasKey] = (),
        jwt_key: str | None = None,
    ) -> None:
        self.users = {u.name: u for u in users}
        if ANONYMOUS in self.users:
            raise UsersFileError(f"the name {ANONYMOUS!r} is reserved for ANONYMOUS clients")
        #: The shared access keys that sign the tokens put to ``$cbs``, by name.
        self.sas_keys = {k.name: k for k in sas_keys}
        #: The key that signs the JSON web tokens put to ``$cbs`` (HS256), if any.
        self.jwt_key = jwt_key
        if anonymous is None and (self.sas_keys or jwt_key is not None):
            anonymous = User(name=ANONYMOUS)  # (a client with a token logs in so)
        self.anonymous = anonymous

    @classmethod
    def from_json(cls, text: str) -> Users:
        """Parse a users file (the format above)."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UsersFileError(f"not JSON: {exc}") from None
        if not isinstance(data, dict) or not set(data) <= set(_SECTIONS):
            raise UsersFileError(f"expected an object with some of {', '.join(_SECTIONS)}")
        anonymous = None
        if data.get("anonymous") is not None:
            anonymous = _user(ANONYMOUS, data["anonymous"], credentials=False)
        entries = data.get("users", {})
        if not isinstance(entries, dict):
            raise UsersFileError('"users" must be an object of user names')
        keys = data.get("sas-keys", {})
        if not isinstance(keys, dict):
            raise UsersFileError('"sas-keys" must be an object of key names')
        return cls(
            [_user(name, entry) for name, entry in entries.items()],
            anonymous=anonymous,
            sas_keys=[_sas_key(name, entry) for name, entry in keys.items()],
            jwt_key=_jwt_key(data.get("jwt")),
        )

    # -- SASL stores ------------------------------------------------------------------------

    def check_password(self, username: str, password: str) -> bool:
        user = self.users.get(username)
        if user is None:
            return False
        if user.password is not None:
            return hmac.compare_digest(user.password.encode(), password.encode())
        mechanism, stored = next(iter(user.scram.items()))
        try:
            derived = derive_scram_credentials(
                password, mechanism=mechanism, salt=stored.salt, iterations=stored.iterations
            )
        except ValueError:  # a password SASLprep refuses
            return False
        return hmac.compare_digest(derived.stored_key, stored.stored_key)

    def scram_credentials(self, username: str, mechanism: str) -> ScramCredentials | None:
        user = self.users.get(username)
        return None if user is None else user.scram.get(mechanism)

    def authenticator(
        self, *, allow_cleartext: bool = False, mechanisms: Sequence[str] | None = None
    ) -> ServerAuthenticator:
        """The SASL configuration for these users: SCRAM, PLAIN (on TLS only unless
        ``allow_cleartext``), ANONYMOUS if the file allows it; or, given, the
        ``mechanisms`` a protocol's engine offers (0-9-1's PLAIN and AMQPLAIN), under the
        same rules."""
        if mechanisms is None:
            # A SCRAM mechanism is offered only if every user has credentials for it: a
            # client takes the strongest offered, and could not fall back.
            users = self.users.values()
            scram = [m for m in _SCRAM.values() if all(m in u.scram for u in users)]
            mechanisms = [*scram, "PLAIN", "ANONYMOUS"]
        return ServerAuthenticator(
            self,
            allow_anonymous=self.anonymous is not None and "ANONYMOUS" in mechanisms,
            allow_cleartext_secrets=allow_cleartext,
            anonymous_identity=ANONYMOUS,
            mechanisms=list(mechanisms),
        )

    # -- access -----------------------------------------------------------------------------

    def allows(self, identity: str | None, address: str, *, send: bool) -> bool:
        """Whether ``identity`` (who SASL authenticated) may send to (``send``) or receive
        from ``address``."""
        if identity == ANONYMOUS:
            user = self.anonymous
        else:
            user = None if identity is None else self.users.get(identity)
        if user is None:
            return False
        return _matches(user.send if send else user.receive, address)


def _user(name: Any, entry: Any, *, credentials: bool = True) -> User:
    where = f"user {name!r}"
    if not isinstance(entry, dict):
        raise UsersFileError(f"{where}: expected an object")
    known = {"send", "receive"} | ({"password", *_SCRAM} if credentials else set())
    unknown = set(entry) - known
    if unknown:
        raise UsersFileError(f"{where}: unknown fields {sorted(unknown)}")
    rules = {}
    for key in ("send", "receive"):
        value = entry.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsersFileError(f"{where}: {key!r} must be a list of address patterns")
        rules[key] = value
    password = entry.get("password")
    scram: dict[str, ScramCredentials] = {}
    try:
        for key, mechanism in _SCRAM.items():
            if key in entry:
                scram[mechanism] = _credentials(entry[key])
        if password is not None:
            if not isinstance(password, str):
                raise UsersFileError(f"{where}: the password must be a string")
            for mechanism in _SCRAM.values():
                scram.setdefault(mechanism, derive_scram_credentials(password, mechanism=mechanism))
    except (ValueError, TypeError, KeyError) as exc:
        raise UsersFileError(f"{where}: bad credentials: {exc}") from None
    if credentials and not scram:
        raise UsersFileError(f"{where}: needs a password or SCRAM credentials")
    return User(name=str(name), password=password, scram=scram, **rules)


def _sas_key(name: str, entry: Any) -> SasKey:
    where = f"sas key {name!r}"
    if not name or not isinstance(entry, dict):
        raise UsersFileError(f"{where}: expected a name and an object")
    unknown = set(entry) - {"key", "rights", "entity"}
    if unknown:
        raise UsersFileError(f"{where}: unknown fields {sorted(unknown)}")
    key, rights, entity = entry.get("key"), entry.get("rights"), entry.get("entity")
    if not isinstance(key, str) or not key:
        raise UsersFileError(f"{where}: the key must be a string")
    if not isinstance(rights, list) or not rights or not set(rights) <= set(SAS_RIGHTS):
        raise UsersFileError(f"{where}: 'rights' must list some of {', '.join(SAS_RIGHTS)}")
    if entity is not None and (not isinstance(entity, str) or not entity.strip("/")):
        raise UsersFileError(f"{where}: 'entity' must be an address")
    entity = None if entity is None else entity.strip("/")
    return SasKey(name=name, key=key, rights=rights, entity=entity)


def _jwt_key(entry: Any) -> str | None:
    if entry is None:
        return None
    if not isinstance(entry, dict) or set(entry) != {"key"}:
        raise UsersFileError('"jwt" must be an object with a "key"')
    key = entry["key"]
    if not isinstance(key, str) or not key:
        raise UsersFileError('"jwt": the key must be a string')
    return key


def _credentials(value: Any) -> ScramCredentials:
    def b64(key: str) -> bytes:
        return base64.b64decode(value[key], validate=True)

    return ScramCredentials(
        salt=b64("salt"),
        iterations=value["iterations"],
        stored_key=b64("stored-key"),
        server_key=b64("server-key"),
    )


def scram_entry(password: str, *, mechanism: str = "SCRAM-SHA-256") -> dict[str, str | int]:
    """The users file's entry for SCRAM credentials derived from ``password`` (so that the
    file need not hold the password itself)."""
    c = derive_scram_credentials(password, mechanism=mechanism)
    return {
        "salt": base64.b64encode(c.salt).decode(),
        "iterations": c.iterations,
        "stored-key": base64.b64encode(c.stored_key).decode(),
        "server-key": base64.b64encode(c.server_key).decode(),
    }


class AnyLogin:
    """The password check of an open broker (no users): any login is taken, and its name
    becomes the connection's identity, as the 0-9-1 side takes any (docs/broker.rst)."""

    def check_password(self, username: str, password: str) -> bool:
        return True


def open_authenticator(*, allow_cleartext: bool = False) -> ServerAuthenticator:
    """The SASL configuration of an open broker: ANONYMOUS (and so the bare AMQP header too,
    core spec 5.1), and PLAIN with any login (on TLS only unless ``allow_cleartext``), so
    that a client that brings credentials (RabbitMQ's guest/guest) connects as one that
    brings none does."""
    return ServerAuthenticator(
        AnyLogin(), allow_anonymous=True, allow_cleartext_secrets=allow_cleartext
    )
