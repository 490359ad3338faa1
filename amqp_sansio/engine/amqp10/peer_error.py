"""The error raised inside the engine while it handles a frame with which the peer broke the
protocol: the handler up the stack answers with the close, end or detach it names."""

from __future__ import annotations

from typing import Any

from ...codec.amqp10.types import Symbol
from ...definitions.amqp10.performatives import Error


class _PeerError(Exception):
    """Raised inside frame handling when the peer broke the protocol."""

    def __init__(
        self, condition: str, description: str, scope: str = "connection", target: Any = None
    ) -> None:
        super().__init__(description)
        self.error = Error(condition=Symbol(condition), description=description)
        self.scope = scope
        self.target = target
