"""``amqp-sansio send`` and ``receive`` with ``--protocol 0-10``."""
