"""What every protocol's SASL exchange shares below the security layer: the outcome codes
of an exchange (RFC 4422 leaves them to the protocol; AMQP 1.0 numbers them, core spec
5.3.3.6, and AMQP 0-9-1, which has no outcome frame, answers a failed login with reply code
403, spec 1.5.2.2). The SASL mechanisms (:mod:`amqp_sansio.security.mechanisms`) report
their failures with these codes; each protocol's engine puts them on its wire."""

from __future__ import annotations

import enum

__all__ = ["SaslCode"]


class SaslCode(enum.IntEnum):
    """Outcome of a SASL exchange (core spec 5.3.3.6)."""

    OK = 0
    AUTH = 1
    SYS = 2
    SYS_PERM = 3
    SYS_TEMP = 4
