"""Security layers (core spec part 5): the SASL layer and its mechanisms, and the TLS layer;
the byte-layer interface every layer offers (:mod:`.layers`) and the one place that stacks
them around an engine (:mod:`.stack`).

The public modules are :mod:`amqp_sansio.sasl` (the mechanisms, as one module) and
:mod:`amqp_sansio.security.tls` (the TLS layer); the other modules here are the layout.
"""

from . import tls as tls
