"""The engine layer: each protocol's engine, in ``amqp10/``, ``amqp091/`` and ``amqp010/``;
what the engines share sits beside them (``contract``, ``liveness``, ``serial``)."""
