"""Run by tests/spark/test_spark_connect.py in a process of its own: ``format("amqp")`` through a
Spark Connect session (``SparkSession.builder.remote("local[2]")``, which starts a local
Spark Connect server), against the broker at ``sys.argv[1]``. Prints one JSON object with what
it read; the test checks the broker's side."""

from __future__ import annotations

import json
import sys
import tempfile
import warnings


def main(url: str) -> None:
    warnings.simplefilter("ignore")  # pyspark's own warnings (pandas versions, configs)
    from amqp_sansio.adapters import spark as amqp_spark
    from pyspark.sql import SparkSession

    amqp_spark.ensure_java()
    spark = SparkSession.builder.remote("local[2]").getOrCreate()
    try:
        assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
        amqp_spark.register(spark)
        # Batch write, then a consuming batch read of what the test published.
        df = spark.createDataFrame(
            [(f"row {i}".encode(), {"i": str(i)}) for i in range(200)],
            "body binary, application_properties map<string,string>",
        )
        df.write.format("amqp").mode("append").option("url", url).option(
            "address", "connect-out"
        ).save()
        read = (
            spark.read.format("amqp")
            .option("url", url)
            .option("address", "connect-in")
            .option("consume", "true")
            .option("partitions", "2")
            .load()
        )
        bodies = sorted(bytes(r.body).decode() for r in read.select("body").collect())
        # A streaming read (queue mode) into the AMQP sink, until what is there is read.
        stream = (
            spark.readStream.format("amqp")
            .option("url", url)
            .option("address", "connect-stream")
            .option("stagingLocation", tempfile.mkdtemp())
            .option("maxMessagesPerTrigger", "100")
            .load()
        )
        writer = (
            stream.select("body")
            .writeStream.format("amqp")
            .option("url", url)
            .option("address", "connect-sink")
            .option("checkpointLocation", tempfile.mkdtemp())
        )
        query = amqp_spark.run_available_now(writer, timeout=180)
        batches = [int(p.numInputRows) for p in query.recentProgress]
        print(json.dumps({"session": type(spark).__module__, "read": bodies, "batches": batches}))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
