"""The codec layer: each protocol's type system and encodings, in ``amqp10/`` (AMQP 1.0, core
spec part 1) and ``amqp091/`` (AMQP 0-9-1, spec 4.2). What the protocols share sits beside
them."""
