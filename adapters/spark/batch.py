"""``format("amqp")`` in batch: the reader (receivers in the executors' tasks) and the
writers, batch and streaming (a sender per task)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
from pyspark.sql.datasource import (
    DataSourceReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    StructType,
)

import amqp_sansio as amqp

from . import calls
from .options import OptionError, ReadOptions, WriteOptions
from .queue_reader import FIRST_BATCH_WAIT, share
from .rows import COLUMNS, message_id_for, message_to_row, row_to_message
from .staging import even_pieces, refuse_undecodable

_log = logging.getLogger("amqp_sansio.spark")


# -- reading: batch --------------------------------------------------------------------------


class _RowsPartition(InputPartition):
    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        super().__init__(len(rows))
        self.rows = rows


class ReceiverPartition(InputPartition):
    """A task of a consuming batch read with several partitions: it opens a receiver of
    its own and takes up to ``limit`` messages (None: until the addresses are empty)."""

    def __init__(self, index: int, limit: int | None) -> None:
        super().__init__((index, limit))
        self.index, self.limit = index, limit


def _shares(total: int | None, parts: int) -> list[int | None]:
    """``total`` messages (None: no limit) shared among up to ``parts`` receivers."""
    count = parts if total is None else min(parts, total)
    return [share(total, parts, i) for i in range(count)]


def read_queue(options: ReadOptions, limit: int | None, consume: bool) -> Iterator[tuple[Any, ...]]:
    """The rows of what the addresses hold now, up to ``limit``: each address's messages
    are taken until it has had nothing more for ``pollInterval`` (not a drain: RabbitMQ 3.10
    fails a drain on a classic queue, docs/interop.rst), then yielded, then accepted
    (``consume``) or released, on the same link (core 3.4). Undecodable ones are settled
    as option ``undecodable`` says."""
    remaining = limit
    for address in options.addresses:
        if remaining is not None and remaining <= 0:
            return
        credit = options.credit if remaining is None else min(options.credit, remaining)
        with calls.of(options).receiver(options, address, max(1, credit)) as receiver:
            taken = []
            # The first message may take a while on a loaded broker (a new link, a grant
            # of credit): an empty look must not come of that.
            wait = max(options.poll_interval, FIRST_BATCH_WAIT)
            while remaining is None or remaining > 0:
                try:
                    delivery = receiver.receive(timeout=wait)
                except TimeoutError:
                    break
                if delivery is None:
                    break
                taken.append(delivery)
                wait = options.poll_interval
                if remaining is not None:
                    remaining -= 1
            good = []
            for delivery in taken:
                try:
                    row = message_to_row(delivery.message, address)
                except (amqp.DecodeError, ValueError):
                    refuse_undecodable(delivery, options.undecodable)
                    continue
                good.append(delivery)
                yield row
            for delivery in good:
                if consume:
                    delivery.accept()
                else:
                    delivery.release()


class BatchReader(DataSourceReader):
    """``spark.read.format("amqp")``: what the addresses hold now (up to ``maxMessages``).

    By default the messages are read when Spark plans the query, on the driver, and
    released again (a look at the queue that takes nothing), the rows cut into
    ``partitions`` pieces. With ``consume``, each of ``partitions`` tasks opens a receiver
    of its own (competing consumers on the queues), takes its share of ``maxMessages``
    and accepts what it took once its last row is handed to Spark (then a failed job
    loses them: use a streaming read to consume safely). A look cannot be shared out so:
    what one receiver released another would take again."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.options
        if opts.consume and opts.partitions > 1:
            shares = _shares(opts.max_messages, opts.partitions)
            return [ReceiverPartition(i, share) for i, share in enumerate(shares)]
        rows = list(read_queue(opts, opts.max_messages, opts.consume))
        pieces = even_pieces(len(rows), opts.partitions) or [(0, 0)]  # nothing there: no rows
        return [_RowsPartition(rows[lo:hi]) for lo, hi in pieces]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        if isinstance(partition, ReceiverPartition):
            return read_queue(self.options, partition.limit, consume=True)
        assert isinstance(partition, _RowsPartition)
        return iter(partition.rows)


# -- writing ---------------------------------------------------------------------------------


class AMQPCommitMessage(WriterCommitMessage):
    def __init__(self, partition: int, sent: int) -> None:
        self.partition = partition
        self.sent = sent


def _task() -> tuple[int, str, str]:
    """(partition, query id, batch id) of the running task (Spark sets the streaming ones as
    local properties of each micro-batch's jobs)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        return 0, "local", "0"
    query = context.getLocalProperty("sql.streaming.queryId") or f"job-{context.stageId()}"
    batch = context.getLocalProperty("streaming.sql.batchId") or "0"
    return context.partitionId(), query, batch


def _send_rows(options: WriteOptions, rows: Iterator[Any]) -> AMQPCommitMessage:
    """Send each row unsettled; return once every one is accepted (a rejection, or any
    outcome but accepted, fails the task with the broker's error), as the protocol's
    :meth:`~.calls.Calls.publish_rows` says (0-9-1: confirmed; 0-10: completed)."""
    partition, query, batch = _task()
    messages = _messages(options, rows, query, batch, partition)
    sent = calls.of(options).publish_rows(options, messages, options.timeout)
    return AMQPCommitMessage(partition, sent)


def _messages(
    options: WriteOptions, rows: Iterator[Any], query: str, batch: str, partition: int
) -> Iterator[amqp.Message]:
    """The message of each row, as :func:`_send_rows` sends them."""
    for index, row in enumerate(rows):
        values = row.asDict() if hasattr(row, "asDict") else dict(row)
        message = row_to_message(values, message_id=message_id_for(query, batch, partition, index))
        if options.durable and message.header is None:
            message = attrs.evolve(message, header=amqp.Header(durable=True))
        yield message


class BatchWriter(DataSourceWriter):
    """``df.write.format("amqp")``: each task sends its rows unsettled and succeeds only
    once every one was accepted. Message-ids (where a row has none) come from the job,
    the partition and the row, so that a retried task sends the same ids again."""

    def __init__(self, options: WriteOptions, schema: StructType) -> None:
        self.options = options
        if "body" not in schema.fieldNames():
            raise OptionError("format('amqp') writes a DataFrame with a 'body' column")
        unknown = sorted(set(schema.fieldNames()) - set(COLUMNS))
        if unknown:
            raise OptionError(
                f"format('amqp') cannot write the column(s) {', '.join(unknown)} "
                f"(it takes {', '.join(COLUMNS)})"
            )

    def write(self, iterator: Iterator[Any]) -> AMQPCommitMessage:
        return _send_rows(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        sent = sum(m.sent for m in messages if isinstance(m, AMQPCommitMessage))
        _log.info("wrote %d messages to %s", sent, self.options.address)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        # What was accepted stays at the broker (at-least-once: a retry sends it again, with
        # the same message-ids).
        _log.warning("a write to %s was aborted", self.options.address)


class StreamWriter(DataSourceStreamWriter):
    """``df.writeStream.format("amqp")``: as :class:`BatchWriter`, per micro-batch, with
    message-ids from the query id, the batch id, the partition and the row."""

    def __init__(self, options: WriteOptions, schema: StructType) -> None:
        self._batch = BatchWriter(options, schema)
        self.options = options

    def write(self, iterator: Iterator[Any]) -> AMQPCommitMessage:
        return _send_rows(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._batch.commit(messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._batch.abort(messages)
