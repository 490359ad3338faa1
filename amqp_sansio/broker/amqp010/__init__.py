"""The broker's AMQP 0-10 side (0-10 spec, Qpid's rules): the 0-10 engine's server role
driven by the broker (:mod:`.connection`), the commands on the exchanges and queues of the
virtual hosts it shares with 0-9-1 (:mod:`.commands`), the sessions' subscriptions and
deliveries (:mod:`.sessions`), and the mapping of its messages to their 1.0 form
(:mod:`.mapping`). It imports no other protocol folder."""
