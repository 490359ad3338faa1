"""ANONYMOUS (RFC 4505), client and server."""

from __future__ import annotations

from .base import SASLClientMechanism, SASLServerMechanism, ServerStep, ServerSuccess
from .errors import SASLConfigurationError


class AnonymousClient(SASLClientMechanism):
    """ANONYMOUS (RFC 4505): no credentials. ``trace`` is the optional trace information
    (an email address or an opaque string of at most 255 characters) sent as the initial
    response."""

    name = "ANONYMOUS"

    def __init__(self, trace: str = "") -> None:
        super().__init__()
        if not isinstance(trace, str) or len(trace) > 255 or "\x00" in trace:
            raise SASLConfigurationError("ANONYMOUS trace must be a str of at most 255 chars")
        self._trace = trace

    def _initial_response(self, hostname: str | None) -> bytes | None:
        return self._trace.encode("utf-8")


class AnonymousServer(SASLServerMechanism):
    """ANONYMOUS (RFC 4505). Every client succeeds as ``identity``. The trace information
    is informational only (RFC 4505 section 2): it is kept in :attr:`trace` when it is
    valid UTF-8 of at most 255 characters without control characters (the "trace"
    profile, section 3), and otherwise dropped, not refused: rhea, for one, sends a NUL
    and a name (PLAIN's layout) as its ANONYMOUS response. Its size is bounded by the SASL
    frame limit. Offer ANONYMOUS only on purpose (:class:`ServerAuthenticator` needs
    ``allow_anonymous=True``)."""

    name = "ANONYMOUS"

    def __init__(self, *, identity: str = "anonymous") -> None:
        super().__init__()
        self._identity = identity
        #: The client's trace information, once received: None if it sent none that RFC
        #: 4505's trace profile allows.
        self.trace: str | None = None

    def _start(self, initial_response: bytes) -> ServerStep:
        try:
            trace: str | None = initial_response.decode("utf-8")
        except UnicodeDecodeError:
            trace = None
        if trace is not None and (len(trace) > 255 or any(ord(c) < 0x20 for c in trace)):
            trace = None
        self.trace = trace
        return ServerSuccess(identity=self._identity, authentication_identity=self._identity)
