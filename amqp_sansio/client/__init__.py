"""The client core layer: what both protocols' client cores share (pending operations, recipes,
engines, lifecycle, reconnection, URLs, tracing), beside each protocol's core in ``amqp10/`` and
``amqp091/``."""
