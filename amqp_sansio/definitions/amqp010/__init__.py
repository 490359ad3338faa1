"""AMQP 0-10's definitions: the domains, structs and controls (``spec``) and the commands
(``commands``) of the specification, generated from Qpid's XML with its errata, and their
codec (``compounds``; 0-10 spec 3.3, 4.5)."""

from __future__ import annotations

from . import commands, spec
from .commands import *  # noqa: F403
from .compounds import (
    COMMANDS,
    CONTROLS,
    STRUCTS,
    Command,
    Compound,
    Control,
    Struct,
    decode_command,
    decode_control,
    decode_header,
    decode_struct32,
    encode_command,
    encode_control,
    encode_header,
    encode_struct32,
    split_header,
)
from .spec import *  # noqa: F403

__all__ = [
    "COMMANDS",
    "CONTROLS",
    "STRUCTS",
    "Command",
    "Compound",
    "Control",
    "Struct",
    "decode_command",
    "decode_control",
    "decode_header",
    "decode_struct32",
    "encode_command",
    "encode_control",
    "encode_header",
    "encode_struct32",
    "split_header",
    *spec.__all__,
    *commands.__all__,
]
