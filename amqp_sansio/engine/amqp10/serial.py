"""RFC 1982 serial-number arithmetic on 32-bit values, for AMQP 1.0's transfer ids, delivery
ids and delivery counts (core spec 2.5.6, 2.6.7, 2.8.10): the shared
:mod:`amqp_sansio.engine.serial`, under the path the 1.0 engine has always had.
"""

from __future__ import annotations

from ..serial import serial_add, serial_diff, serial_le, serial_lt

__all__ = ["serial_add", "serial_diff", "serial_le", "serial_lt"]
