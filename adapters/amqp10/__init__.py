"""The AMQP 1.0 classes of the async adapters, on the machinery they share with 0-9-1
(``_async``); the blocking adapter's are in :mod:`amqp_sansio.adapters.sockets`."""
