"""Security layers (core spec part 5): the SASL layer and its mechanisms, and the TLS layer.

The public names are exported by :mod:`amqp_sansio` and :mod:`amqp_sansio.sasl`; the modules
here are the layout.
"""
