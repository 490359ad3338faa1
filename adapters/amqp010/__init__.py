"""The AMQP 0-10 calls of the blocking and async adapters (``connect(url,
protocol="0-10")``), on the machinery they share with the other protocols (``_blocking``,
``_async``)."""
