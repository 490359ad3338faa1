"""Helpers for the AMQP 0-10 tests: two engines wired in memory (``engine``)."""
