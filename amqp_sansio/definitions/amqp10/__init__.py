"""The AMQP 1.0 definitions the engine speaks, declared as composite types, one public module
each: :mod:`~amqp_sansio.definitions.amqp10.performatives` (the frame bodies of core spec 2.7 and
5.3.3), :mod:`~amqp_sansio.definitions.amqp10.messaging` (the message sections, outcomes and termini
of part 3), :mod:`~amqp_sansio.definitions.amqp10.transactions` (the transaction types of part 4)
and :mod:`~amqp_sansio.definitions.amqp10.message` (:class:`~amqp_sansio.Message`, the bare message
and its annotations). Below them, ``outcomes`` declares the error type and the delivery states and
outcomes they all carry (messaging and performatives export them). The most used names are
also exported by :mod:`amqp_sansio`.
"""

from . import message as message
from . import messaging as messaging
from . import performatives as performatives
from . import transactions as transactions
