"""SASL (core spec 5.3) as one public module: the mechanisms, client and server, the
credential-store protocols, and the errors.

A :class:`~amqp_sansio.Connection` runs the exchange itself when given ``sasl=``: a
:class:`ClientCredentials` in the client role, a :class:`ServerAuthenticator` in the server
role. The mechanism objects here are what it drives; they can also be used on their own.
See the SASL page of the docs.
"""

from .security.mechanisms import *  # noqa: F403  (the mechanisms' public names, as they are)
from .security.mechanisms import __all__ as __all__
