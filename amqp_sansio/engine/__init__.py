"""The engine layer: each protocol's engine, in ``amqp10/`` and ``amqp091/``; what every engine
shares sits beside them."""
