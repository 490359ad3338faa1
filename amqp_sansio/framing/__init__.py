"""The framing layer: each protocol's protocol header, frames and frame parser, in ``amqp10/``
(core spec 2.2, 2.3), ``amqp091/`` (spec 4.2.3) and ``amqp010/`` (0-10 spec 4.4)."""
