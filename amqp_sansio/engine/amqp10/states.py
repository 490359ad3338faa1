"""The connection, session, link and transaction state machines as data (core spec 2.4.6,
2.5.5, 2.6, 4.2), and the sets of states derived from them that the engine reads.

Each machine is a dict from ``(state, input)`` to the next state, taken from the spec's
state diagrams. A pair that is not in a table is not allowed: for a local input that is a
:class:`~amqp_sansio.LocalProtocolError`, for a remote one a protocol error the engine
answers with close, end or detach. The docs draw their state diagrams from these tables.
"""

from __future__ import annotations

import enum

__all__ = [
    "CONNECTION_TRANSITIONS",
    "LINK_TRANSITIONS",
    "SESSION_TRANSITIONS",
    "ConnectionInput",
    "ConnectionState",
    "LinkInput",
    "LinkState",
    "SessionInput",
    "SessionState",
    "TRANSACTION_TRANSITIONS",
    "TransactionInput",
    "TransactionState",
]


class ConnectionState(enum.Enum):
    """Connection states (core spec 2.4.6)."""

    __hash__ = object.__hash__  # members are singletons: hash them as such, in C

    START = "START"
    HDR_RCVD = "HDR_RCVD"
    HDR_SENT = "HDR_SENT"
    HDR_EXCH = "HDR_EXCH"
    OPEN_PIPE = "OPEN_PIPE"
    OC_PIPE = "OC_PIPE"
    OPEN_RCVD = "OPEN_RCVD"
    OPEN_SENT = "OPEN_SENT"
    CLOSE_PIPE = "CLOSE_PIPE"
    OPENED = "OPENED"
    CLOSE_RCVD = "CLOSE_RCVD"
    CLOSE_SENT = "CLOSE_SENT"
    DISCARDING = "DISCARDING"
    END = "END"


class ConnectionInput(enum.Enum):
    """What moves a connection: a header, open or close sent (S) or received (R)."""

    __hash__ = object.__hash__  # members are singletons: hash them as such, in C

    S_HDR = "S:HDR"
    R_HDR = "R:HDR"
    R_BAD_HDR = "R:HDR[!=S:HDR]"
    S_OPEN = "S:OPEN"
    R_OPEN = "R:OPEN"
    S_CLOSE = "S:CLOSE"
    S_CLOSE_ERROR = "S:CLOSE(error)"
    R_CLOSE = "R:CLOSE"


_C = ConnectionState
_CI = ConnectionInput

#: Figure 2.23 of the core spec. ``S:CLOSE(error)`` leads to DISCARDING where a plain close
#: leads to CLOSE_SENT (2.4.6: DISCARDING is CLOSE_SENT triggered by an error).
CONNECTION_TRANSITIONS: dict[tuple[ConnectionState, ConnectionInput], ConnectionState] = {
    (_C.START, _CI.S_HDR): _C.HDR_SENT,
    (_C.START, _CI.R_HDR): _C.HDR_RCVD,
    (_C.START, _CI.R_BAD_HDR): _C.END,
    (_C.HDR_RCVD, _CI.S_HDR): _C.HDR_EXCH,
    (_C.HDR_SENT, _CI.R_HDR): _C.HDR_EXCH,
    (_C.HDR_SENT, _CI.R_BAD_HDR): _C.END,
    (_C.HDR_SENT, _CI.S_OPEN): _C.OPEN_PIPE,
    (_C.HDR_EXCH, _CI.S_OPEN): _C.OPEN_SENT,
    (_C.HDR_EXCH, _CI.R_OPEN): _C.OPEN_RCVD,
    (_C.OPEN_PIPE, _CI.R_HDR): _C.OPEN_SENT,
    (_C.OPEN_PIPE, _CI.R_BAD_HDR): _C.END,
    (_C.OPEN_PIPE, _CI.S_CLOSE): _C.OC_PIPE,
    (_C.OPEN_PIPE, _CI.S_CLOSE_ERROR): _C.OC_PIPE,
    (_C.OC_PIPE, _CI.R_HDR): _C.CLOSE_PIPE,
    (_C.OC_PIPE, _CI.R_BAD_HDR): _C.END,
    (_C.OPEN_RCVD, _CI.S_OPEN): _C.OPENED,
    (_C.OPEN_SENT, _CI.R_OPEN): _C.OPENED,
    (_C.OPEN_SENT, _CI.S_CLOSE): _C.CLOSE_PIPE,
    (_C.OPEN_SENT, _CI.S_CLOSE_ERROR): _C.CLOSE_PIPE,
    (_C.CLOSE_PIPE, _CI.R_OPEN): _C.CLOSE_SENT,
    (_C.OPENED, _CI.S_CLOSE): _C.CLOSE_SENT,
    (_C.OPENED, _CI.S_CLOSE_ERROR): _C.DISCARDING,
    (_C.OPENED, _CI.R_CLOSE): _C.CLOSE_RCVD,
    (_C.CLOSE_RCVD, _CI.S_CLOSE): _C.END,
    (_C.CLOSE_RCVD, _CI.S_CLOSE_ERROR): _C.END,
    (_C.CLOSE_SENT, _CI.R_CLOSE): _C.END,
    (_C.DISCARDING, _CI.R_CLOSE): _C.END,
}


class SessionState(enum.Enum):
    """Session states (core spec 2.5.5)."""

    __hash__ = object.__hash__  # members are singletons: hash them as such, in C

    UNMAPPED = "UNMAPPED"
    BEGIN_SENT = "BEGIN_SENT"
    BEGIN_RCVD = "BEGIN_RCVD"
    MAPPED = "MAPPED"
    END_SENT = "END_SENT"
    END_RCVD = "END_RCVD"
    DISCARDING = "DISCARDING"


class SessionInput(enum.Enum):
    """What moves a session: begin or end sent (S) or received (R)."""

    __hash__ = object.__hash__  # members are singletons: hash them as such, in C

    S_BEGIN = "S:BEGIN"
    R_BEGIN = "R:BEGIN"
    S_END = "S:END"
    S_END_ERROR = "S:END(error)"
    R_END = "R:END"


_S = SessionState
_SI = SessionInput

#: Figure 2.30 of the core spec.
SESSION_TRANSITIONS: dict[tuple[SessionState, SessionInput], SessionState] = {
    (_S.UNMAPPED, _SI.S_BEGIN): _S.BEGIN_SENT,
    (_S.UNMAPPED, _SI.R_BEGIN): _S.BEGIN_RCVD,
    (_S.BEGIN_SENT, _SI.R_BEGIN): _S.MAPPED,
    (_S.BEGIN_RCVD, _SI.S_BEGIN): _S.MAPPED,
    (_S.MAPPED, _SI.S_END): _S.END_SENT,
    (_S.MAPPED, _SI.S_END_ERROR): _S.DISCARDING,
    (_S.MAPPED, _SI.R_END): _S.END_RCVD,
    (_S.END_SENT, _SI.R_END): _S.UNMAPPED,
    (_S.DISCARDING, _SI.R_END): _S.UNMAPPED,
    (_S.END_RCVD, _SI.S_END): _S.UNMAPPED,
    (_S.END_RCVD, _SI.S_END_ERROR): _S.UNMAPPED,
}


class LinkState(enum.Enum):
    """Link endpoint states (core spec 2.6.2-2.6.6): which of the output handle (ours, sent
    in our attach) and input handle (the peer's) are assigned."""

    __hash__ = object.__hash__  # members are singletons: hash them as such, in C

    DETACHED = "DETACHED"
    ATTACH_SENT = "ATTACH_SENT"
    ATTACH_RCVD = "ATTACH_RCVD"
    ATTACHED = "ATTACHED"
    DETACH_SENT = "DETACH_SENT"
    DETACH_RCVD = "DETACH_RCVD"


class LinkInput(enum.Enum):
    """What moves a link: attach or detach sent (S) or received (R)."""

    __hash__ = object.__hash__  # members are singletons: hash them as such, in C

    S_ATTACH = "S:ATTACH"
    R_ATTACH = "R:ATTACH"
    S_DETACH = "S:DETACH"
    R_DETACH = "R:DETACH"


_L = LinkState
_LI = LinkInput

#: Attach and detach each assign or release one handle (2.6.2); a peer may refuse a link by
#: answering an attach with an attach and an immediate detach (2.6.3).
LINK_TRANSITIONS: dict[tuple[LinkState, LinkInput], LinkState] = {
    (_L.DETACHED, _LI.S_ATTACH): _L.ATTACH_SENT,
    (_L.DETACHED, _LI.R_ATTACH): _L.ATTACH_RCVD,
    (_L.ATTACH_SENT, _LI.R_ATTACH): _L.ATTACHED,
    (_L.ATTACH_SENT, _LI.S_DETACH): _L.DETACH_SENT,
    (_L.ATTACH_RCVD, _LI.S_ATTACH): _L.ATTACHED,
    (_L.ATTACHED, _LI.S_DETACH): _L.DETACH_SENT,
    (_L.ATTACHED, _LI.R_DETACH): _L.DETACH_RCVD,
    (_L.DETACH_SENT, _LI.R_DETACH): _L.DETACHED,
    (_L.DETACH_SENT, _LI.R_ATTACH): _L.DETACH_SENT,
    (_L.DETACH_RCVD, _LI.S_DETACH): _L.DETACHED,
}


# -- sets derived from the tables, read by the engine -------------------------------------

#: Connection states where our close must wait for our open; where frames other than open
#: may be sent (2.4.7, Figure 2.24); where the peer has opened, so session frames may arrive
#: (in OPEN_RCVD a client's pipelined frames come before we answer its open, 2.4.2); where
#: frames may still arrive; after our close (when the peer's frames are set aside).
CONNECTION_OPEN_FIRST = frozenset(
    {
        ConnectionState.HDR_SENT,
        ConnectionState.HDR_EXCH,
        ConnectionState.OPEN_RCVD,
    }
)
CONNECTION_SENDING = frozenset(
    {
        ConnectionState.OPEN_PIPE,
        ConnectionState.OPEN_SENT,
        ConnectionState.OPENED,
        ConnectionState.CLOSE_RCVD,
    }
)
CONNECTION_PEER_OPENED = frozenset(
    {
        ConnectionState.OPEN_RCVD,
        ConnectionState.OPENED,
        ConnectionState.CLOSE_RCVD,
    }
)
CONNECTION_RECEIVING = frozenset(
    set(ConnectionState) - {ConnectionState.END, ConnectionState.CLOSE_RCVD}
)
CONNECTION_ENDING = (ConnectionState.DISCARDING, ConnectionState.CLOSE_SENT)
#: Session states in which we may send, in which the peer's frames are handled, and after
#: our end (when they are set aside).
SESSION_SENDING = (SessionState.BEGIN_SENT, SessionState.MAPPED, SessionState.END_RCVD)
SESSION_MAPPED = (SessionState.BEGIN_RCVD, SessionState.MAPPED)
SESSION_ENDING = (SessionState.DISCARDING, SessionState.END_SENT)


# -- transactions (core spec part 4) -------------------------------------------------------


class TransactionState(enum.Enum):
    """Where a transaction is (core spec 4.2, 4.3). The same states serve the controller's
    :class:`~amqp_sansio.Transaction` and the resource's
    :class:`~amqp_sansio.engine.amqp10.transactions.TransactionRecord`."""

    __hash__ = object.__hash__

    #: The declare is sent; no txn-id yet.
    DECLARING = "DECLARING"
    #: Declared: work may be associated with it.
    ACTIVE = "ACTIVE"
    #: The discharge is sent (controller) or being answered (resource).
    DISCHARGING = "DISCHARGING"
    #: Discharged with ``fail=false`` and accepted: its work took effect.
    COMMITTED = "COMMITTED"
    #: Rolled back, at the controller's request or not: its work is void.
    ROLLED_BACK = "ROLLED_BACK"
    #: The declare was refused, or the control link went before the answer.
    FAILED = "FAILED"


class TransactionInput(enum.Enum):
    """What moves a transaction."""

    __hash__ = object.__hash__

    DECLARED = "declared"
    DECLARE_REFUSED = "declare refused"
    DISCHARGE = "discharge"
    COMMITTED = "commit accepted"
    ROLLED_BACK = "rolled back"
    LINK_LOST = "control link lost"


_T = TransactionState
_TI = TransactionInput

#: Core spec 4.1 to 4.3. ``rolled back`` is a discharge with ``fail=true`` accepted, a
#: discharge rejected (a resource-initiated rollback, 4.4.2), or, at the resource, the
#: application rolling back a live transaction (a time-out). A control link that goes takes
#: its transactions with it (4.1).
TRANSACTION_TRANSITIONS: dict[tuple[TransactionState, TransactionInput], TransactionState] = {
    (_T.DECLARING, _TI.DECLARED): _T.ACTIVE,
    (_T.DECLARING, _TI.DECLARE_REFUSED): _T.FAILED,
    (_T.DECLARING, _TI.LINK_LOST): _T.FAILED,
    (_T.ACTIVE, _TI.DISCHARGE): _T.DISCHARGING,
    (_T.ACTIVE, _TI.ROLLED_BACK): _T.ROLLED_BACK,
    (_T.ACTIVE, _TI.LINK_LOST): _T.ROLLED_BACK,
    (_T.DISCHARGING, _TI.COMMITTED): _T.COMMITTED,
    (_T.DISCHARGING, _TI.ROLLED_BACK): _T.ROLLED_BACK,
    (_T.DISCHARGING, _TI.LINK_LOST): _T.ROLLED_BACK,
}

#: The states of a live transaction: work may still be associated with it, or is pending.
TRANSACTION_LIVE = (_T.ACTIVE, _T.DISCHARGING)
