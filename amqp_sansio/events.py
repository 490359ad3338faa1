"""What the engine reports to the application: one frozen class per happening.

The events are named for what the application sees, not for the frame that caused it.
Events that concern a session, link or delivery carry the engine's handle object for it
(:class:`~amqp_sansio.Session`, :class:`~amqp_sansio.Link`, :class:`~amqp_sansio.Delivery`),
through which the application answers.

(This module is the face of :mod:`amqp_sansio.engine.amqp10.events`, where they are defined.)
"""

from .engine.amqp10.events import *  # noqa: F403
from .engine.amqp10.events import __all__ as __all__
