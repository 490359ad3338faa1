"""Reconnection's policy and back-off schedule, I/O-free: the time comes in as ``now``, and
the schedule says when, and to which URL, the next attempt goes (the adapters sleep and
connect). See :doc:`adapters` ("Reconnection")."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .url import AMQPURL, parse_url

__all__ = ["Backoff", "Reconnect"]


@dataclass(frozen=True)
class Reconnect:
    """Opt-in reconnection (``connect(url, reconnect=Reconnect(...))``; ``reconnect=True``
    takes these defaults).

    ``urls``: fallbacks, tried after the connection's own URL, in turn. ``initial_delay``,
    ``multiplier``, ``max_delay``: the wait before the n-th attempt in a row (n = 0, 1, ...)
    is ``min(max_delay, initial_delay * multiplier ** n)``, less a random part of up to
    ``jitter`` of it (so that many clients do not all come back at once). ``max_attempts``:
    give up after that many failed attempts in a row (None: never)."""

    urls: Sequence[str] = field(default_factory=tuple)
    initial_delay: float = 0.1
    max_delay: float = 5.0
    multiplier: float = 2.0
    max_attempts: int | None = None
    jitter: float = 0.1

    def __post_init__(self) -> None:
        if self.initial_delay < 0 or self.max_delay < 0 or self.multiplier < 1:
            raise ValueError("delays are >= 0 and the multiplier >= 1")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter is a fraction, from 0 to 1")
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError("max_attempts is at least 1 (or None: forever)")

    def delay(self, attempt: int, rand: float = 0.0) -> float:
        """The wait before attempt ``attempt`` (0 for the first after a loss); ``rand``, in
        [0, 1), takes away up to ``jitter`` of it."""
        base = min(self.max_delay, self.initial_delay * self.multiplier**attempt)
        return base * (1.0 - self.jitter * rand)


class Backoff:
    """The schedule of one connection's attempts: the URLs in turn (the connection's own,
    then the fallbacks, read by ``parse``: the protocol's URLs), each after
    :meth:`Reconnect.delay`. A lost connection tries its own
    URL again first; each failed attempt moves on to the next URL. The first connection
    (``connected=False``) makes its first attempt at once."""

    def __init__(
        self,
        policy: Reconnect,
        url: AMQPURL,
        *,
        rand: Callable[[], float] = random.random,
        parse: Callable[[str], AMQPURL] = parse_url,
    ) -> None:
        self.policy = policy
        self.urls = [url, *(parse(u) for u in policy.urls)]
        self._rand = rand
        #: Failed attempts in a row (since the last success).
        self.failures = 0
        self._index = 0
        self._first = True
        self._at: float | None = None

    @property
    def url(self) -> AMQPURL:
        """Where the next (or current) attempt goes."""
        return self.urls[self._index]

    def next_attempt(self, now: float) -> float:
        """When the next attempt is due (fixed at the first call after a loss or failure)."""
        if self._at is None:
            if self._first:
                self._at = now
            else:
                self._at = now + self.policy.delay(self.failures, self._rand())
        return self._at

    def lost(self) -> None:
        """An established connection was lost: the next attempt is scheduled afresh."""
        self._first = False
        self._at = None

    def failed(self) -> bool:
        """The attempt failed: move to the next URL. False once ``max_attempts`` failed in a
        row (give up)."""
        self._first = False
        self._at = None
        self.failures += 1
        self._index = (self._index + 1) % len(self.urls)
        limit = self.policy.max_attempts
        return limit is None or self.failures < limit

    def succeeded(self) -> None:
        """The connection is open again: the next loss starts the schedule over."""
        self.failures = 0
        self._at = None
