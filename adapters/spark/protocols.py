"""Which protocol the Spark source and sink speak (option ``protocol``): the one table of
the Spark adapter from a protocol's name to its folder, with what the options need to know
of it. Each folder (:mod:`.amqp10`, :mod:`.amqp091`, :mod:`.amqp010`) provides the same
calls (:class:`.calls.Calls`), imported only when a job asks for that protocol
(:func:`.calls.of`): a 1.0 job never loads the 0-9-1 or 0-10 client. A new protocol is
one more row here and one more folder."""

from __future__ import annotations

import attrs

__all__ = ["DEFAULT", "SPECIFIC", "TABLE", "Protocol", "check", "owners"]


@attrs.frozen
class Protocol:
    """A row of :data:`TABLE`."""

    #: The folder (a subpackage of :mod:`amqp_sansio.adapters.spark`) of its calls.
    folder: str
    #: What users call it in errors (``AMQP 0-9-1``).
    title: str
    #: The options (lower case) that this protocol has and some other lacks.
    options: frozenset[str]
    #: The read modes it serves (``stream``: nodes with offsets).
    modes: tuple[str, ...] = ("queue", "stream")


_VHOST = frozenset({"virtualhost"})

#: Each protocol by the name option ``protocol`` takes; the first is the default.
TABLE: dict[str, Protocol] = {
    "1.0": Protocol(
        "amqp10", "AMQP 1.0", frozenset({"idletimeout", "containerid", "saslmechanisms"})
    ),
    "0-9-1": Protocol("amqp091", "AMQP 0-9-1", _VHOST),
    "0-10": Protocol("amqp010", "AMQP 0-10", _VHOST, modes=("queue",)),
}
DEFAULT = next(iter(TABLE))


def check(name: str) -> Protocol:
    """The row of the protocol ``name``; ValueError naming the accepted ones otherwise."""
    found = TABLE.get(name)
    if found is None:
        accepted = ", ".join(repr(n) for n in TABLE)
        raise ValueError(f"option 'protocol' must be one of {accepted}, not {name!r}")
    return found


def owners(option: str) -> list[str]:
    """The protocols (their titles) that have ``option`` (lower case), of those that
    some lack."""
    return [p.title for p in TABLE.values() if option in p.options]


#: The options some protocol lacks (each is checked against the protocol asked for).
SPECIFIC = frozenset().union(*(p.options for p in TABLE.values()))
