"""The AMQP 1.0 definitions the engine speaks, declared as composite types: the performatives
(core spec 2.7), the messaging sections, outcomes and termini (part 3), the transaction types
(part 4), and :class:`~amqp_sansio.Message`, the bare message and its annotations.

The public names are exported by :mod:`amqp_sansio`; the modules here are the layout.
"""
