"""The definitions layer: each protocol's performatives or methods, declared as data, in
``amqp10/`` and ``amqp091/``."""
