"""The reference broker's I/O: :mod:`amqp_sansio.broker` served over TCP with asyncio
(:mod:`.server`: :func:`serve_broker`, :func:`run_broker`, :func:`open_broker`,
:class:`BrokerServer`, the ``amqp-sansio broker`` command's :func:`main`), the workload of
``bench broker`` (:mod:`.bench`: :func:`benchmark`), and its durable message store in
SQLite (:mod:`.store`: :class:`SQLiteStore`).
"""

from __future__ import annotations

from .bench import RABBITMQ_ENV, RABBITMQ_URL, benchmark, rabbitmq_benchmark
from .server import (
    FORCED,
    HIGH_WATER,
    LOG_BURST,
    LOG_INTERVAL,
    LOG_LEVEL,
    LOG_LEVELS,
    LOG_PREFIX,
    OPEN_WARNING,
    READ_SIZE,
    STOP_GRACE,
    TLS_PORT,
    BrokerServer,
    OpenBrokerRefused,
    log_to_stderr,
    main,
    open_broker,
    run_broker,
    serve_broker,
)
from .store import FILENAME, SQLiteStore, StoreError

__all__ = [
    "BrokerServer",
    "OpenBrokerRefused",
    "OPEN_WARNING",
    "LOG_PREFIX",
    "LOG_LEVELS",
    "LOG_LEVEL",
    "LOG_BURST",
    "LOG_INTERVAL",
    "TLS_PORT",
    "log_to_stderr",
    "open_broker",
    "run_broker",
    "serve_broker",
    "main",
    "benchmark",
    "rabbitmq_benchmark",
    "READ_SIZE",
    "HIGH_WATER",
    "STOP_GRACE",
    "FORCED",
    "RABBITMQ_ENV",
    "RABBITMQ_URL",
    "SQLiteStore",
    "StoreError",
    "FILENAME",
]
