"""Security layers (core spec part 5): the SASL layer and its mechanisms, the TLS layer, and
the AMQP WebSocket binding's layer, the HTTP proxy tunnel's layer;
the byte-layer interface every layer offers (:mod:`.layers`) and the one place that stacks
them around an engine (:mod:`.stack`).

The public modules are :mod:`amqp_sansio.sasl` (the mechanisms, as one module) and
:mod:`amqp_sansio.security.tls` (the TLS layer) and :mod:`amqp_sansio.security.websocket`
(the WebSocket layer) and :mod:`amqp_sansio.security.proxy` (the HTTP CONNECT tunnel);
the other modules here are the layout.
"""

from . import proxy as proxy
from . import tls as tls
from . import websocket as websocket
