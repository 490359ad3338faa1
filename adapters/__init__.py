"""I/O adapters for amqp-sansio, installed as :mod:`amqp_sansio.adapters`.

Everything that touches the outside world (sockets, event loops, clocks, files, the command
line) lives here; the core package :mod:`amqp_sansio` never does I/O. The I/O adapters of
the high-level API (on the I/O-free :mod:`amqp_sansio.client.amqp10`) are :mod:`.sockets`,
:mod:`.aio` and :mod:`.trio_adapter` (the two async ones share :mod:`._async`); then the
reference broker's server and store (:mod:`.broker`), the PySpark data source
(:mod:`.spark`) and the ``amqp-sansio`` command (:mod:`.cli`).
"""
