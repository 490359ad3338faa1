"""The AMQP 0-10 framing error (0-10 spec 4.4 Framing; the ``connection.close-code``
``framing-error``, 501).

:class:`FramingError` subclasses the shared :class:`amqp_sansio.errors.FramingError`, so code
that handles that handles this too, and adds ``reply_code``: the close-code the engine puts
in the ``connection.close`` it sends because of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from ... import errors

if TYPE_CHECKING:
    from .assembly import Assembly

__all__ = ["FramingError"]


class FramingError(errors.FramingError):
    """The peer's frames break the 0-10 frame format (close-code 501, ``framing-error``):
    a version or reserved bit set, a size below the header's or above max-frame-size, an
    unknown segment type or track, first/last flags out of order, a segment type where the
    assembly allows none, an assembly over max-assembly-size.

    ``assemblies`` holds the assemblies that were complete, in the same call to
    :meth:`~amqp_sansio.framing.amqp010.AssemblyParser.feed`, before the bad frame.
    """

    reply_code: ClassVar[int] = 501

    def __init__(self, description: str, *, offset: int | None = None) -> None:
        super().__init__(description, offset=offset)
        self.assemblies: tuple[Assembly, ...] = ()
