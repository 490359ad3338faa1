"""I/O adapters for amqp-sansio, installed as :mod:`amqp_sansio.adapters`.

Everything that touches the outside world (sockets, event loops, clocks, the command line)
lives here; the core package :mod:`amqp_sansio` never does I/O.
"""
