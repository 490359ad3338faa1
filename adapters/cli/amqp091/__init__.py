"""The AMQP 0-9-1 side of ``amqp-sansio send`` and ``receive``."""
