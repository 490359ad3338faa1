"""Benchmarks that put our figure next to Qpid Proton's, measured in the same run (``amqp-sansio
bench codec|pipe|loopback``): the result's shape, rounds and table every benchmark shares
(:mod:`.results`), the codec (:mod:`.amqp10.codec`; :mod:`.amqp091.codec` for AMQP 0-9-1,
against pamqp; :mod:`.amqp010.codec` for AMQP 0-10, against qpid-python), two engines wired in
memory (:mod:`.pipe`), and a sender and a receiver over 127.0.0.1 through each adapter
(:mod:`.amqp10.loopback`; AMQP 0-9-1 through RabbitMQ against aio-pika and pika,
:mod:`.amqp091.loopback`; AMQP 0-10 through our broker against qpid.messaging,
:mod:`.amqp010.loopback`; the rounds of those that run through a broker, whatever the
protocol, :mod:`.rounds`). ``bench broker`` is the broker's
(:func:`amqp_sansio.adapters.broker.benchmark`), ``bench spark`` :mod:`.spark`'s, with
:mod:`.processes` (CPU time by role in a Spark application). ``bench all`` runs every one
of them in turn (:mod:`.every`).
"""

from __future__ import annotations

from .amqp010.codec import codec010_benchmark, qpid_folder, qpid_python
from .amqp010.loopback import (
    ACCEPT_BATCH,
    LOOPBACK010_ADAPTERS,
    LOOPBACK010_DEFAULT,
    LOOPBACK010_PEER,
    LOOPBACK010_STALL,
    WINDOW,
    loopback010_benchmark,
    qpid_messaging_loopback,
)
from .amqp091.codec import codec091_benchmark
from .amqp091.loopback import (
    CONFIRM_BATCH,
    LOOPBACK091_ADAPTERS,
    LOOPBACK091_PEERS,
    LOOPBACK091_STALL,
    PREFETCH,
    RABBITMQ_ENV,
    RABBITMQ_URL,
    aio_pika_loopback,
    loopback091_benchmark,
    peer_installed,
    pika_loopback,
    rabbitmq_answers,
)
from .amqp10.codec import codec_benchmark, rbfly_message, typical_message
from .amqp10.loopback import (
    LOOPBACK_ADAPTERS,
    LOOPBACK_RUNNERS,
    LOOPBACK_STALL,
    WEBSOCKET_RUNNERS,
    WEBSOCKET_URL,
    loopback_benchmark,
    ours_loopback,
    ours_loopback_asyncio,
    ours_loopback_trio,
    proton_loopback,
    websocket_address,
)
from .pipe import (
    CREDIT_WINDOW,
    LARGE_FRAME_SIZE,
    PIPE_BODY_SIZE,
    PIPE_CHUNK,
    large_benchmark,
    large_body,
    large_copies,
    memory_benchmark,
    ours_large,
    ours_pipe,
    parse_size,
    pipe_benchmark,
    proton_encoded,
    proton_engine_large,
    proton_engine_transfer,
    proton_installed,
    proton_large,
    proton_pipe,
)
from .results import Result, format_table
from .rounds import Side, alternate, broker_for_bench, format_pairs

__all__ = [
    # codec
    "Result",
    "typical_message",
    "rbfly_message",
    "codec_benchmark",
    "format_table",
    "codec091_benchmark",
    "codec010_benchmark",
    "qpid_python",
    "qpid_folder",
    # the engine pipe
    "PIPE_BODY_SIZE",
    "CREDIT_WINDOW",
    "LARGE_FRAME_SIZE",
    "PIPE_CHUNK",
    "parse_size",
    "ours_pipe",
    "proton_pipe",
    "large_body",
    "ours_large",
    "proton_large",
    "proton_encoded",
    "proton_engine_transfer",
    "proton_engine_large",
    "proton_installed",
    "pipe_benchmark",
    "large_benchmark",
    "large_copies",
    "memory_benchmark",
    # over loopback
    "LOOPBACK_ADAPTERS",
    "LOOPBACK_RUNNERS",
    "LOOPBACK_STALL",
    "ours_loopback",
    "proton_loopback",
    "ours_loopback_asyncio",
    "ours_loopback_trio",
    "loopback_benchmark",
    "WEBSOCKET_RUNNERS",
    "WEBSOCKET_URL",
    "websocket_address",
    # rounds through a broker, whatever the protocol
    "Side",
    "alternate",
    "broker_for_bench",
    "format_pairs",
    # AMQP 0-9-1 through RabbitMQ
    "CONFIRM_BATCH",
    "LOOPBACK091_ADAPTERS",
    "LOOPBACK091_PEERS",
    "LOOPBACK091_STALL",
    "PREFETCH",
    "RABBITMQ_ENV",
    "RABBITMQ_URL",
    "aio_pika_loopback",
    "loopback091_benchmark",
    "peer_installed",
    "pika_loopback",
    "rabbitmq_answers",
    # AMQP 0-10 through our broker
    "ACCEPT_BATCH",
    "LOOPBACK010_ADAPTERS",
    "LOOPBACK010_DEFAULT",
    "LOOPBACK010_PEER",
    "LOOPBACK010_STALL",
    "WINDOW",
    "loopback010_benchmark",
    "qpid_messaging_loopback",
]
