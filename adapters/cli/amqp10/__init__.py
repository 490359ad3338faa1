"""AMQP 1.0's ``send`` and ``receive`` commands."""
