"""Fuzzing for amqp-sansio: targets, seed corpus and runners (see fuzz/README.md)."""
