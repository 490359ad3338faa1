"""The AMQP 1.0 benchmarks."""
