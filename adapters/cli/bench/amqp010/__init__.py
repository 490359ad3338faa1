"""The AMQP 0-10 benchmarks: the codec against qpid-python's ``codec010``
(:mod:`.codec`)."""
