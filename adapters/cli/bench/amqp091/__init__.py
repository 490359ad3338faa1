"""The AMQP 0-9-1 benchmarks."""
