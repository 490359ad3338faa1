"""The AMQP 0-9-1 calls of the blocking and async adapters, on the machinery they share with 1.0
(``_blocking``, ``_async``)."""
