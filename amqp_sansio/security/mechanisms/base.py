"""What every SASL mechanism shares: the client and server mechanism bases (RFC 4422
section 3), a server step's three results, and small helpers for the peer's bytes."""

from __future__ import annotations

import base64
import enum
from collections.abc import Callable
from typing import TypeVar

import attrs

from ...definitions.sasl import SaslCode
from .credentials import Authorizer
from .errors import (
    SASLAuthenticationError,
    SASLError,
    SASLProtocolError,
    SASLStateError,
    SASLSystemError,
)

_T = TypeVar("_T")
_R = TypeVar("_R")


# --------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------


def _peer_text(data: bytes, what: str) -> str:
    """Decode the peer's UTF-8, or raise :class:`SASLProtocolError`."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SASLProtocolError(f"{what} is not valid UTF-8") from None


def _b64decode(text: str, what: str) -> bytes:
    """Strict base64: the standard alphabet, canonical padding, nothing else."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except ValueError:
        raise SASLProtocolError(f"{what} is not valid base64") from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise SASLProtocolError(f"{what} is not canonical base64")
    return raw


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _short(text: str) -> str:
    """A peer-supplied value, shortened, for an error message."""
    return repr(text[:60])


# --------------------------------------------------------------------------------------
# Client mechanisms
# --------------------------------------------------------------------------------------


class _Phase(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class SASLClientMechanism:
    """The client side of one SASL exchange (AMQP 1.0 part 5.3.2, RFC 4422 section 3).

    The engine drives it like this:

    1. on sasl-mechanisms, choose one (:func:`select_client_mechanism`) and send sasl-init
       with ``mechanism=name`` and ``initial_response=initial_response(hostname)``;
    2. on each sasl-challenge, send sasl-response with ``respond(challenge)``;
    3. on sasl-outcome with code ``ok``, call ``verify_outcome(additional_data)``: if it
       raises, the server is not who it claims to be and the connection must be closed;
       on any other code, raise or report ``outcome_error(code)``.

    Every method raises only :class:`SASLError` subclasses: :class:`SASLProtocolError` for
    bad peer data, :class:`SASLServerError` for a server's explained refusal,
    :class:`SASLServerVerificationError` for a failed server signature, and
    :class:`SASLStateError` for calls out of order. After an error the object is spent.

    ``sends_secrets_in_clear`` is True for mechanisms that put a reusable secret on the wire
    (PLAIN, XOAUTH2): the engine should refuse them on an unencrypted connection unless the
    application opted in.
    """

    #: The SASL mechanism name, sent as the sasl-init ``mechanism`` symbol.
    name: str = ""
    #: True if the mechanism sends a password or token that an eavesdropper could reuse.
    sends_secrets_in_clear: bool = False

    def __init__(self) -> None:
        self._phase = _Phase.NEW

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self._phase.value}>"

    def initial_response(self, hostname: str | None = None) -> bytes | None:
        """The sasl-init ``initial-response`` (AMQP 1.0 part 5.3.3.2), or None to send none.

        ``hostname`` is the sasl-init hostname; the built-in mechanisms do not use it.
        """
        if self._phase is not _Phase.NEW:
            raise SASLStateError("initial_response() may be called once, first")
        self._phase = _Phase.RUNNING
        return self._guard(self._initial_response, hostname)

    def respond(self, challenge: bytes) -> bytes:
        """The sasl-response (AMQP 1.0 part 5.3.3.4) to a sasl-challenge (5.3.3.3)."""
        self._check_running("respond()")
        return self._guard(self._respond, bytes(challenge))

    def verify_outcome(self, additional_data: bytes | None) -> None:
        """Check a sasl-outcome with code ``ok`` (AMQP 1.0 part 5.3.3.5) and its
        ``additional-data``. Returns if the exchange succeeded from our side too."""
        self._check_running("verify_outcome()")
        data = None if additional_data is None else bytes(additional_data)
        self._guard(self._verify_outcome, data)
        self._phase = _Phase.DONE

    def outcome_error(self, code: SaslCode) -> SASLError:
        """The error to raise or report for a sasl-outcome whose ``code`` is not ``ok``
        (AMQP 1.0 part 5.3.3.6). It does not raise it, and does not change the state."""
        code = SaslCode(code)
        if code is SaslCode.AUTH:
            return SASLAuthenticationError(
                f"the server refused the {self.name} credentials (sasl-code auth)", code=code
            )
        return SASLSystemError(
            f"the server could not authenticate (sasl-code {code.name.lower()})", code=code
        )

    # Hooks for the concrete mechanisms.

    def _initial_response(self, hostname: str | None) -> bytes | None:
        raise NotImplementedError  # pragma: no cover - every mechanism overrides it

    def _respond(self, challenge: bytes) -> bytes:
        raise SASLProtocolError(f"{self.name} expects no challenge, the server sent one")

    def _verify_outcome(self, additional_data: bytes | None) -> None:
        """By default, additional data is ignored (RFC 4422 lets mechanisms define none)."""

    def _check_running(self, what: str) -> None:
        if self._phase is not _Phase.RUNNING:
            raise SASLStateError(f"{what} is not allowed when the exchange is {self._phase.value}")

    def _guard(self, hook: Callable[[_T], _R], arg: _T) -> _R:
        try:
            return hook(arg)
        except SASLError:
            self._phase = _Phase.FAILED
            raise


# --------------------------------------------------------------------------------------
# Server mechanisms
# --------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ServerChallenge:
    """Send a sasl-challenge (AMQP 1.0 part 5.3.3.3) with ``data``, then pass the client's
    sasl-response to :meth:`SASLServerMechanism.step`."""

    data: bytes


@attrs.frozen(kw_only=True)
class ServerSuccess:
    """Send a sasl-outcome with code ``ok`` and ``additional_data`` (AMQP 1.0 part 5.3.3.5).

    ``identity`` is who the connection acts as (the authorization identity);
    ``authentication_identity`` is whose credentials were checked. They differ only when an
    :class:`Authorizer` allowed an authzid.
    """

    identity: str
    authentication_identity: str
    additional_data: bytes | None = None


@attrs.frozen(kw_only=True)
class ServerFailure:
    """Send a sasl-outcome with ``code`` (AMQP 1.0 part 5.3.3.6) and no additional data.
    ``error`` says why, for the server's logs; it is not sent to the client."""

    code: SaslCode
    error: SASLError


#: What a server mechanism step returns.
ServerStep = ServerChallenge | ServerSuccess | ServerFailure


class SASLServerMechanism:
    """The server side of one SASL exchange (AMQP 1.0 part 5.3.2, RFC 4422 section 3).

    The engine drives it like this:

    1. on sasl-init, create the mechanism named by the client
       (:meth:`ServerAuthenticator.create_mechanism`) and call
       ``start(initial_response, hostname)``;
    2. on :class:`ServerChallenge`, send a sasl-challenge, and pass the client's sasl-response
       to ``step(response)``; repeat;
    3. on :class:`ServerSuccess` or :class:`ServerFailure`, send the sasl-outcome.

    ``start`` and ``step`` never raise because of what the client sent: malformed data,
    wrong credentials and a store's :class:`SASLSystemError` all become a
    :class:`ServerFailure`. They raise :class:`SASLStateError` only when called out of order
    (``step`` before ``start`` or after the outcome). Any other exception raised by the
    application's store propagates unchanged (it is a bug, not an outcome).

    If the client sent no initial response, a client-first mechanism answers with an empty
    challenge (RFC 4422 section 5) and takes the next response as the initial one.
    """

    name: str = ""
    sends_secrets_in_clear: bool = False

    def __init__(self) -> None:
        self._phase = _Phase.NEW
        self._awaiting_initial = False
        #: The sasl-init hostname, once :meth:`start` was called.
        self.hostname: str | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self._phase.value}>"

    def start(self, initial_response: bytes | None, hostname: str | None = None) -> ServerStep:
        """Begin with the sasl-init ``initial-response`` and ``hostname`` (AMQP 1.0 part
        5.3.3.2). The built-in mechanisms do not use the hostname."""
        if self._phase is not _Phase.NEW:
            raise SASLStateError("start() may be called once, first")
        self._phase = _Phase.RUNNING
        self.hostname = hostname
        if initial_response is None:
            self._awaiting_initial = True
            return ServerChallenge(data=b"")
        return self._run(self._start, bytes(initial_response))

    def step(self, response: bytes) -> ServerStep:
        """Continue with the client's sasl-response (AMQP 1.0 part 5.3.3.4)."""
        if self._phase is not _Phase.RUNNING:
            raise SASLStateError(f"step() is not allowed when the exchange is {self._phase.value}")
        if self._awaiting_initial:
            self._awaiting_initial = False
            return self._run(self._start, bytes(response))
        return self._run(self._step, bytes(response))

    def _run(self, hook: Callable[[bytes], ServerStep], data: bytes) -> ServerStep:
        try:
            result = hook(data)
        except SASLError as error:
            result = ServerFailure(code=error.code, error=error)
        if not isinstance(result, ServerChallenge):
            self._phase = _Phase.DONE if isinstance(result, ServerSuccess) else _Phase.FAILED
        return result

    def _start(self, initial_response: bytes) -> ServerStep:
        raise NotImplementedError  # pragma: no cover - every mechanism overrides it

    def _step(self, response: bytes) -> ServerStep:
        raise NotImplementedError  # pragma: no cover - only multi-step mechanisms get here


def _authorized(
    authorizer: Authorizer | None, authcid: str, authzid: str, mechanism: str
) -> ServerSuccess:
    """The success for ``authcid`` acting as ``authzid`` (empty: as itself), or raise."""
    if authzid and authzid != authcid:
        if authorizer is None or not authorizer.authorize(authcid, authzid):
            raise SASLAuthenticationError(f"{mechanism}: the authorization identity is refused")
        return ServerSuccess(identity=authzid, authentication_identity=authcid)
    return ServerSuccess(identity=authcid, authentication_identity=authcid)
