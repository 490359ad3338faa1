"""A 0-10 session's execution state, both directions, without I/O (0-10 spec, class
``session``; its sender and receiver of commands), and the store that keeps a detached
session for its time-out so that it can be resumed.

The sender numbers our commands (from 0, ``sequence-no`` serial numbers), keeps each one
the peer has not completed (to replay it after a resume, from a ``command-point``), and
frees it on the peer's ``session.completed``. The receiver numbers the peer's commands
from its ``command-point``, keeps the ids the application completed until the peer says it
knows (``session.known-completed``), and completes an ``execution.sync`` once every
command before it is complete (0-10 spec, ``execution.sync``).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Sequence

from .sequence import SequenceSet, unwrap, wire
from .states import SessionState

__all__ = ["DUPLICATE", "Session", "SessionStore"]

#: What :meth:`Session.next_incoming` gives for a command received before: a replay.
DUPLICATE = -1

#: One encoded command: its segments, (segment type, payload) each.
Segments = Sequence[tuple[int, bytes]]


class Session:
    """One session's state (``name``; ``channel`` while attached)."""

    def __init__(self, name: bytes, channel: int, identity: str | None) -> None:
        self.name = name
        self.channel = channel
        self.identity = identity
        self.state = SessionState.ATTACHING
        #: The negotiated time-out, in seconds: how long the state is kept once detached.
        self.timeout = 0
        #: While detached and kept: when the state is forgotten.
        self.expires: float | None = None
        #: An exception ended it: it is not kept.
        self.failed = False
        #: Client: the time-out asked for on attach (``session.request-timeout``).
        self.requested_timeout = 0
        #: Client: attaching again to resume (not a new session).
        self.resuming = False
        # the sender of commands
        self.next_out = 0
        self._outgoing: dict[int, tuple[Segments, int]] = {}
        self.outstanding_bytes = 0
        # the receiver of commands
        self._next_in: int | None = None
        self._seen: int | None = None
        self._incomplete: set[int] = set()
        self._lowest: list[int] = []  # a heap over _incomplete, lazily pruned
        self._syncs: deque[int] = deque()
        self._completed = SequenceSet()
        self._completed_dirty = False
        self._known = SequenceSet()
        #: The peer asked for ``known-completed`` without delay (``timely-reply``).
        self._known_due = False

    def __repr__(self) -> str:
        return f"<amqp010 Session {self.name!r} {self.state.value} channel {self.channel}>"

    @property
    def key(self) -> tuple[str | None, bytes]:
        """What names the session in a store: its principal and its name (0-10 spec,
        ``session.attach`` rule "scoping")."""
        return self.identity, self.name

    # -- the sender -----------------------------------------------------------------------

    def sent(self, segments: Segments) -> int:
        """Number the command whose encoded ``segments`` are being sent and keep it until
        the peer completes it; gives its id (wire)."""
        command_id = self.next_out
        self.next_out += 1
        size = sum(len(payload) for _, payload in segments)
        self._outgoing[command_id] = (segments, size)
        self.outstanding_bytes += size
        return wire(command_id)

    def unreplayed(self) -> list[tuple[int, Segments]]:
        """The commands the peer has not completed, lowest id first (unwrapped)."""
        return [(cid, segments) for cid, (segments, _) in self._outgoing.items()]

    def peer_completed(
        self, ranges: Sequence[tuple[int, int]], *, timely: bool = False
    ) -> list[int]:
        """The peer's ``session.completed`` (wire ranges; ``timely``: its ``timely-reply``
        set): the ids of ours it frees, wire."""
        self._known_due = self._known_due or timely
        done: list[int] = []
        reference = self.next_out
        for low, high in ranges:
            first = unwrap(low, reference)
            last = first + ((high - low) & 0xFFFFFFFF)
            if len(self._outgoing) <= last - first:
                candidates = [c for c in self._outgoing if first <= c <= last]
            else:
                candidates = [c for c in range(first, last + 1) if c in self._outgoing]
            for command_id in candidates:
                _, size = self._outgoing.pop(command_id)
                self.outstanding_bytes -= size
                done.append(command_id)
            self._known.add(first, last)
        done.sort()
        return [wire(c) for c in done]

    def take_known_completed(self) -> tuple[tuple[int, int], ...] | None:
        """The ``known-completed`` echo owed to the peer's ``completed`` (0-10 spec,
        ``session.completed`` rule "known-completed-reply"), once; None if none. It waits
        (merged, as the rule "merged-reply" allows) until a ``completed`` with
        ``timely-reply`` asks for it: the spec lets the reply be delayed otherwise, and
        qpid.messaging's driver cannot take an unasked ``known-completed`` (its handler of
        that control is misnamed, so the control fails it)."""
        if not self._known or not self._known_due:
            return None
        self._known_due = False
        ranges = tuple((wire(low), wire(high)) for low, high in self._known.ranges)
        self._known.clear()
        return ranges

    # -- the receiver ---------------------------------------------------------------------

    @property
    def numbered(self) -> bool:
        """A ``command-point`` has set where the peer's commands are counted from."""
        return self._next_in is not None

    def command_point(self, command_id: int) -> None:
        """The peer's ``session.command-point``: its next command is ``command_id``. A
        peer resuming the session replays from a command it has not seen completed (one
        not completed here, or completed without its ``known-completed``, or one that
        never arrived); a point at a command received and known completed is a peer that
        starts the session's numbering again (a new client that took over a name kept
        for a transport gone): what was received before is forgotten, so that its
        commands are not taken for replays."""
        reference = self._seen if self._seen is not None else 0
        point = unwrap(command_id, reference)
        seen = self._seen
        if (
            seen is not None
            and point <= seen
            and point not in self._incomplete
            and point not in self._completed
        ):
            self._seen = None
            self._completed.clear()
            self._completed_dirty = False
        self._next_in = point

    def next_incoming(self) -> int:
        """Number the peer's next command (unwrapped); :data:`DUPLICATE` for one received
        before (replayed after a resume). Only when :attr:`numbered`."""
        assert self._next_in is not None
        command_id = self._next_in
        self._next_in += 1
        if self._seen is not None and command_id <= self._seen:
            return DUPLICATE
        self._seen = command_id
        self._incomplete.add(command_id)
        heapq.heappush(self._lowest, command_id)
        return command_id

    @property
    def incomplete_count(self) -> int:
        """The peer's commands received and not completed yet."""
        return len(self._incomplete)

    def incoming_id(self, command_id: int) -> int | None:
        """The unwrapped id of the peer's command ``command_id`` (wire), if it was received
        and not completed yet."""
        reference = self._seen if self._seen is not None else 0
        found = unwrap(command_id, reference)
        return found if found in self._incomplete else None

    def sync_received(self, command_id: int) -> None:
        """``execution.sync`` ``command_id`` (unwrapped): complete once all before it are."""
        self._syncs.append(command_id)
        self._check_syncs()

    def complete(self, command_id: int) -> None:
        """The peer's command ``command_id`` (unwrapped, incomplete) is complete."""
        self._done(command_id)
        self._check_syncs()

    def _done(self, command_id: int) -> None:
        self._incomplete.discard(command_id)
        self._completed.add(command_id)
        self._completed_dirty = True

    def _check_syncs(self) -> None:
        syncs, lowest, incomplete = self._syncs, self._lowest, self._incomplete
        while syncs:
            while lowest[0] not in incomplete:  # the sync itself is incomplete
                heapq.heappop(lowest)
            if lowest[0] != syncs[0]:
                return
            self._done(syncs.popleft())

    def gap(self, ranges: Sequence[tuple[int, int]]) -> None:
        """The peer's ``session.gap``: no data will come for those ids; they count as
        completed (0-10 spec, ``session.gap`` rule "gap-confirmation-and-completion")."""
        reference = self._seen if self._seen is not None else (self._next_in or 0)
        for low, high in _pairs(ranges):
            first = unwrap(low, reference)
            last = first + (high - low)
            self._completed.add(first, last)
            self._completed_dirty = True
            if self._next_in is not None and first <= self._next_in <= last:
                self._next_in = last + 1
                self._seen = last if self._seen is None else max(self._seen, last)

    def known_completed(self, ranges: Sequence[tuple[int, int]]) -> None:
        """The peer's ``session.known-completed``: stop sending those ids."""
        reference = self._seen if self._seen is not None else 0
        for low, high in _pairs(ranges):
            first = unwrap(low, reference)
            self._completed.remove(first, first + (high - low))

    def completed_ranges(self) -> tuple[tuple[int, int], ...]:
        """The completed ids the peer does not know of yet, as wire ranges."""
        return tuple((wire(low), wire(high)) for low, high in self._completed.ranges)

    def resend_completed(self) -> None:
        """Send the completed set again on the next flush (after a resume: the last may
        have been lost with the transport)."""
        self._completed_dirty = bool(self._completed)

    def take_completed(self) -> tuple[tuple[int, int], ...] | None:
        """The ``session.completed`` to send, once per new completion; None if nothing
        was completed since the last."""
        if not self._completed_dirty:
            return None
        self._completed_dirty = False
        return self.completed_ranges()

    def expected(self) -> tuple[tuple[int, int], ...]:
        """The ``session.expected`` answer to a flush: the next command, or nothing before
        a command-point (0-10 spec, ``session.expected`` rules)."""
        if self._next_in is None:
            return ()
        return ((wire(self._next_in), wire(self._next_in)),)

    def transport_lost(self) -> None:
        """Detached: the next transport starts un-numbered (a ``command-point`` first)."""
        self._next_in = None


def _pairs(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Wire ranges with their length made explicit (a range may wrap past 2**32)."""
    return [(low, low + ((high - low) & 0xFFFFFFFF)) for low, high in ranges]


class SessionStore:
    """Detached sessions kept for their time-out, by principal and name, to be resumed
    on a later attach of the same name (0-10 spec, ``session.attach``,
    ``session.request-timeout``). One store may serve several connections (a server's,
    or a client's successive ones), as the session outlives its transport."""

    def __init__(self, max_sessions: int = 1024) -> None:
        self._max = max_sessions
        self._kept: dict[tuple[str | None, bytes], Session] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def __contains__(self, key: object) -> bool:
        return key in self._kept

    def keep(self, session: Session, now: float) -> float | None:
        """Keep ``session`` until ``now`` plus its time-out; gives that time, or None when
        it is not kept (a time-out of 0, or it failed)."""
        if session.failed or session.timeout <= 0:
            return None
        session.state = SessionState.DETACHED
        session.expires = now + session.timeout
        self._kept.pop(session.key, None)
        self._kept[session.key] = session
        while len(self._kept) > self._max:
            del self._kept[next(iter(self._kept))]
        return session.expires

    def take(self, key: tuple[str | None, bytes], now: float) -> Session | None:
        """The kept session ``key``, out of the store, if its time-out has not passed."""
        session = self._kept.pop(key, None)
        if session is None or session.expires is None or now >= session.expires:
            return None
        session.expires = None
        return session

    def expire(self, now: float) -> list[Session]:
        """Forget the sessions whose time-out has passed at ``now``; gives them."""
        gone = [s for s in self._kept.values() if s.expires is not None and now >= s.expires]
        for session in gone:
            del self._kept[session.key]
        return gone

    def next_expiry(self) -> float | None:
        """When the next kept session expires, or None."""
        times = [s.expires for s in self._kept.values() if s.expires is not None]
        return min(times) if times else None
