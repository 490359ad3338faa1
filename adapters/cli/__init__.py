"""The ``amqp-sansio`` command (:mod:`.command`: its arguments and :func:`main`): ``send`` and
``receive`` (:mod:`.send`, :mod:`.receive`, sharing :mod:`.transfer` and :mod:`.values`,
connecting through :mod:`.connect`), ``broker``, the Spark
``pipeline`` (:mod:`.pipeline`) and the benchmarks (:mod:`.bench`). Run it as
``amqp-sansio ...`` or ``python -m amqp_sansio.adapters.cli ...``.
"""

from __future__ import annotations

from .command import main

__all__ = ["main"]
