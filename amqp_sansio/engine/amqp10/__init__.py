"""The protocol engine (core spec part 2): the connection, its sessions and links, their
deliveries, the state tables that drive them, and transactions (part 4) on both sides.

The engine objects are exported by :mod:`amqp_sansio`; the public modules here are
:mod:`~amqp_sansio.engine.amqp10.states` (the state machines),
:mod:`~amqp_sansio.engine.amqp10.transactions` (the engine's side of transactions) and
:mod:`~amqp_sansio.engine.amqp10.serial` (serial-number arithmetic). The other modules are the
layout.
"""

from . import connection as connection
from . import serial as serial
from . import states as states
from . import transactions as transactions
