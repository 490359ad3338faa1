"""What the adapters' AMQP 0-9-1 objects share, whatever their way of waiting (as
:class:`~amqp_sansio.client.amqp10.SenderBase` is for AMQP 1.0): a channel's state and the running
of its calls' recipes, a consumer's state, a confirm tracker's. Each adapter's classes add
only the calls, blocking or awaited (``adapters/amqp091/_blocking.py``,
``adapters/amqp091/_async.py``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from amqp_sansio.client.ops import Op
from amqp_sansio.client.recipes import Recipe
from amqp_sansio.definitions.amqp091.methods import Method

from . import recipes
from .channels import ChannelCore, ConsumerCore
from .core import Core
from .ops import Confirmation, Returned

__all__ = ["ChannelBase", "ConfirmTrackerBase", "ConnectionState", "ConsumerBase", "Runner"]


class Runner(Protocol):
    """An adapter's connection: it carries out a recipe, each wait bounded by ``timeout``
    (None: the connection's), and returns its result (blocking) or a coroutine of it."""

    def _run(self, recipe: Recipe[Any], timeout: float | None) -> Any: ...


class ConnectionState:
    """What the adapters' 0-9-1 connections show of their core."""

    core: Core

    @property
    def blocked(self) -> str | None:
        """The reason the server gave in ``connection.blocked`` while it blocks publishers
        (a resource alarm), else None. Publishes wait while it does."""
        return self.core.blocked


class ChannelBase:
    """A channel of an adapter's connection (``connection.channel()``): its core, and the
    running of a call's recipe with the call's ``timeout`` (from its keyword options)."""

    def __init__(self, connection: Runner, core: ChannelCore) -> None:
        self.connection = connection
        self.core = core

    def __repr__(self) -> str:
        return f"<Channel {self.core.number}>"

    def _run(self, recipe: Recipe[Any], options: Mapping[str, Any]) -> Any:
        return self.connection._run(recipe, options.get("timeout"))

    def _method(self, kind: type[Method], options: Mapping[str, Any], **given: object) -> Any:
        """The synchronous method ``kind`` made of ``given`` and the call's options."""
        return self._run(recipes.method(self.core, kind, options, **given), options)

    @property
    def number(self) -> int | None:
        """The channel's number on the current connection."""
        return self.core.number

    @property
    def on_return(self) -> Callable[[Returned], None] | None:
        """Called with each message the server gives back (``mandatory``, unroutable), in
        the connection's I/O (it must not block)."""
        return self.core.on_return

    @on_return.setter
    def on_return(self, callback: Callable[[Returned], None] | None) -> None:
        self.core.on_return = callback


class ConsumerBase:
    """A consumer (``channel.basic_consume(queue)``): ``tag`` is its consumer tag,
    ``cancelled_by_server`` whether the server cancelled it (its queue went)."""

    def __init__(self, channel: ChannelBase, core: ConsumerCore) -> None:
        self.channel = channel
        self.core = core

    @property
    def tag(self) -> str:
        return self.core.tag

    @property
    def cancelled_by_server(self) -> bool:
        return self.core.cancelled_by_server


class ConfirmTrackerBase:
    """A message published with ``wait=False`` in confirm mode: :meth:`done` says whether
    its confirm has come; each adapter's ``confirmation()`` waits for it."""

    __slots__ = ("_op", "channel")

    def __init__(self, channel: ChannelBase, op: Op[Confirmation]) -> None:
        self.channel = channel
        self._op = op

    def done(self) -> bool:
        return self._op.done()
