"""The TLS security layer of AMQP 1.0 (core spec part 5.2), without I/O.

:class:`TLSLayer` sits between the network and an *inner* byte layer (the engine's
:class:`~amqp_sansio.Connection`, or anything with the byte interface,
:class:`~amqp_sansio.security.layers.ByteLayer`). Ciphertext from the network goes in through
:meth:`TLSLayer.receive_data`; the plaintext it carries is handed to the inner object. The
inner object's plaintext output is encrypted and comes out of :meth:`TLSLayer.data_to_send`.
The layer offers the inner object's interface outward, so an adapter drives it exactly like
the engine.

TLS itself is the standard library's: an :class:`ssl.SSLObject` over two
:class:`ssl.MemoryBIO` buffers, which never touches a socket. The layer adds what AMQP asks
around it: the TLS protocol header ``AMQP 2.1.0.0`` exchanged before the handshake (part
5.2), or none at all for a pure TLS ("amqps", port 5671) server (part 5.2.1); hand-over of
bytes that arrive together with the header or the handshake's last flight; close_notify in
both directions; and events for what the application needs to know.
"""

from __future__ import annotations

import enum
import re
import ssl
from collections.abc import Callable
from typing import ClassVar, TypeAlias, cast

import attrs

from ..engine.contract import Event
from ..errors import LocalProtocolError
from ..framing.headers import AMQP_HEADER, SASL_HEADER, TLS_HEADER
from ..framing.headers import name_of as _name_of
from .layers import ByteLayer, LayerFailed, close_inner

__all__ = [
    "TLS_HEADER",
    "DistinguishedName",
    "PeerCertificate",
    "TLSClosed",
    "TLSEstablished",
    "TLSFailed",
    "TLSHeaderMismatch",
    "TLSLayer",
    "TLSOrPlain",
    "TLSState",
    "client_context",
    "server_context",
    "subject_to_string",
]

_Password = str | bytes | Callable[[], str | bytes]

#: A distinguished name as :meth:`ssl.SSLObject.getpeercert` decodes it: its relative
#: distinguished names, most significant first, each a tuple of ``(attribute, value)`` pairs.
DistinguishedName: TypeAlias = tuple[tuple[tuple[str, str], ...], ...]

#: A certificate as :meth:`ssl.SSLObject.getpeercert` decodes it: ``"subject"`` and
#: ``"issuer"`` are :data:`DistinguishedName`\ s, ``"subjectAltName"`` a tuple of
#: ``(type, value)`` pairs, the rest (``"notAfter"``, ``"serialNumber"``, ...) strings.
PeerCertificate: TypeAlias = dict[str, str | DistinguishedName | tuple[tuple[str, str], ...]]

# -- events ------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class TLSEstablished(Event):
    """The TLS handshake completed (core spec 5.2). ``version`` is e.g. ``"TLSv1.3"``,
    ``cipher`` the cipher suite's name. ``peer_certificate`` is the peer's certificate as
    :meth:`ssl.SSLObject.getpeercert` decodes it, or None if the peer sent none or it was not
    verified. ``peer_identity`` is that certificate's subject as an RFC 4514 string (see
    :func:`subject_to_string`): on the server, the identity SASL EXTERNAL authenticates."""

    version: str
    cipher: str
    peer_certificate: PeerCertificate | None
    peer_identity: str | None


@attrs.frozen(kw_only=True)
class TLSFailed(LayerFailed):
    """The handshake or a TLS record failed: a certificate that does not verify, a host
    name that does not match, a protocol error, a record that does not authenticate, a
    transport that closed during the handshake. The alert TLS produced (if any) is the last
    thing the layer sends; afterwards it sends nothing and reports nothing. Close the
    transport.

    ``error`` is a readable description (OpenSSL's reason in brackets, e.g.
    ``"[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: ..."``), ``reason`` the
    bare reason code (``"CERTIFICATE_VERIFY_FAILED"``, ``"WRONG_VERSION_NUMBER"``,
    ``"TLSV1_ALERT_UNKNOWN_CA"``, or this layer's own ``"EOF_DURING_HANDSHAKE"``), and
    ``verify_error`` the certificate verifier's message when a certificate was refused here
    (e.g. ``"Hostname mismatch, certificate is not valid for 'example.com'."``), else
    None."""

    layer: ClassVar[str] = "TLS"

    reason: str | None = None
    verify_error: str | None = None


@attrs.frozen(kw_only=True)
class TLSHeaderMismatch(Event):
    """The peer's protocol header is not the TLS header ``AMQP 2.1.0.0`` (core spec 2.2,
    5.2). ``header`` holds the bytes seen (8, or fewer when the first bytes already rule out
    "AMQP") and ``version_name`` says what they are, e.g. ``"AMQP 1.0 without TLS"``.

    A server answered with its TLS header, as core spec 2.2 requires of a server that
    demands a security layer; a client sends nothing more. Either way the layer has ended:
    send what :meth:`TLSLayer.data_to_send` returns, then close the transport."""

    header: bytes
    version_name: str


@attrs.frozen(kw_only=True)
class TLSClosed(Event):
    """The peer's side of the TLS stream ended. ``truncated`` is False when the peer sent
    TLS close_notify, True when the transport closed without it (the stream may have been
    cut short). The inner object then receives end-of-stream (``receive_data(b"")``).

    A truncation after the inner object has ended on its own terms (e.g. after AMQP close
    frames were exchanged) loses nothing; many peers close that way. Before that, the inner
    object reports the abrupt end itself (the engine: a connection ended without close)."""

    truncated: bool


# -- the layer -------------------------------------------------------------------------------


class TLSState(enum.Enum):
    """Where a :class:`TLSLayer` is."""

    #: Waiting for the peer's TLS protocol header (negotiated mode, core spec 5.2).
    HEADER = "header"
    #: The TLS handshake is under way.
    HANDSHAKE = "handshake"
    #: Application data flows both ways.
    OPEN = "open"
    #: We sent close_notify; the peer's data is still read until its close_notify or EOF.
    CLOSING = "closing"
    #: Done: both directions ended, or the transport closed.
    CLOSED = "closed"
    #: Failed, or the header did not match: nothing more is sent or reported.
    FAILED = "failed"


_SSL_SUFFIX = re.compile(r"\s*\(_ssl\.c:\d+\)$")
#: Names for the headers an AMQP 1.0 peer sends when it does not start with TLS.
_HEADER_NAMES = {
    AMQP_HEADER: "AMQP 1.0 without TLS",
    SASL_HEADER: "AMQP 1.0 SASL without TLS",
}
_READ_SIZE = 65536


class TLSLayer:
    """TLS (core spec 5.2) between the network and ``inner``, in the client or server role.

    ``context`` is an :class:`ssl.SSLContext` for the role (see :func:`client_context` and
    :func:`server_context`). A client gives ``server_hostname``: it is sent as SNI and,
    when ``context.check_hostname`` is set, the server's certificate must match it.
    With ``negotiate`` (the default) the TLS protocol header is exchanged first (5.2);
    without it the handshake starts at the first byte, as for a pure TLS "amqps" server
    (5.2.1). ``session`` resumes a previous :class:`ssl.SSLSession` (client only).

    Drive it like the engine: feed what the network delivers to :meth:`receive_data`, write
    out :meth:`data_to_send`, wait until :meth:`next_deadline` and call :meth:`handle_timer`.
    The inner object's events come back through :meth:`receive_data` and
    :meth:`handle_timer`, after this layer's own (:class:`TLSEstablished`,
    :class:`TLSFailed`, :class:`TLSHeaderMismatch`, :class:`TLSClosed`).

    Unprocessed ciphertext is bounded. OpenSSL takes whatever each call adds to the incoming
    buffer into its own record buffer, which holds one record: at most 5 header bytes and
    2**14 + 2048 bytes of ciphertext (RFC 5246 6.2.3; RFC 8446 5.2 allows less). A record
    header that announces more fails at once (``PACKET_LENGTH_TOO_LONG``,
    ``RECORD_OVERFLOW``). During the handshake OpenSSL also gathers a handshake message that
    spans records, within its own limits (a certificate chain: 100 KiB by default).
    Plaintext is handed to the inner object as soon as it is decrypted.
    """

    #: :meth:`close` ends this layer, not the engine: a layer around it (an HTTP proxy's
    #: tunnel) calls it first (:func:`~amqp_sansio.security.stack.close_inner`).
    closes_as_layer: ClassVar[bool] = True

    def __init__(
        self,
        inner: ByteLayer,
        context: ssl.SSLContext,
        *,
        client: bool,
        server_hostname: str | None = None,
        negotiate: bool = True,
        session: ssl.SSLSession | None = None,
        client_certificate: bool = False,
    ) -> None:
        if not client and (server_hostname is not None or session is not None):
            raise LocalProtocolError("server_hostname and session are for the client role")
        if client and context.check_hostname and not server_hostname:
            raise LocalProtocolError(
                "the context checks host names: give server_hostname (or use a context "
                "made with check_hostname=False)"
            )
        self.inner = inner
        self.client = client
        self.negotiate = negotiate
        #: The client's context carries a certificate (SASL EXTERNAL may then be used).
        self.client_certificate = client_certificate
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        try:
            self._ssl = context.wrap_bio(
                self._incoming,
                self._outgoing,
                server_side=not client,
                server_hostname=server_hostname,
                session=session,
            )
        except (ValueError, ssl.SSLError) as exc:  # e.g. a server context for a client
            raise LocalProtocolError(f"cannot use this SSLContext here: {exc}") from exc
        self._out: list[bytes] = []
        self._header = b""
        self._peer_closed = False
        self._info: TLSEstablished | None = None
        #: Events that happened where none can be returned (data_to_send, the constructor).
        self._deferred: list[Event] = []
        self._deferred_eof = False
        self.state = TLSState.HEADER if negotiate else TLSState.HANDSHAKE
        if negotiate and client:
            self._out.append(TLS_HEADER)
        elif client:
            self._handshake(self._deferred)  # the ClientHello

    def __repr__(self) -> str:
        role = "client" if self.client else "server"
        version = f" {self._info.version}" if self._info else ""
        return f"<TLSLayer {role} {self.state.value}{version}>"

    # -- what the handshake established -----------------------------------------------------

    @property
    def server_hostname(self) -> str | None:
        """The host name a client layer was given: sent as SNI, and checked against the
        server's certificate if the context checks host names. None on a server."""
        return self._ssl.server_hostname

    @property
    def version(self) -> str | None:
        """The TLS version negotiated, e.g. ``"TLSv1.3"``; None before the handshake."""
        return self._info.version if self._info else None

    @property
    def cipher(self) -> str | None:
        """The cipher suite's name; None before the handshake."""
        return self._info.cipher if self._info else None

    @property
    def peer_certificate(self) -> PeerCertificate | None:
        """The peer's verified certificate, decoded as by :meth:`ssl.SSLObject.getpeercert`;
        None before the handshake, if the peer sent none, or if it was not verified."""
        return self._info.peer_certificate if self._info else None

    @property
    def peer_certificate_der(self) -> bytes | None:
        """The peer's certificate in DER, verified or not; None if there is none."""
        return self._ssl.getpeercert(binary_form=True) if self._info else None

    @property
    def peer_identity(self) -> str | None:
        """The verified peer certificate's subject as an RFC 4514 string (e.g.
        ``"CN=alice,O=Example"``, see :func:`subject_to_string`), or None. On a server this is
        the identity to give SASL EXTERNAL (core spec 5.3; ``ExternalServer``)."""
        return self._info.peer_identity if self._info else None

    @property
    def session(self) -> ssl.SSLSession | None:
        """The TLS session, to resume with a later client layer's ``session``."""
        return self._ssl.session

    # -- the byte interface ------------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview, now: float) -> list[Event]:
        """Take bytes from the network; return what happened. Empty ``data`` means the
        transport closed (TCP EOF).

        In turn: the peer's TLS header is checked (core spec 5.2), the handshake advanced,
        and records decrypted; decrypted plaintext goes to ``inner.receive_data`` (bytes
        that came in the same chunk as the header or the handshake's end included), whose
        events follow this layer's in the returned list."""
        events = self._take_deferred(now)
        if self.state in (TLSState.CLOSED, TLSState.FAILED):
            return events
        if not data:
            self._eof(events, now)
            return events
        if self.state is TLSState.HEADER:
            rest = self._take_header(bytes(data), events)
            if rest is None:
                return events
            data = rest
        self._incoming.write(data)
        if self.state is TLSState.HANDSHAKE and not self._handshake(events):
            return events
        self._read(events, now)
        return events

    def data_to_send(self) -> bytes:
        """The bytes to write to the network now (handed over once): our TLS header, the
        handshake's messages, and, once the handshake is done, ``inner.data_to_send()``
        encrypted. After the peer's close_notify, our own close_notify follows the inner
        object's last bytes."""
        if self.state is TLSState.OPEN:
            self._encrypt_inner()
            if self._peer_closed:
                self._shutdown()
        out, self._out = self._out, []
        return b"".join(out)

    def next_deadline(self) -> float | None:
        """The inner object's next deadline (TLS itself has none); None once the layer has
        failed."""
        inner = getattr(self.inner, "next_deadline", None)
        if inner is None or self.state is TLSState.FAILED:
            return None
        deadline: float | None = inner()
        return deadline

    def handle_timer(self, now: float) -> list[Event]:
        """Pass the timer to the inner object and return its events (none once failed)."""
        events = self._take_deferred(now)
        inner = getattr(self.inner, "handle_timer", None)
        if inner is not None and self.state is not TLSState.FAILED:
            events.extend(inner(now))
        return events

    def close(self) -> None:
        """End our side of TLS: the inner object's last bytes are encrypted, then TLS
        close_notify follows (core spec 5.2 allows not waiting for the peer's). Call it once
        the inner object has ended (e.g. on
        :class:`~amqp_sansio.engine.amqp10.events.ConnectionEnded`), then send :meth:`data_to_send`;
        the peer's data is still decrypted and passed on until its close_notify or EOF. Before the
        handshake is done there is nothing to notify: the layer just ends. Calling it again does
        nothing. A layer inside that ends as a layer (a WebSocket layer, ``wss``) is closed
        first, so its close goes out inside TLS."""
        close_inner(self.inner)
        if self.state is TLSState.OPEN:
            self._encrypt_inner()
            self._shutdown()
        elif self.state in (TLSState.HEADER, TLSState.HANDSHAKE):
            self.state = TLSState.CLOSED

    # -- internals ---------------------------------------------------------------------------

    def _take_header(self, data: bytes, events: list[Event]) -> bytes | None:
        """Collect the peer's protocol header. Return the bytes after it once it is the TLS
        header, None while it is incomplete or when it is another one (then reported)."""
        need = 8 - len(self._header)
        header = self._header = self._header + data[:need]
        if not b"AMQP".startswith(header[:4]) or (len(header) == 8 and header != TLS_HEADER):
            # Not ours: as in core spec 2.2, a server answers with the header it requires.
            name = _HEADER_NAMES.get(header) or _name_of(header.ljust(8, b"\x00"))
            if not self.client:
                self._out.append(TLS_HEADER)
            self.state = TLSState.FAILED
            events.append(TLSHeaderMismatch(header=header, version_name=name))
            return None
        if len(header) < 8:
            return None
        self.state = TLSState.HANDSHAKE  # a client's ClientHello comes with its next step
        if not self.client:
            self._out.append(TLS_HEADER)
        return data[need:]

    def _handshake(self, events: list[Event]) -> bool:
        """Advance the handshake; True once it is complete (then reported)."""
        try:
            self._ssl.do_handshake()
        except ssl.SSLWantReadError:
            self._drain()
            return False
        except ssl.SSLError as exc:
            self._fail(_failure(exc), events)
            return False
        self._drain()
        self.state = TLSState.OPEN
        certificate = self._ssl.getpeercert() or None
        cipher = self._ssl.cipher()
        self._info = TLSEstablished(
            version=self._ssl.version() or "",
            cipher=cipher[0] if cipher else "",
            peer_certificate=certificate,
            peer_identity=(
                subject_to_string(cast(DistinguishedName, certificate["subject"]))
                if certificate
                else None
            ),
        )
        events.append(self._info)
        # Tell the layer above what it now runs over (5.2): SASL may then send PLAIN
        # without an opt-in, and EXTERNAL stands on the certificates.
        secure = getattr(self.inner, "set_transport_security", None)
        if secure is not None:
            secure(
                encrypted=True,
                client_certificate=self.client and self.client_certificate,
                peer_identity=None if self.client else self._info.peer_identity,
            )
        return True

    def _read(self, events: list[Event], now: float) -> None:
        """Decrypt what the incoming buffer holds and hand the plaintext on."""
        chunks: list[bytes] = []
        closed = False
        failure: TLSFailed | None = None
        try:
            while chunk := self._ssl.read(_READ_SIZE):
                chunks.append(chunk)
            closed = True  # an empty read: the peer's close_notify
        except ssl.SSLWantReadError:
            pass  # the rest of a record is still to come
        except ssl.SSLZeroReturnError:
            closed = True  # close_notify, after ours was sent
        except ssl.SSLError as exc:
            failure = _failure(exc)
        if chunks:
            events.extend(self.inner.receive_data(b"".join(chunks), now))
        if failure is not None:
            self._fail(failure, events)
            events.extend(self.inner.receive_data(b"", now))
            return
        self._drain()  # what reading answered: TLS 1.3 key updates
        if closed:
            events.append(TLSClosed(truncated=False))
            events.extend(self.inner.receive_data(b"", now))
            if self.state is TLSState.CLOSING:
                self.state = TLSState.CLOSED
            else:
                self._peer_closed = True  # our close_notify goes with data_to_send()

    def _eof(self, events: list[Event], now: float) -> None:
        """The transport closed."""
        if self.state in (TLSState.HEADER, TLSState.HANDSHAKE):
            self._fail(
                TLSFailed(
                    error="the transport closed before the TLS handshake completed",
                    reason="EOF_DURING_HANDSHAKE",
                ),
                events,
            )
        elif not self._peer_closed:  # close_notify was not seen: the stream was cut
            self.state = TLSState.CLOSED
            events.append(TLSClosed(truncated=True))
            events.extend(self.inner.receive_data(b"", now))

    def _encrypt_inner(self) -> None:
        plaintext = self.inner.data_to_send()
        if plaintext:
            try:
                self._ssl.write(plaintext)
            except ssl.SSLError as exc:
                # Reported, with the inner object's end of stream, by the next call that
                # returns events.
                self._fail(_failure(exc), self._deferred)
                self._deferred_eof = True
                return
            self._drain()

    def _take_deferred(self, now: float) -> list[Event]:
        events, self._deferred = self._deferred, []
        if self._deferred_eof:
            self._deferred_eof = False
            events.extend(self.inner.receive_data(b"", now))
        return events

    def _shutdown(self) -> None:
        """Send close_notify (ssl's unwrap)."""
        try:
            self._ssl.unwrap()
        except ssl.SSLWantReadError:  # the peer's close_notify has not come yet
            self.state = TLSState.CLOSING
        except ssl.SSLError:  # nothing can be said any more: just end
            self.state = TLSState.CLOSED
        else:
            self.state = TLSState.CLOSED
        self._drain()

    def _drain(self) -> None:
        if self._outgoing.pending:
            self._out.append(self._outgoing.read())

    def _fail(self, failure: TLSFailed, events: list[Event]) -> None:
        """Report the failure, keep TLS's alert as the last bytes sent, and end."""
        self._drain()
        self._incoming.read()  # drop what will never be read
        self.state = TLSState.FAILED
        events.append(failure)


class TLSOrPlain:
    """A server's plain port that also offers TLS (core spec 5.2): the client's first bytes
    choose. The TLS protocol header ``AMQP 2.1.0.0`` starts a :class:`TLSLayer` (which
    answers it and negotiates TLS; the inner object then meets the client's next header,
    SASL's or AMQP's, inside TLS); any other header goes to ``inner`` unchanged, which
    answers it as core spec 2.2 says (the bare AMQP or the SASL header taken, anything
    else answered with its own and ended).

    At most 8 bytes wait for the choice (fewer as soon as one differs from the TLS header);
    until then nothing is sent (a server speaks after the client's header) and the inner
    object's output waits inside it. :attr:`tls` is the layer once TLS was chosen, else
    None. Drive it like the engine: ``receive_data``, ``data_to_send``, ``next_deadline``,
    ``handle_timer`` and ``close`` (the layer's, once TLS was chosen)."""

    def __init__(self, inner: ByteLayer, context: ssl.SSLContext) -> None:
        self.inner = inner
        self._context = context
        self._seen = b""
        self._chosen: ByteLayer | None = None
        #: The TLS layer, once the client's TLS header chose it.
        self.tls: TLSLayer | None = None

    def __repr__(self) -> str:
        chosen = "undecided" if self._chosen is None else "tls" if self.tls else "plain"
        return f"<TLSOrPlain {chosen}>"

    def receive_data(self, data: bytes, now: float) -> list[Event]:
        """Take bytes from the network (empty: the transport closed); return what happened,
        as the chosen layer reports it."""
        chosen = self._chosen
        if chosen is None:
            seen = self._seen + data
            if data and len(seen) < 8 and TLS_HEADER.startswith(seen):
                self._seen = seen  # still possibly the TLS header
                return []
            self._seen = b""
            if seen[:8] == TLS_HEADER:
                chosen = self.tls = TLSLayer(self.inner, self._context, client=False)
            else:
                chosen = self.inner
            self._chosen = chosen
            events = chosen.receive_data(seen, now) if seen else []
            if not data:  # the transport closed (after what was seen, if anything)
                events.extend(chosen.receive_data(b"", now))
            return events
        return chosen.receive_data(data, now)

    def data_to_send(self) -> bytes:
        """The chosen layer's bytes; none before the choice."""
        return b"" if self._chosen is None else self._chosen.data_to_send()

    def next_deadline(self) -> float | None:
        """The inner object's next deadline (through the TLS layer, once chosen)."""
        deadline = getattr(self._chosen or self.inner, "next_deadline", None)
        return None if deadline is None else cast("float | None", deadline())

    def handle_timer(self, now: float) -> list[Event]:
        """Pass the timer on (through the TLS layer, once chosen)."""
        handle = getattr(self._chosen or self.inner, "handle_timer", None)
        return [] if handle is None else cast("list[Event]", handle(now))

    def close(self) -> None:
        """End TLS (close_notify, see :meth:`TLSLayer.close`) if it was chosen."""
        if self.tls is not None:
            self.tls.close()


def _failure(exc: ssl.SSLError) -> TLSFailed:
    return TLSFailed(
        error=_SSL_SUFFIX.sub("", str(exc)),
        reason=getattr(exc, "reason", None),
        verify_error=getattr(exc, "verify_message", None),
    )


# -- certificates' subjects -------------------------------------------------------------------

#: RFC 4514 section 3's attribute type names, keyed by the names :mod:`ssl` decodes.
_RFC4514_NAMES = {
    "commonName": "CN",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
_ESCAPED = re.compile(r'([,+"\\<>;])')


def _escape(value: str) -> str:
    out = _ESCAPED.sub(r"\\\1", value).replace("\x00", "\\00")
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and len(value) > 1:
        out = out[:-1] + "\\ "
    return out


def subject_to_string(subject: DistinguishedName) -> str | None:
    """A certificate subject, as :meth:`ssl.SSLObject.getpeercert` decodes it (a tuple of
    relative distinguished names, most significant first), as an RFC 4514 string: least
    significant first, e.g. ``"CN=alice,OU=Dev,O=Example,C=GB"``. Attribute types RFC 4514
    names are abbreviated (CN, L, ST, O, OU, C, STREET, DC, UID), others keep the name ssl
    gives (``emailAddress``, or a dotted OID); values are escaped as RFC 4514 requires. An
    empty subject gives None: it identifies no one."""
    rdns = [
        "+".join(f"{_RFC4514_NAMES.get(name, name)}={_escape(value)}" for name, value in rdn)
        for rdn in reversed(subject)
    ]
    return ",".join(rdns) or None


# -- contexts -------------------------------------------------------------------------------


def client_context(
    *,
    cafile: str | None = None,
    capath: str | None = None,
    cadata: str | bytes | None = None,
    certfile: str | None = None,
    keyfile: str | None = None,
    password: _Password | None = None,
    verify: bool = True,
    check_hostname: bool = True,
    minimum_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2,
) -> ssl.SSLContext:
    """An :class:`ssl.SSLContext` for a TLS client (core spec 5.2: "The TLS client MUST
    validate the certificate presented by the TLS server").

    As :func:`ssl.create_default_context`: the server's certificate is verified against
    ``cafile``/``capath``/``cadata``, or the system's trusted CAs if none is given, and must
    match the host name given to :class:`TLSLayer` as ``server_hostname``. TLS 1.2 at least.
    ``verify=False`` turns verification (and the host name check) off, and must be asked
    for; ``check_hostname=False`` keeps verification but skips the name. ``certfile`` (with
    ``keyfile`` and its ``password``, if separate or encrypted) is our client certificate.
    The password is used once, to load the key, and not kept."""
    context = ssl.create_default_context(
        ssl.Purpose.SERVER_AUTH, cafile=cafile, capath=capath, cadata=cadata
    )
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.check_hostname = check_hostname
    _configure(context, certfile, keyfile, password, minimum_version)
    return context


def server_context(
    certfile: str,
    keyfile: str | None = None,
    password: _Password | None = None,
    *,
    cafile: str | None = None,
    capath: str | None = None,
    cadata: str | bytes | None = None,
    require_client_cert: bool = False,
    minimum_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2,
) -> ssl.SSLContext:
    """An :class:`ssl.SSLContext` for a TLS server with the certificate in ``certfile``
    (its key in ``keyfile`` if separate, decrypted with ``password``, which is not kept).
    TLS 1.2 at least.

    Client certificates are verified against ``cafile``/``capath``/``cadata`` only, never
    the system's CAs (any publicly issued certificate would otherwise name an identity).
    Without them no client certificate is asked for. With them one is asked for and
    verified if sent; ``require_client_cert`` refuses clients without one."""
    has_ca = cafile is not None or capath is not None or cadata is not None
    if require_client_cert and not has_ca:
        raise LocalProtocolError("require_client_cert needs cafile, capath or cadata")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    if has_ca:
        context.load_verify_locations(cafile=cafile, capath=capath, cadata=cadata)
        context.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_OPTIONAL
    _configure(context, certfile, keyfile, password, minimum_version)
    return context


def _configure(
    context: ssl.SSLContext,
    certfile: str | None,
    keyfile: str | None,
    password: _Password | None,
    minimum_version: ssl.TLSVersion,
) -> None:
    if certfile is not None:
        context.load_cert_chain(certfile, keyfile, password)
    elif keyfile is not None or password is not None:
        raise LocalProtocolError("keyfile and password go with a certfile")
    context.minimum_version = minimum_version
    # Renegotiation (TLS 1.2) could stall a write behind a read; the layer does not need it.
    context.options |= ssl.OP_NO_RENEGOTIATION
