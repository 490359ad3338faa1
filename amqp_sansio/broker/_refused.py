"""The refusal a virtual host raises for a declaration, a binding or a publish it will not
make: :class:`Refused`, with a reply code of the codes AMQP 0-9-1's ``reply-code`` and AMQP
0-10's ``execution.error-code`` share (403, 404, 405, 406, 530, 540: the same numbers, the
same meanings) or 0-9-1's own (503 COMMAND_INVALID). Each protocol folder says what the
code does on its wire (0-9-1: a channel or connection close; 0-10: an
``execution.exception``, whose codes :mod:`.amqp010.commands` maps)."""

from __future__ import annotations

__all__ = ["Refused"]


class Refused(Exception):
    """A command the virtual host refuses: ``reply_code`` and ``reply_text`` (at most 255
    characters, a 0-9-1 shortstr)."""

    def __init__(self, reply_code: int, reply_text: str) -> None:
        super().__init__(f"{reply_code} {reply_text}")
        self.reply_code = reply_code
        self.reply_text = reply_text[:255]
