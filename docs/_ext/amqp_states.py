"""Sphinx directive ``.. amqp-transitions:: connection|session|link|transaction``: draws a state
machine's transition table, straight from the engine's own tables, so the docs cannot drift
from the code. ``.. amqp091-transitions:: client|server`` does the same for the AMQP 0-9-1
connection: each state and the ``connection`` methods it takes in that role."""

from __future__ import annotations

from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive

import amqp_sansio as amqp
import amqp_sansio.engine.amqp10
from amqp_sansio.engine.amqp091 import states as amqp091_states

_MACHINES: dict[str, tuple[Any, Any, Any]] = {
    "connection": (
        amqp.ConnectionState,
        amqp.engine.amqp10.states.ConnectionInput,
        amqp.engine.amqp10.states.CONNECTION_TRANSITIONS,
    ),
    "session": (
        amqp.SessionState,
        amqp.engine.amqp10.states.SessionInput,
        amqp.engine.amqp10.states.SESSION_TRANSITIONS,
    ),
    "link": (
        amqp.LinkState,
        amqp.engine.amqp10.states.LinkInput,
        amqp.engine.amqp10.states.LINK_TRANSITIONS,
    ),
    "transaction": (
        amqp.engine.amqp10.states.TransactionState,
        amqp.engine.amqp10.states.TransactionInput,
        amqp.engine.amqp10.states.TRANSACTION_TRANSITIONS,
    ),
}


def _row(cells: list[str], header: bool = False) -> nodes.row:
    row = nodes.row()
    for text in cells:
        entry = nodes.entry()
        entry += nodes.paragraph(text=text)
        row += entry
    return row


class Transitions(Directive):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        states, inputs, table = _MACHINES[self.arguments[0]]
        used = [i for i in inputs if any(k[1] is i for k in table)]
        tgroup = nodes.tgroup(cols=len(used) + 1)
        for _ in range(len(used) + 1):
            tgroup += nodes.colspec(colwidth=12)
        head = nodes.thead()
        head += _row(["state \\ input", *[i.value for i in used]])
        tgroup += head
        body = nodes.tbody()
        for state in states:
            cells = [state.value]
            cells += [table[(state, i)].value if (state, i) in table else "" for i in used]
            body += _row(cells)
        tgroup += body
        table_node = nodes.table()
        table_node += tgroup
        return [table_node]


class Transitions091(Directive):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        role = amqp091_states.Role(self.arguments[0])
        tgroup = nodes.tgroup(cols=2)
        tgroup += nodes.colspec(colwidth=12)
        tgroup += nodes.colspec(colwidth=40)
        head = nodes.thead()
        head += _row(["state", "connection methods it takes (anything else on channel 0: 503)"])
        tgroup += head
        body = nodes.tbody()
        for state in amqp091_states.ROLE_STATES[role]:
            taken = [m.NAME for (r, s, m) in amqp091_states.TABLE if r is role and s is state]
            body += _row([state.value, ", ".join(taken) or "(none)"])
        tgroup += body
        table_node = nodes.table()
        table_node += tgroup
        return [table_node]


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("amqp-transitions", Transitions)
    app.add_directive("amqp091-transitions", Transitions091)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
