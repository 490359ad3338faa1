"""The protocol engine (core spec part 2): the connection, its sessions and links, their
deliveries, the state tables that drive them, and transactions (part 4) on both sides.

The public names are exported by :mod:`amqp_sansio`; the modules here are the layout.
"""
