"""The broker's AMQP 0-9-1 side: a client connection (:mod:`.connection`), virtual hosts
(:mod:`.vhosts`), exchanges and bindings (:mod:`.exchanges`), queue declarations and their
arguments (:mod:`.declarations`), RabbitMQ's streams as 0-9-1 sees them (:mod:`.streams`)
and the mapping of its messages to and from AMQP 1.0 (:mod:`.mapping`, through the shared
``definitions`` and ``codec`` layers). It reaches the broker only through
:mod:`amqp_sansio.broker._interface` and imports no other protocol's folder."""
